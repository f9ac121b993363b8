"""Real pytest sessions of a small project that uses the installed harness, as a downstream
project would: its own case module, store and stable-target declarations in its pyproject.

One scenario per need: a changed function fails by default, naming the case; ``--compat-update``
records a new entry (a revision on the same day) and reports what changed, append-only; a case
recorded with x64 off is replayed with x64 off; a case with its own ``DisabledSafetyCheck``
is recorded and replayed as shipped; the project's declared targets are required by coverage.
"""

import datetime
import hashlib
import json
import textwrap

import jax
import numpy as np
import pytest

from jaxport.golden import EntryId
from jaxport.errors import CustomCallError
from jaxport.golden._store import GoldenStore
from jaxport.harness import Case, random_matrix
from jaxport.harness._worker import _recording

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-11-30"
JAX = jax.__version__
PYPROJECT = """
[tool.pytest.ini_options]
jaxport_cases = ["mycases"]
jaxport_store = "golden"
"""
GOLDEN_TESTS = "from jaxport.harness.testing import test_record, test_replay  # noqa: F401\n"
CASES_HEAD = """
import jax
import jax.numpy as jnp
import numpy as np
from jaxport import DisabledSafetyCheck
from jaxport.harness import Case, random_matrix


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}
"""


def _project(pytester, cases: str, pyproject: str = PYPROJECT, **files: str) -> GoldenStore:
  pytester.makepyprojecttoml(pyproject)
  pytester.makepyfile(test_golden=GOLDEN_TESTS)
  _cases(pytester, cases)
  for name, text in files.items():
    (pytester.path / name).write_text(text)
  return GoldenStore(pytester.path / "golden")


def _cases(pytester, body: str) -> None:
  pytester.makepyfile(mycases=CASES_HEAD + textwrap.dedent(body))


def _run(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}", *args)


