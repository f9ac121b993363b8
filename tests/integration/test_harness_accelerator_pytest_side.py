"""A run on an accelerator leaves the device to the harness's worker: pytest's own process
imports no jax, the platform check is the worker's answer, and ``-n`` above 1 is refused where
one process at a time can hold the chip.

A CPU machine is made to look like a TPU machine to pytest's process: a findable ``libtpu``
module and no ``JAX_PLATFORMS``. jax in the worker then comes up on the CPU, so the worker's
answer refuses ``--compat-platform=tpu``; pytest's process must have decided nothing itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _harness_paths import HARNESS_TESTS, ROOT

# A pytest plugin that writes, as pytest's process exits, whether jax was ever imported there.
_WITNESS = '''
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["JAX_WITNESS"], "w").write(
    json.dumps({"jax": "jax" in sys.modules, "jaxlib": "jaxlib" in sys.modules})))
'''


def _tpu_looking_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
  fake = tmp_path / "fake_site"
  (fake / "libtpu").mkdir(parents=True)
  (fake / "libtpu" / "__init__.py").write_text('"""A libtpu that is no TPU runtime."""\n')
  (fake / "jax_witness.py").write_text(_WITNESS)
  witness = tmp_path / "witness.json"
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_PLATFORMS", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
  env["PYTHONPATH"] = os.pathsep.join(p for p in (str(fake), str(ROOT), env.get("PYTHONPATH"))
                                      if p)
  env["JAX_WITNESS"] = str(witness)
  env["TMPDIR"] = str(tmp_path / "tmp")
  (tmp_path / "tmp").mkdir()
  done = subprocess.run(
      [sys.executable, "-m", "pytest", str(HARNESS_TESTS), "-p", "jax_witness", "-p",
       "no:cacheprovider", "-q", "--compat-platform=tpu",
       f"--compat-cache-dir={tmp_path / 'cache'}", *args],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
  assert witness.is_file(), done.stdout + done.stderr
  return done, json.loads(witness.read_text())


@pytest.mark.parametrize("corpus", [False, True], ids=["store", "jax-corpus"])
def test_a_tpu_looking_machine_is_refused_by_the_workers_answer_with_no_jax_in_pytest(
    tmp_path, corpus):
  done, seen = _tpu_looking_run(tmp_path, *(["--compat-jax-corpus"] if corpus else []))
  out = done.stdout + done.stderr
  assert done.returncode == pytest.ExitCode.USAGE_ERROR, out
  assert "--compat-platform=tpu replays entries that run on tpu" in out
  assert "jax backend is cpu (as the harness's worker found it)" in out
  assert seen == {"jax": False, "jaxlib": False}, out
  # The corpus imported before the refusal is removed with it.
  assert not list((tmp_path / "tmp").glob("jaxport-jax-corpus-*"))


def test_more_than_one_xdist_worker_on_a_tpu_run_is_refused_naming_why(tmp_path):
  pytest.importorskip("xdist", reason="the refusal is of pytest-xdist's -n option")
  done, seen = _tpu_looking_run(tmp_path, "-n", "2")
  out = done.stdout + done.stderr
  assert done.returncode == pytest.ExitCode.USAGE_ERROR, out
  assert "-n 2 with --compat-platform=tpu: one process at a time can hold a tpu chip" in out
  assert seen["jax"] is False, out
