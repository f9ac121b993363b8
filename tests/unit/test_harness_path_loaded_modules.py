"""The case type and the checkers load by their paths without jaxport, as release venvs do.

The scripts that record and replay inside an older jax release's virtual environment
(``jaxport_in_release/release_jax.py``) load ``jaxport/harness/_case.py`` and
``jaxport/harness/checkers.py`` by path, where jaxport is not installed. Each must then
import only the standard library and numpy: an ast check of their imports, and a fresh
interpreter that loads them by path and uses them without importing jaxport.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "jaxport" / "harness"
CASE = HARNESS / "_case.py"
CHECKERS = HARNESS / "checkers.py"
JUDGES = HARNESS / "_builtin_judges.py"
# The release scripts run with their folder first on sys.path, as the recorder does.
RELEASE_SCRIPTS = ROOT / "jaxport_in_release"
RELEASE_CASES = ROOT / "harness" / "cases" / "release_cases.py"


def _top_level_imports(path: Path) -> set[str]:
  """The top-level package of every import in ``path`` (relative imports as '.')."""
  out = set()
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Import):
      out.update(alias.name.split(".")[0] for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      out.add("." if node.level else node.module.split(".")[0])
  return out


@pytest.mark.parametrize("path", [CASE, CHECKERS, JUDGES],
                         ids=["_case.py", "checkers.py", "_builtin_judges.py"])
def test_the_module_imports_only_numpy_and_the_standard_library(path):
  foreign = {name for name in _top_level_imports(path)
             if name not in sys.stdlib_module_names and name != "numpy"}
  assert not foreign, (f"{path.name} imports {sorted(foreign)}; older releases' venvs load it "
                       "by its path")


def _run(code: str) -> dict:
  """Run ``code`` in a fresh interpreter (no site customisation of this session's path) and
  return the JSON it prints last."""
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=300, cwd=str(RELEASE_SCRIPTS))
  assert proc.returncode == 0, proc.stderr
  return json.loads(proc.stdout.strip().splitlines()[-1])


_LOAD = """
import importlib.util, json, sys
def load(name, path):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  spec.loader.exec_module(module)
  return module
def loaded(prefix):
  return sorted(m for m in sys.modules if m == prefix or m.startswith(prefix + "."))
"""


def test_the_case_type_loads_by_path_without_jaxport_or_jax():
  out = _run(_LOAD + f"""
case = load("path_loaded_case", {str(CASE)!r})
c = case.Case("solve", "linalg", abs, lambda: ((case.random_matrix(3, (2, 2), "float32"),), {{}}),
              record_range=("0.4.26", "0.4.30"))
(a,), _ = c.make_inputs()
try:
  case.Case("bad", "f", abs, lambda: ((), {{}}), record_range=("0.4.30", "0.4.26"))
  refused = None
except ValueError as e:
  refused = str(e)
print(json.dumps({{"jaxport": loaded("jaxport"), "jax": loaded("jax"),
                  "recordable": [c.recordable_by(v) for v in ("0.4.25", "0.4.26", "0.4.30", "0.4.31")],
                  "why": c.why_not_recordable_by("0.5.0"), "shape": list(a.shape),
                  "refused": refused}}))
""")
  assert out["jaxport"] == [] and out["jax"] == []
  assert out["recordable"] == [False, True, True, False]
  assert out["why"] == "recorded only by jax <= 0.4.30"
  assert out["shape"] == [2, 2]
  assert "record_range=('0.4.30', '0.4.26') ends before it starts" in out["refused"]


def test_the_checkers_load_by_path_without_jaxport_or_jax():
  out = _run(_LOAD + f"""
import numpy as np
checkers = load("path_loaded_checkers", {str(CHECKERS)!r})
a = np.eye(3)
good = checkers.check("allclose", [a], [a], [a], rtol=1e-6, atol=1e-6)
bad = checkers.check("allclose", [a], [a], [a + 1], rtol=1e-6, atol=1e-6)
w, v = np.linalg.eigh(a + a.T)
eigh = checkers.check("eigh", [a + a.T], [w, v], [w, v], rtol=1e-6, atol=1e-6)
print(json.dumps({{"jaxport": loaded("jaxport"), "jax": loaded("jax"),
                  "good": [good.ok, good.exact], "bad": [bad.ok, bad.exact],
                  "eigh": [eigh.ok, list(eigh.problems)]}}))
""")
  assert out["jaxport"] == [] and out["jax"] == []
  assert out["good"] == [True, True] and out["bad"] == [False, False]
  assert out["eigh"] == [True, []]  # a structured checker, from the sibling loaded by path


def test_the_release_cases_build_where_jaxport_cannot_be_imported():
  """As in an older release's venv: the cases are the path-loaded Case, with the disabled
  checks of the release's own export module."""
  out = _run(_LOAD + f"RELEASE_CASES = {str(RELEASE_CASES)!r}\n" + """
import importlib.abc
class NoJaxport(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name == "jaxport" or name.startswith("jaxport."):
      raise ImportError("jaxport is not installed here")
    return None
sys.meta_path.insert(0, NoJaxport())
sys.path.insert(0, ".")
release_cases = load("release_cases", RELEASE_CASES)
cases = {c.case_id: c for c in release_cases.all_cases()}
c = cases["release_hessenberg_f64"]
print(json.dumps({"jaxport": loaded("jaxport"), "type": type(c).__module__,
                  "checks": [str(x) for x in c.disabled_checks],
                  "range": list(c.record_range), "x64": c.enable_x64,
                  "base": cases["release_qr_f32"].recordable_by("0.9.2")}))
""")
  assert out["jaxport"] == []
  assert out["type"] == "jaxport_case"
  assert out["checks"] and "lapack_dgehrd" in out["checks"][0]
  assert out["range"] == ["0.4.26", "0.4.30"] and out["x64"] is True
  assert out["base"] is True
