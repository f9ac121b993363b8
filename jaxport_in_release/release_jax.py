"""What the scripts run inside an older release's venv share: finding that release's export
module, and loading jaxport's replay contract, case type and checkers by their paths.

jaxport is not installed in those venvs (it needs a newer jax), so nothing here imports
it; the scripts load this file by its path as well.
"""

from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# jaxport's harness modules that need only numpy and the release's public jax API.
PACKAGE = os.path.join(os.path.dirname(HERE), "jaxport", "harness")
CONTRACT = os.path.join(PACKAGE, "_worker", "_contract.py")
CHECKERS = os.path.join(PACKAGE, "checkers.py")
CASE = os.path.join(PACKAGE, "_case.py")


def load_by_path(name: str, path: str):
  """The module in the file ``path``, registered as ``name``."""
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module


def contract():
  """jaxport's replay contract (``jaxport/harness/_worker/_contract.py``)."""
  return load_by_path("jaxport_replay_contract", CONTRACT)


def checkers():
  """jaxport's result checkers (``jaxport/harness/checkers.py``)."""
  return load_by_path("jaxport_golden_checkers", CHECKERS)


def case_type() -> type:
  """jaxport's ``Case``: the installed package's where jaxport imports (so that the harness's
  case registry takes these cases as its own), else ``jaxport/harness/_case.py`` by its path."""
  try:
    from jaxport.harness import Case# local: jaxport is optional in a release's environment
  except ImportError:  # an older release's venv: jaxport is not installed (or refuses that jax)
    return load_by_path("jaxport_case", CASE).Case
  return Case


def export_module():
  """The release's public export module: ``jax.export``, or ``jax.experimental.export``
  before 0.4.30."""
  try:
    from jax import export as jexport
    if hasattr(jexport, "export") and hasattr(jexport, "deserialize"):
      return jexport
  except ImportError:
    pass
  from jax.experimental import export as jexport
  return jexport
