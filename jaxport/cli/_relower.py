"""Today's lowering of a project's cases, for comparing custom-call signatures with an entry.

Case modules are the project's code. Importing one runs it, so audit imports
only the modules the user names (``jaxport audit --cases MODULE``, importable
as installed or from ``PYTHONPATH``), never ones found by looking around the
working directory: an extracted bundle or a shared temporary folder must not
run code. Without them, drift is reported as not checked.
"""

from __future__ import annotations

import logging
from typing import Any

import jax

from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness import _engine
from jaxport.harness._registry import CaseRegistry

logger = logging.getLogger(__name__)

NOT_REQUESTED = "no case module named"


class Relowerer:
  """Looks cases up by id in the named modules and lowers them as the harness records them."""

  def __init__(self, modules: tuple[str, ...]):
    self.registry = CaseRegistry(modules) if modules else None
    self.unavailable: str | None = None
    if not modules:
      self.unavailable = (f"{NOT_REQUESTED}: pass --cases MODULE to re-lower the project's "
                          "cases (this runs the project's code)")

  def load(self) -> None:
    """Import the case modules now: they also register the project's pytree and effect types,
    which entries need before they can be deserialized."""
    self._registry()

  def _registry(self) -> CaseRegistry | None:
    if self.registry is not None and self.unavailable is None:
      try:
        self.registry.by_id  # noqa: B018  (imports every module)
      except Exception as e:  # A broken case module must not stop the rest of the audit.
        self.unavailable = f"the case modules failed to import: {type(e).__name__}: {e}"
    return None if self.unavailable else self.registry

  def case(self, case_id: str) -> Any | None:
    reg = self._registry()
    return None if reg is None else reg.case(case_id)

  def signatures(self, case: Any) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of the case lowered today, under the harness's settings
    (short locations, the case's own jax configuration); jax's settings are restored."""
    names = [name for name, _ in _engine._JAX_CONFIG]
    saved = {name: getattr(jax.config, name) for name in names}
    try:
      _engine.configure_jax()
      exp = _engine.export_case(case)
    finally:
      for name, value in saved.items():
        jax.config.update(name, value)
    logger.debug("re-lowered case %s", case.case_id)
    return _signatures.signatures(exp.mlir_module_serialized)
