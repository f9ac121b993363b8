"""Today's lowering of a project's cases, for comparing custom-call signatures with an entry.

Case modules are the project's code. Importing one runs it, so audit imports
only the modules the user names: with ``jaxport audit --cases MODULE``
(importable as installed or from ``PYTHONPATH``) or through the project the
user names with ``--project DIR`` (its ``jaxport_cases``, imported from the
project's root and pytest ``pythonpath``, as the harness's worker imports
them), never ones found by looking around the working directory: an extracted
bundle or a shared temporary folder must not run code. Without them, drift is
reported as not checked; named modules that fail to import are an error, not a
pass with nothing checked.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from jaxport.errors import GoldenDataError
from jaxport.cli._artifacts import deserialize
from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness._worker import _calling, _case_runs, _jax_setup
from jaxport.harness._registry import CaseRegistry

logger = logging.getLogger(__name__)

NOT_REQUESTED = "no case module named"
# Where the case modules came from, as the messages name it.
FROM_CASES = "the case modules named with --cases"
FROM_PROJECT = "the project's case modules (jaxport_cases)"


@contextlib.contextmanager
def _on_path(paths: Sequence[str]) -> Iterator[None]:
  """``paths`` first on ``sys.path`` for the block: the one place jaxport puts a directory
  there, the project's own, which the user named with ``--project``."""
  added = [p for p in dict.fromkeys(paths) if p not in sys.path]
  sys.path[:0] = added
  try:
    yield
  finally:
    for p in added:
      if p in sys.path:
        sys.path.remove(p)


class Relowerer:
  """Looks cases up by id in the named modules and lowers them as the harness records them.

  ``paths``: the project's directories, first on ``sys.path`` while its case modules are
  imported and lowered; ``source``: where the modules came from, for the messages.
  """

  def __init__(self, modules: tuple[str, ...], paths: Sequence[str] = (),
               source: str = FROM_CASES):
    self.registry = CaseRegistry(modules) if modules else None
    self.paths = tuple(paths)
    self.source = source
    self.unavailable: str | None = None
    self._loaded = False
    # Each case's export today, by case id: its signatures and its contract both come of it.
    self._exports: dict[str, Any] = {}
    if not modules:
      self.unavailable = (f"{NOT_REQUESTED}: pass --cases MODULE, or --project DIR for the "
                          "project's own, to re-lower the project's cases (this runs the "
                          "project's code)")

  def load(self) -> None:
    """Import the case modules now: they also register the project's pytree and effect types,
    which entries need before they can be deserialized. Modules that fail to import raise a
    ``GoldenDataError`` naming them and where they were looked for."""
    if self.registry is None or self._loaded:
      return
    try:
      with _on_path(self.paths):
        self.registry.by_id  # noqa: B018  (imports every module)
    except Exception as e:  # noqa: BLE001  (the project's code: any failure, one message)
      detail = str(e) if isinstance(e, GoldenDataError) else f"{type(e).__name__}: {e}"
      raise GoldenDataError(f"importing {self.source} {list(self.registry.modules)} failed: "
                            f"{detail}. {self._where()}") from None
    self._loaded = True

  def _where(self) -> str:
    if self.source == FROM_CASES and not self.paths:
      return ("--cases imports them from the installed packages and PYTHONPATH; pass "
              "--project DIR to import them from the project's root and pytest pythonpath, as "
              "the harness does, or set PYTHONPATH")
    return (f"Looked in the project's paths {list(self.paths)}, then on sys.path; check "
            "jaxport_cases and pytest's pythonpath in the project's configuration")

  def _registry(self) -> CaseRegistry | None:
    if self.unavailable is not None:
      return None
    self.load()
    return self.registry

  def case(self, case_id: str) -> Any | None:
    reg = self._registry()
    return None if reg is None else reg.case(case_id)

  def _export(self, case: Any) -> Any:
    """The case exported today under the harness's settings (short locations, the case's own
    jax configuration), once per case; jax's settings are restored."""
    if case.case_id not in self._exports:
      with _jax_setup.jax_config(_jax_setup.recording_config()), _on_path(self.paths):
        self._exports[case.case_id] = _case_runs.export_case(case)
      logger.debug("re-lowered case %s", case.case_id)
    return self._exports[case.case_id]

  def signatures(self, case: Any) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of the case lowered today."""
    return _signatures.signatures(self._export(case).mlir_module_serialized)

  def contract(self, case: Any) -> _calling.CallingContract:
    """The calling contract of the case exported today, serialized and read back as a
    consumer reads it (as the replay compares it)."""
    exp = self._export(case)
    return _calling.contract_of(deserialize(bytes(exp.serialize(vjp_order=case.vjp_order or 0))))

  def comparison(self, case: Any, outputs: Any) -> Any:
    """The case's comparison settings as a recording of it today would write them for the
    entry's ``outputs`` (``_calling.comparison_today``)."""
    with _on_path(self.paths):
      return _calling.comparison_today(case, outputs)

  @property
  def checkers(self) -> Any:
    """The project's checkers by name (none before its case modules are loaded)."""
    return self.registry.checkers if self.registry is not None else {}
