"""Real pytest sessions of the harness's replay modes: executable sharing, its cross-run cache, and
cold replay; faults are planted in the worker through a ``sitecustomize`` module on its path."""

import json
from pathlib import Path

import pytest
from _harness_paths import HARNESS_TESTS, ROOT, copy_cpu_entries
from _jax_releases import entries_of_a_newer_release


pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

QR = "lapack_geqrf/qr_f32/2026-11-29_jax-0.10.2"
CHOLESKY = "lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
# An older producer's entry (today's module differs, so today's lowering runs too) and one
# that runs only after jaxport.upgrade.
OLD_CHOLESKY = ("lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.9.2",
                "lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.4.30")

# Planted faults, chosen by JAXPORT_TEST_FAULT in the worker (and, harmlessly, in pytest):
#   jaxport-call  jaxport's reader returns every output plus one; jax's reader is untouched.
#   cold-ffi      calling a module with lapack_spotrf_ffi kills the process unless the process has
#                 exported a case before: a custom-call handler registered only during lowering,
#                 the bug class that made deserialized cholesky/svd crash in a fresh process.
SITECUSTOMIZE = '''
import os
FAULT = os.environ.get("JAXPORT_TEST_FAULT")
if FAULT == "jaxport-call":
  import jax
  from jaxport.export import _exported
  _call = _exported.Exported.call
  _exported.Exported.call = lambda self, *a, **k: jax.tree.map(lambda x: x + 1, _call(self, *a, **k))
elif FAULT == "cold-ffi":
  import signal
  import jax.export
  import jaxport
  from jaxport.export import _exported
  _lowered = []
  _export = jaxport.export
  def export(*args, **kwargs):
    _lowered.append(True)
    return _export(*args, **kwargs)
  jaxport.export = export
  def crash_when_cold(cls):
    call = cls.call
    def checked(self, *args, **kwargs):
      if not _lowered and "lapack_spotrf_ffi" in self.mlir_module():
        os.kill(os.getpid(), signal.SIGSEGV)
      return call(self, *args, **kwargs)
    cls.call = checked
  crash_when_cold(_exported.Exported)
  crash_when_cold(jax.export.Exported)
'''


@pytest.fixture
def store(tmp_path):
  return copy_cpu_entries((QR, CHOLESKY, *OLD_CHOLESKY), tmp_path / "golden")


def _run(pytester, monkeypatch, root: Path, *args, fault: str | None = None):
  if fault:
    hooks = pytester.path / "fault"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("PYTHONPATH", f"{hooks}:{ROOT}")
    monkeypatch.setenv("JAXPORT_TEST_FAULT", fault)
  return pytester.runpytest(
      str(HARNESS_TESTS), f"--compat-store={root}", "-p", "no:cacheprovider", "-p", "no:randomly",
      "-W", "ignore::DeprecationWarning", "--compat-today=2026-11-30", *args)


def _report(path: Path) -> dict:
  return json.loads(path.read_text())


def _verdicts(path: Path) -> dict:
  """The report without the count of executables loaded from the compile cache."""
  report = _report(path)
  report["summary"].pop("from_cache", None)
  return report


def test_sharing_executables_and_a_corrupt_cache_leave_the_report_unchanged(
    pytester, monkeypatch, store, tmp_path):
  cache = tmp_path / "cache"
  shared = _run(pytester, monkeypatch, store, f"--compat-cache-dir={cache}",
                f"--compat-report={tmp_path / 'shared.json'}")
  shared.assert_outcomes(passed=4, deselected=1)
  written = [p for p in cache.rglob("*") if p.is_file()]
  assert written, "the run kept no executable in its cache directory"
  # A second run loads executables from the cache, says how many, and judges the same.
  _run(pytester, monkeypatch, store, f"--compat-cache-dir={cache}",
       f"--compat-report={tmp_path / 'warm.json'}")
  assert _report(tmp_path / "shared.json")["summary"]["from_cache"] == 0
  assert _report(tmp_path / "warm.json")["summary"]["from_cache"] > 0
  assert _verdicts(tmp_path / "warm.json") == _verdicts(tmp_path / "shared.json")
  for i, p in enumerate(written):  # corrupt every entry: garbage, truncated, emptied
    p.write_bytes([b"not an executable", p.read_bytes()[:7], b""][i % 3])
  (cache / "stray.txt").write_text("left by another tool")
  _run(pytester, monkeypatch, store, f"--compat-cache-dir={cache}",
       f"--compat-report={tmp_path / 'corrupt.json'}")
  _run(pytester, monkeypatch, store, "--compat-no-cache",
       f"--compat-report={tmp_path / 'compiled.json'}")
  _run(pytester, monkeypatch, store, f"--compat-report={tmp_path / 'in_memory.json'}")
  assert "from_cache" not in _report(tmp_path / "compiled.json")["summary"]
  assert _verdicts(tmp_path / "shared.json") == _report(tmp_path / "compiled.json")
  assert _verdicts(tmp_path / "in_memory.json") == _report(tmp_path / "compiled.json")
  assert _verdicts(tmp_path / "corrupt.json") == _report(tmp_path / "compiled.json")


@entries_of_a_newer_release
def test_a_fault_in_one_readers_path_is_reported_with_executables_shared(
    pytester, monkeypatch, store, tmp_path):
  result = _run(pytester, monkeypatch, store, "-k", "qr_f32 or cholesky_f32 and 0.10.2",
                f"--compat-report={tmp_path / 'r.json'}", fault="jaxport-call")
  result.assert_outcomes(failed=2)
  for entry in _report(tmp_path / "r.json")["entries"]:
    readers = [m for m in entry["messages"] if " reader: " in m]
    assert entry["status"] == "fail" and readers
    assert all(m.startswith("[compatibility_break] jaxport reader: ") for m in readers)


@entries_of_a_newer_release
def test_cold_replay_isolates_a_crash_that_a_warm_worker_hides(pytester, monkeypatch, store, tmp_path):
  select = ["-k", "qr_f32 or cholesky_f32 and 0.10.2"]
  warm = _run(pytester, monkeypatch, store, *select, fault="cold-ffi")
  warm.assert_outcomes(passed=2)
  cold = _run(pytester, monkeypatch, store, *select, "--compat-cold",
              f"--compat-report={tmp_path / 'cold.json'}", fault="cold-ffi")
  cold.assert_outcomes(passed=1, failed=1)
  by_id = {e["entry_id"]: e for e in _report(tmp_path / "cold.json")["entries"]}
  assert by_id[f"cpu/{QR}"]["status"] == "pass"
  crashed = by_id[f"cpu/{CHOLESKY}"]
  assert crashed["kinds"] == ["compatibility_break"]
  assert "cold replay with the jaxport reader in a fresh process" in crashed["messages"][0]
  # The worker left word that it died in the reader's replay: the break names that reader.
  assert crashed["messages"][0].startswith(
      "[compatibility_break] jaxport reader: the worker process stopped during the jaxport "
      "reader's replay of the recorded entry"), crashed["messages"][0]
  # The signal by name, and the stack faulthandler wrote when it arrived.
  assert "killed by SIGSEGV (signal 11)" in crashed["messages"][0]
  assert "Fatal Python error: Segmentation fault" in crashed["messages"][0]
  assert "its last stderr lines:" in crashed["messages"][0]
