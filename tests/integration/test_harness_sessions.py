"""Real pytest sessions of the compat harness against a temporary copy of a few golden entries.

One scenario per flag: replay (with its coverage and tripwire verdicts),
injected output and target changes, a tampered file, strictness, record
(append-only, byte-identical re-records), the JSON report, and ``-n 2``
giving the same report as a serial run.
"""

import dataclasses
import datetime
import json
import shutil
import sys
from pathlib import Path

import jax
import jax.experimental.pallas.tpu  # noqa: F401  (see _run)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from _report_helpers import without_cache_count  # noqa: E402
from jaxport.golden import EntryId
from jaxport.golden._manifest import CustomCallSignature  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

HARNESS_TESTS = ROOT / "harness" / "test_replay.py"
GOLDEN = ROOT / "compat_data"
CASES = ("lapack_potrf/cholesky_f32", "lapack_syevd/eigh_c64", "lowering_cuda/cuda_cholesky_f32")
SELECT = "cholesky_f32 or eigh_c64"  # selects all three entries (cuda_cholesky_f32 too)


def _copy_entries(dest: Path) -> dict[str, str]:
  """Copy the newest entry of each of CASES under dest; their entry ids by case."""
  ids = {}
  for case in CASES:
    src = sorted((GOLDEN / "cpu" / case).iterdir())[-1]
    shutil.copytree(src, dest / "cpu" / case / src.name)
    ids[case.split("/")[1]] = f"cpu/{case}/{src.name}"
  return ids


def _run(pytester, root: Path, *args, node: str = "", own_process: bool = False):
  """A session of this repository's harness on ``root``, in this process unless
  ``own_process``: xdist's workers find the case modules on the path of a session started in
  the repository. A recording imports the repository's case modules into pytest's process;
  jax's Pallas TPU module, which they import and which registers a PRNG once per process, is
  imported by this module, so that the sessions run here find it imported."""
  run = pytester.runpytest_subprocess if own_process else pytester.runpytest
  return run(f"{HARNESS_TESTS}{node}", f"--compat-store={root}", "-p", "no:cacheprovider", "-W",
             "ignore::DeprecationWarning", *args)


def _rewrite(store: GoldenStore, entry_id: str, days_earlier: int, **changes):
  """A new entry of the same case, dated earlier, with manifest or expected outputs changed."""
  e = store.entry(EntryId.parse(entry_id))
  m = e.manifest
  # Recorded by this jax, so the change is judged inside the compat window under any release.
  m = dataclasses.replace(m, record_date=m.record_date - datetime.timedelta(days=days_earlier),
                          producer=dataclasses.replace(m.producer, jax=jax.__version__),
                          **changes.get("manifest", {}))
  expected = changes.get("expected", e.expected_outputs())
  return store.write_entry(m, e.blob(), e.inputs(), expected, e.module_text())


@pytest.fixture
def golden(tmp_path):
  root = tmp_path / "golden"
  return root, _copy_entries(root)


def test_replay_passes_entries_and_fails_the_session_on_coverage(pytester, golden, tmp_path):
  root, ids = golden
  report_file = tmp_path / "report.json"
  result = _run(pytester, root, f"--compat-report={report_file}")
  result.assert_outcomes(passed=3, deselected=1)
  assert result.ret == 1  # every entry passed; the session fails on coverage
  result.stdout.fnmatch_lines(["*3 entries replayed of 3 present*",
                               "SESSION FAIL coverage: 46 stable cpu targets have no replayed entry*",
                               "SESSION FAIL *registered cases have no golden entry*"])
  report = json.loads(report_file.read_text())
  assert [e["status"] for e in report["entries"]] == ["pass", "pass", "pass"]
  assert {e["entry_id"] for e in report["entries"]} == set(ids.values())
  assert "lapack_spotrf_ffi" in report["targets"]["covered"]
  assert "cusolver_potrf_ffi" in report["targets"]["covered"]
  assert "lapack_dpotrf_ffi" in report["targets"]["missing_required"]
  assert report["readers"] == ["jaxport", "jax"]
  cuda = next(e for e in report["entries"] if e["case_id"] == "cuda_cholesky_f32")
  assert cuda["lowering_only"] and cuda["days_to_expiry"] <= 180
  assert any(s["what"] == ids["cuda_cholesky_f32"] and "lowering-only" in s["why"]
             for s in report["skips"])


