"""What the scripts run inside an older release's venv share: finding that release's export
module, and loading jaxport's replay contract, case type and checkers by their paths.

jaxport is not installed in those venvs (it needs a newer jax), so nothing here imports
it; the scripts load this file by its path as well.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable

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


def first_line(e: BaseException) -> str:
  """An exception in one line: its type and its message's first line."""
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"[:500]


def replay_each(entries_file: str, out_path: str, replay: Callable[[str], dict]) -> None:
  """``replay`` each entry id the file lists, appending one JSON line per entry to ``out_path``:
  a ``started`` line first, flushed, so that the driver knows the entry a crash of the process
  stopped at, then its result; an exception is the entry's ``harness`` row."""
  with open(entries_file) as f:
    entry_ids = [line.strip() for line in f if line.strip()]
  with open(out_path, "a") as out:
    for entry_id in entry_ids:
      out.write(json.dumps({"entry_id": entry_id, "started": True}) + "\n")
      out.flush()
      try:
        result = replay(entry_id)
      except Exception as e:  # noqa: BLE001 - the replayer's own failure, kept as the row
        result = {"entry_id": entry_id, "stage": "harness",
                  "error": first_line(e) + "\n" + traceback.format_exc()[-1000:]}
      out.write(json.dumps(result, sort_keys=True) + "\n")
      out.flush()


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
