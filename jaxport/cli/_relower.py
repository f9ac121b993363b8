"""Today's lowering of a harness case, for comparing custom-call signatures with a golden entry.

The case registry lives in a repository's ``harness/`` package, not in the
installed jaxport. Importing it runs that repository's code, so it is imported
only from a repository the user names (``jaxport audit --harness REPO``), never
found by looking around the working directory: an extracted bundle or a
shared temporary folder must not run code. Without it, drift is reported as
not checked.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxport
from jaxport.errors import GoldenDataError
from jaxport.golden import _signatures
from jaxport.golden._manifest import CustomCallSignature

logger = logging.getLogger(__name__)

NOT_REQUESTED = "no harness named"


def find_repo_root(start: Path | None = None) -> Path | None:
  """The nearest directory at or above ``start`` holding ``harness/conftest.py``."""
  start = (start or Path.cwd()).resolve()
  for d in (start, *start.parents):
    if (d / "harness" / "conftest.py").is_file():
      return d
  return None


def harness_root(path: str | Path) -> Path:
  """The repository root ``path`` named with ``--harness``, checked to hold ``harness/conftest.py``."""
  root = Path(path)
  if not (root / "harness" / "conftest.py").is_file():
    raise GoldenDataError(
        f"--harness {path}: no harness/conftest.py there; pass the root of a jaxport "
        "checkout (the directory holding harness/ and compat_data/).")
  return root.resolve()


def load_registry(repo_root: Path) -> Any:
  """The ``harness.cases`` module of the repository at ``repo_root``."""
  root = str(repo_root)
  if root not in sys.path:
    sys.path.insert(0, root)
  return importlib.import_module("harness.cases")


class Relowerer:
  """Looks up harness cases by id and lowers them with the installed jax and jaxport."""

  def __init__(self, repo_root: Path | None):
    self.repo_root = repo_root
    self._cases = None
    self.unavailable: str | None = None
    if repo_root is None:
      self.unavailable = (f"{NOT_REQUESTED}: pass --harness REPO to re-lower the cases of "
                          "REPO's harness/ (this runs that repository's code)")

  def load(self) -> None:
    """Import the case registry now: it also registers the harness's effect types, which
    golden entries with effects need before they can be deserialized."""
    self._registry()

  def _registry(self):
    if self._cases is None and self.unavailable is None:
      try:
        self._cases = load_registry(self.repo_root)
      except Exception as e:  # A broken registry must not stop the rest of the audit.
        self.unavailable = f"the harness case registry failed to import: {type(e).__name__}: {e}"
    return self._cases

  def case(self, case_id: str) -> Any | None:
    reg = self._registry()
    return None if reg is None else reg.case(case_id)

  def _engine(self) -> Any | None:
    """The harness's recording engine, whose ``export_case`` is how entries were lowered."""
    if self._registry() is None:
      return None
    try:
      return importlib.import_module("harness._engine")
    except ImportError:
      return None

  def signatures(self, case: Any) -> tuple[CustomCallSignature, ...]:
    """The custom-call signatures of the case lowered today.

    Uses the harness's own ``export_case`` under its jax settings (64-bit
    types, short locations) when it has one, so the lowering matches how the
    entry was recorded; jax's settings are restored afterwards.
    """
    engine = self._engine()
    if engine is not None and hasattr(engine, "export_case"):
      names = [name for name, _ in getattr(engine, "_JAX_CONFIG", ())]
      saved = {name: getattr(jax.config, name) for name in names}
      try:
        if hasattr(engine, "configure_jax"):
          engine.configure_jax()
        exp = engine.export_case(case)
      finally:
        for name, value in saved.items():
          jax.config.update(name, value)
    else:
      exp = _export_case(case)
    logger.debug("re-lowered case %s", case.case_id)
    return _signatures.signatures(exp.mlir_module_serialized)


def _export_case(case: Any) -> Any:
  """``case`` exported for its platforms with jaxport, as the harness records it."""
  def spec(x):
    return jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)

  args, kwargs = case.make_inputs()
  if case.polymorphic_shapes is not None:
    specs = jaxport.symbolic_args_specs(args, list(case.polymorphic_shapes),
                                        constraints=tuple(case.constraints or ()))
  else:
    specs = jax.tree_util.tree_map(spec, args)
  kwspecs = jax.tree_util.tree_map(spec, kwargs)
  return jaxport.export(jax.jit(case.fun), platforms=case.export_platforms())(*specs, **kwspecs)
