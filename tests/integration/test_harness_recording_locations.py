"""Recording is byte-deterministic across edits of jaxport itself: a module's source
locations name the case's own lines, never the harness's or the exporter's."""

import json
import os
import shutil
from pathlib import Path

import jaxport
from _python_child import run_python

PACKAGE = Path(jaxport.__file__).resolve().parent

CASES = '''
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case


def _gram_cholesky(x):
  return jnp.linalg.cholesky(x @ x.T + 4.0 * jnp.eye(x.shape[0], dtype=x.dtype)), jnp.sin(x).sum()


def cases():
  x = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
  return [Case("located", "locations", _gram_cholesky, lambda: ((x,), {}), vjp_order=1)]
'''

RECORD = '''
import datetime, json, sys
from pathlib import Path
import jaxport
from jaxport.harness._worker import _case_runs, _jax_setup, _recording
import located_cases

_jax_setup.configure_jax()
case, = located_cases.cases()
rec = _recording.record_case(case, datetime.date(2026, 1, 2))
out = Path(OUT)
out.mkdir()
(out / "exported.bin").write_bytes(rec.blob)
(out / "module.mlir").write_text(rec.module_text)
(out / "facts.json").write_text(json.dumps({"jaxport": jaxport.__file__}))
'''


def _record(package_root: Path, cases: Path, out: Path) -> Path:
  """Records the case with the jaxport of ``package_root``, in a child that imports it there:
  forked from a parent that imported jax alone."""
  env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(package_root), str(cases)))}
  done = run_python(f"OUT = {str(out)!r}\n{RECORD}", env=env, cwd=cases, timeout=300,
                    preload=("jax", "jax.numpy"))
  assert done.returncode == 0, done.stderr[-3000:]
  return out


def _edited_copy(root: Path) -> Path:
  """A copy of jaxport whose harness engine, contract and export code moved down by some lines."""
  copy = root / "jaxport"
  shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
  for name in ("harness/_worker/_case_runs.py", "harness/_worker/_jax_setup.py",
               "harness/_worker/_recording.py", "harness/_worker/_contract.py", "export/_lower.py"):
    path = copy / name
    path.write_text("\n" * 17 + path.read_text())
  return root


def test_a_recording_names_only_the_cases_lines_and_survives_an_edit_of_the_harness(tmp_path):
  cases = tmp_path / "cases"
  cases.mkdir()
  (cases / "located_cases.py").write_text(CASES)
  first = _record(PACKAGE.parent, cases, tmp_path / "first")
  edited = _edited_copy(tmp_path / "edited")
  second = _record(edited, cases, tmp_path / "second")

  assert Path(json.loads((second / "facts.json").read_text())["jaxport"]).is_relative_to(edited)
  text = (first / "module.mlir").read_text()
  assert 'loc("located_cases.py"' in text
  own = sorted({p.name for p in PACKAGE.rglob("*.py")})
  assert [n for n in own if f'"{n}"' in text] == []
  assert (second / "module.mlir").read_text() == text
  assert (second / "exported.bin").read_bytes() == (first / "exported.bin").read_bytes()