def test_parallel_report_equals_serial_report(pytester, golden, tmp_path):
  root, _ = golden
  serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
  _run(pytester, root, f"--compat-report={serial}", "-k", SELECT)
  result = _run(pytester, root, f"--compat-report={parallel}", "-k", SELECT, "-n", "2",
                own_process=True)
  result.assert_outcomes(passed=3)
  # Both runs use the repository's compile cache, which other tests' sessions fill meanwhile:
  # how many executables each loaded from it is how the run went, not what it found.
  assert (without_cache_count(json.loads(serial.read_text()))
          == without_cache_count(json.loads(parallel.read_text())))


def test_injected_changes_and_tampering_are_detected(pytester, golden, tmp_path):
  root, ids = golden
  store = GoldenStore(root)
  # An output change: same blob, one expected element moved.
  e = store.entry(EntryId.parse(ids["cholesky_f32"]))
  expected = [a.copy() for a in e.expected_outputs()]
  expected[0][1, 0] += np.float32(0.01)
  changed_output = _rewrite(store, ids["cholesky_f32"], 10, expected=expected)
  # A target change: the recorded signature names other attributes.
  def other_attributes(m):
    return tuple(CustomCallSignature(s.target, s.operand_types, s.result_types,
                                     {**s.attributes, "mhlo.backend_config": "{uplo = 85 : ui8}"})
                 for s in m.custom_call_targets)
  changed_target = _rewrite(store, ids["cholesky_f32"], 20, manifest={
      "custom_call_targets": other_attributes(e.manifest)})
  cuda = store.entry(EntryId.parse(ids["cuda_cholesky_f32"]))
  changed_cuda = _rewrite(store, ids["cuda_cholesky_f32"], 20, manifest={
      "custom_call_targets": other_attributes(cuda.manifest)})
  # A tampered file: one byte of the blob flipped after recording.
  blob = root / ids["eigh_c64"] / "exported.bin"
  data = bytearray(blob.read_bytes())
  data[len(data) // 2] ^= 0xFF
  blob.chmod(0o644)
  blob.write_bytes(bytes(data))

  result = _run(pytester, root, "-k", SELECT)
  # The edited signature of the cpu entry disagrees with its own module: damaged golden data,
  # as audit judges it too.
  result.assert_outcomes(passed=2, failed=4)
  out = result.stdout.str()
  assert f"test_replay.py::test_replay[{changed_target.entry_id}]" in out
  assert "custom_call_targets disagree with the module in exported.bin" in out
  assert f"test_replay.py::test_replay[{changed_output.entry_id}]" in out
  assert "1 of 16 elements differ beyond rtol=0.0001" in out
  assert f"test_replay.py::test_replay[{changed_cuda.entry_id}]" in out
  assert "target cusolver_potrf_ffi changed signature" in out
  assert f"test_replay.py::test_replay[{ids['eigh_c64']}]" in out
  assert "exported.bin" in out and "sha256" in out
  assert f"FAIL {changed_target.entry_id}" in out

  # Damaged golden data fails whatever the policy: an older entry of its case (the case's
  # newest is unchanged) is not excused by --compat-strict's allowance for superseded entries.
  strict = _run(pytester, root, "-k", SELECT, "--compat-strict")
  strict.assert_outcomes(passed=2, failed=4)
  assert f"FAIL {changed_target.entry_id}" in strict.stdout.str()


def test_record_is_append_only_and_byte_identical(pytester, tmp_path):
  first, second = tmp_path / "first", tmp_path / "second"
  args = ("--record", "--compat-today=2026-01-02")
  node = "::test_record[cholesky_f32]"
  result = _run(pytester, first, *args, node=node)
  result.assert_outcomes(passed=1)
  result.stdout.fnmatch_lines(["*written   cpu/lapack_potrf/cholesky_f32/2026-01-02_jax-*"])
  entry = next((first / "cpu/lapack_potrf/cholesky_f32").iterdir())
  before = {p.name: p.read_bytes() for p in entry.iterdir()}

  again = _run(pytester, first, *args, node=node)
  again.assert_outcomes(passed=1)
  again.stdout.fnmatch_lines(["*unchanged cpu/lapack_potrf/cholesky_f32/2026-01-02_jax-*"])
  assert {p.name: p.read_bytes() for p in entry.iterdir()} == before

  _run(pytester, second, *args, node=node, own_process=True).assert_outcomes(passed=1)
  other = next((second / "cpu/lapack_potrf/cholesky_f32").iterdir())
  assert (other / "exported.bin").read_bytes() == before["exported.bin"]
  assert (other / "module.mlir").read_bytes() == before["module.mlir"]

  # An existing entry with other bytes is never overwritten: the record item fails.
  third = tmp_path / "third"
  store = GoldenStore(third)
  e = GoldenStore(first).entry(EntryId.parse(f"cpu/lapack_potrf/cholesky_f32/{entry.name}"))
  store.write_entry(e.manifest, e.blob(), e.inputs(), [x + 1 for x in e.expected_outputs()],
                    e.module_text())
  existing = (third / "cpu/lapack_potrf/cholesky_f32" / entry.name / "expected.npz").read_bytes()
  conflict = _run(pytester, third, *args, node=node)
  conflict.assert_outcomes(failed=1)
  assert ("already exists and today's recording differs in ['expected.npz', 'manifest.json']"
          in conflict.stdout.str())
  assert (third / "cpu/lapack_potrf/cholesky_f32" / entry.name / "expected.npz").read_bytes() == existing

  # The recorded entry replays; 242 days later it is past the 180-day window:
  # a warning, and a failure when strict.
  late = _run(pytester, first, "-k", "cholesky_f32", "--compat-today=2026-09-01")
  late.assert_outcomes(passed=1, warnings=1)
  late.stdout.fnmatch_lines(["*[[]expired[]] recorded 2026-01-02, 62 days past the 180-day compat window*"])
  strict = _run(pytester, first, "-k", "cholesky_f32", "--compat-today=2026-09-01", "--compat-strict")
  strict.assert_outcomes(failed=1)


def test_a_fuzz_only_run_has_no_compat_report_and_the_replay_cli_never_runs_the_fuzzers(pytester):
  fuzz = pytester.runpytest(
      str(ROOT / "harness" / "fuzz" / "test_fuzz_parse.py"), "-p", "no:cacheprovider",
      "-k", "identity", "-W", "ignore::DeprecationWarning")
  assert fuzz.ret == pytest.ExitCode.OK
  assert "jaxport compat harness" not in fuzz.stdout.str()
  only = pytester.runpytest(
      str(ROOT), "--compat-only", "--collect-only", "-q", "-p", "no:cacheprovider")
  collected = [line for line in only.stdout.lines if "::" in line]
  assert collected and all(line.startswith("harness/test_replay.py::") for line in collected), (
      collected[:5])


def test_the_harness_runs_without_xdist(pytester, tmp_path):
  # The repository's own store: its LAPACK Cholesky records of old producers hold expected
  # failures, which pytest reports as xfailed.
  report = tmp_path / "report.json"
  result = _run(pytester, GOLDEN, "-p", "no:xdist", "-k", "lapack_potrf and cholesky_f32",
                f"--compat-report={report}")
  assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
  assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
  entries = json.loads(report.read_text())["entries"]
  assert entries and all(e["family"] == "lapack_potrf" for e in entries)
  statuses = [e["status"] for e in entries]
  assert set(statuses) <= {"pass", "xfail"}, statuses
  outcomes = result.parseoutcomes()
  assert outcomes.get("xfailed", 0) == statuses.count("xfail"), outcomes