def _digests(store: GoldenStore) -> dict[str, str]:
  return {str(p.relative_to(store.root)): hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(store.root.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def _fresh_sources(monkeypatch):
  # The case module is rewritten within a second; stale bytecode must not hide the change.
  monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


# --- the snapshot workflow --------------------------------------------------------------------

GRAM = """
def gram(a):
  return a @ a.T + 4 * jnp.eye(3, dtype=a.dtype)


def cases():
  return [Case("gram_f32", "mine", gram, square)]
"""
# The same case after an edit: now it factorizes (a LAPACK target, other numbers).
GRAM_FACTORED = """
def gram(a):
  return jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(3, dtype=a.dtype))


def cases():
  return [Case("gram_f32", "mine", gram, square)]
"""
# ... and a case added beside it.
GRAM_FACTORED_AND_NEW = GRAM_FACTORED + """

def cases():
  return [Case("gram_f32", "mine", gram, square),
          Case("new_f32", "mine", lambda a: jnp.sin(a), square)]
"""


def test_a_changed_function_fails_until_update_records_a_revision(pytester, tmp_path):
  store = _project(pytester, GRAM)
  result = _run(pytester, "--compat-record")
  assert result.ret == 0, result.stdout.str()
  first = f"cpu/mine/gram_f32/{TODAY}_jax-{JAX}"
  assert [str(e.entry_id) for e in store.entries()] == [first]

  # The function changes: a downstream project's golden test fails, naming the case and the fix.
  _cases(pytester, GRAM_FACTORED)
  result = _run(pytester)
  assert result.ret == 1
  result.assert_outcomes(failed=1, deselected=1)
  out = result.stdout.str()
  assert f"golden entry {first}:" in out and "lapack_spotrf_ffi" in out
  assert "case gram_f32 changed since this entry was recorded" in out
  assert "pytest --compat-update" in out

  # --compat-update, across two xdist workers: the changed case and a new one get entries.
  _cases(pytester, GRAM_FACTORED_AND_NEW)
  before = _digests(store)
  report_file = tmp_path / "update.json"
  result = _run(pytester, "--compat-update", f"--compat-report={report_file}", "-n", "2")
  assert result.ret == 0, result.stdout.str()
  revised = f"cpu/mine/gram_f32/{TODAY}.2_jax-{JAX}"
  new = f"cpu/mine/new_f32/{TODAY}_jax-{JAX}"
  assert [str(e.entry_id) for e in store.entries()] == [first, revised, new]
  after = _digests(store)
  assert {k: after[k] for k in before} == before, "the old entry was changed"
  assert store.entry(EntryId.parse(revised)).manifest.revision == 2
  report = json.loads(report_file.read_text())
  assert report["mode"] == "update"
  (old,) = report["entries"]
  assert old["entry_id"] == first and old["status"] == "warn"
  gram, added = report["updated"]
  assert gram["case_id"] == "gram_f32" and gram["since"] == first
  assert gram["action"] == "written" and gram["entry_id"] == revised
  assert gram["targets_added"] == ["lapack_spotrf_ffi"] and gram["targets_removed"] == []
  assert any("lapack_spotrf_ffi" in s for s in gram["signature_changes"])
  assert added == {"case_id": "new_f32", "since": None, "entry_id": new, "action": "written",
                   "message": "", "targets_added": [], "targets_removed": [],
                   "signature_changes": [], "numerics": []}
  result.stdout.fnmatch_lines(["updated 2 case(s):",
                               f"  written   {revised} (since {first})",
                               "      targets added ['lapack_spotrf_ffi'], removed []",
                               f"  written   {new} (new case)"])

  # Replay: the new entries pass; the old one stays and, no longer the newest, only warns.
  result = _run(pytester, f"--compat-report={report_file}")
  assert result.ret == 0, result.stdout.str()
  statuses = {e["entry_id"]: e["status"] for e in json.loads(report_file.read_text())["entries"]}
  assert statuses == {first: "warn", revised: "pass", new: "pass"}
  assert "case gram_f32 has a newer entry" in result.stdout.str()


def test_update_refuses_record_and_shards(pytester):
  _project(pytester, GRAM)
  (pytester.path / "golden").mkdir()
  for other in ("--compat-record", "--compat-shard=1/2"):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--compat-update", other)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--compat-update" in result.stderr.str()


# --- per-case jax configuration, a project's own targets and coverage -------------------------

FEATURES = """
def as_float(x):
  return x.astype(float) / 3


def my_kernel(x):
  return jax.ffi.ffi_call("my_kernel", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def thin_qr():
  return (random_matrix(1, (4, 3), np.float32),), {}


def cases():
  return [
      Case("as_float_x32", "config", as_float, square, enable_x64=X32_ENABLE_X64),
      Case("as_float_x64", "config", as_float, square, enable_x64=True),
      # LAPACK's pivoted QR: runs on cpu, but is not on jax's stable table.
      Case("pivoted_qr_f32", "own_targets",
           lambda a: jax.lax.linalg.qr(a, pivoting=True, full_matrices=False), thin_qr,
           targets=("lapack_sgeqp3_ffi",),
           disabled_checks=(DisabledSafetyCheck.custom_call("lapack_sgeqp3_ffi"),)),
      # The project's own FFI kernel, lowered for cuda from a cpu host.
      Case("my_kernel_cuda", "own_targets", my_kernel, square, platforms=("cuda",),
           lowering_only=True, targets=("my_kernel",),
           disabled_checks=(DisabledSafetyCheck.custom_call("my_kernel"),)),
  ]
"""
TARGETS_PYPROJECT = PYPROJECT + 'jaxport_stable_targets = "stable_targets.json"\n'


def test_jax_config_and_own_targets_are_recorded_and_replayed_as_shipped(pytester, tmp_path):
  store = _project(pytester, FEATURES.replace("X32_ENABLE_X64", "False"), TARGETS_PYPROJECT,
                   **{"stable_targets.json": json.dumps({"cpu": ["lapack_sgeqp3_ffi"]})})
  result = _run(pytester, "--compat-record")
  assert result.ret == 0, result.stdout.str()
  entries = {e.manifest.case_id: e for e in store.entries()}
  x32, x64 = entries["as_float_x32"], entries["as_float_x64"]
  assert dict(x32.manifest.jax_config) == {"jax_enable_x64": False}
  assert dict(x64.manifest.jax_config) == {"jax_enable_x64": True}
  assert [a.dtype.name for a in x32.expected_outputs()] == ["float32"]
  assert [a.dtype.name for a in x64.expected_outputs()] == ["float64"]
  assert "tensor<3x3xf32>" in x32.module_text() and "f64" not in x32.module_text()
  qr = entries["pivoted_qr_f32"].manifest
  assert "lapack_sgeqp3_ffi" in {s.target for s in qr.custom_call_targets}
  assert {s.target for s in entries["my_kernel_cuda"].manifest.custom_call_targets} == {"my_kernel"}

  report_file = tmp_path / "replay.json"
  result = _run(pytester, f"--compat-report={report_file}")
  assert result.ret == 0, result.stdout.str()
  report = json.loads(report_file.read_text())
  assert {e["case_id"]: (e["status"], e["kinds"]) for e in report["entries"]} == {
      "as_float_x32": ("pass", []), "as_float_x64": ("pass", []),
      "pivoted_qr_f32": ("pass", []), "my_kernel_cuda": ("pass", [])}
  kernel = next(e for e in report["entries"] if e["case_id"] == "my_kernel_cuda")
  assert kernel["target_verdicts"] == {"my_kernel": "allowed_by_disabled_checks"}
  assert report["targets"]["required"] == ["lapack_sgeqp3_ffi"]
  assert report["session_failures"] == []

  # Were the x32 case replayed with x64 on, today's function would return float64 where its
  # entry promises float32: turning the case's x64 on changes its calling contract. A declared target without
  # an entry fails coverage, naming it and the file that declares it.
  _cases(pytester, FEATURES.replace("X32_ENABLE_X64", "True"))
  (pytester.path / "stable_targets.json").write_text(
      json.dumps({"cpu": ["lapack_sgeqp3_ffi", "my_missing_target"]}))
  result = _run(pytester)
  assert result.ret == 1
  out = result.stdout.str()
  assert f"golden entry {x32.entry_id}:" in out
  assert "calling contract of case as_float_x32: output: float32[3, 3] became float64[3, 3]" in out
  assert "case as_float_x32 changed since this entry was recorded" in out
  assert ("SESSION FAIL coverage: 1 cpu targets that the project declares stable in "
          f"{pytester.path / 'stable_targets.json'} have no replayed entry: "
          "['my_missing_target']") in out


def test_a_case_calling_a_target_off_the_table_without_its_check_is_refused_naming_the_fix():
  case = Case("pivoted_qr_f32", "own_targets",
              lambda a: jax.lax.linalg.qr(a, pivoting=True, full_matrices=False),
              lambda: ((random_matrix(1, (4, 3), np.float32),), {}), targets=("lapack_sgeqp3_ffi",))
  with pytest.raises(CustomCallError) as e:
    _recording.record_case(case, datetime.date(2026, 11, 30))
  assert "lapack_sgeqp3_ffi" in str(e.value)
  assert "DisabledSafetyCheck.custom_call('lapack_sgeqp3_ffi')" in str(e.value)


# --- re-recording the same day: source locations are not a change ----------------------------

LOCATED = """
def gram(a):
  return jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(3, dtype=a.dtype)), jnp.sin(a).sum()


def cases():
  return [Case("gram_f32", "mine", gram, square, vjp_order=1)]
"""


def test_a_re_record_after_lines_moved_is_unchanged_and_a_changed_function_conflicts(
    pytester, tmp_path):
  store = _project(pytester, LOCATED)
  result = _run(pytester, "--compat-record")
  assert result.ret == 0, result.stdout.str()
  (entry,) = store.entries()
  before = _digests(store)
  assert 'loc("mycases.py"' in entry.module_text()

  # Two comment lines above the cases move every source location of the module and its VJP.
  cases = pytester.path / "mycases.py"
  cases.write_text("# Golden cases of this project.\n# Keep them small.\n" + cases.read_text())
  report_file = tmp_path / "again.json"
  result = _run(pytester, "--compat-record", f"--compat-report={report_file}")
  assert result.ret == 0, result.stdout.str()
  result.stdout.fnmatch_lines([f"*unchanged {entry.entry_id}*"])
  (recorded,) = json.loads(report_file.read_text())["recorded"]
  assert recorded["action"] == "unchanged"
  assert _digests(store) == before, "the existing entry was rewritten"

  # A genuine change of the function on the same day is still a conflict.
  cases.write_text(cases.read_text().replace("4 * jnp.eye", "5 * jnp.eye"))
  result = _run(pytester, "--compat-record")
  assert result.ret == 1
  out = result.stdout.str()
  assert f"{entry.entry_id} already exists and today's recording differs in" in out
  assert "'exported.bin'" in out and "'module.mlir'" in out
  assert _digests(store) == before


# --- what the pytest process imports -----------------------------------------------------------

# A plugin of the replaying pytest process: whether that process itself imported jax by the end.
JAX_PROBE = """
import json, sys

def pytest_unconfigure(config):
  with open("jax_probe.json", "w") as f:
    json.dump({"jax": "jax" in sys.modules}, f)
"""
ONE_OLD_CONSUMER = """
def cases():
  return [Case("gram_f32", "mine", lambda a: a @ a.T, square, min_consumer="0.4.26")]
"""
ONE_OLD_CONSUMER_AND_NEW = """
def cases():
  return [Case("gram_f32", "mine", lambda a: a @ a.T, square, min_consumer="0.4.26"),
          Case("new_f32", "mine", lambda a: jnp.sin(a), square)]
"""


def test_a_warm_serial_replay_learns_the_cases_from_its_worker_without_importing_jax(pytester):
  _project(pytester, ONE_OLD_CONSUMER)
  assert _run(pytester, "--compat-record").ret == 0
  (pytester.path / "jax_probe.py").write_text(JAX_PROBE)
  _cases(pytester, ONE_OLD_CONSUMER_AND_NEW)

  # Its own process: the probe asks whether pytest's process imported jax, as this one has.
  result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--compat-today={TODAY}",
                                         "-n", "0", "-p", "jax_probe")
  assert result.ret == 1
  out = result.stdout.str()
  # The case's min_consumer and the list of registered cases both reached the session.
  assert "does not run on jax 0.4.26 (cpu)" in out
  assert "1 registered cases have no golden entry: ['new_f32']" in out
  assert json.loads((pytester.path / "jax_probe.json").read_text()) == {"jax": False}
