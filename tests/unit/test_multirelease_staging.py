"""The recorder's staging format and its import into the golden store, without any release venv.

The recorder normally runs inside an older release's venv; here it runs with
the installed jax, which exercises the same code and files offline.
"""

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.cases import release_cases  # noqa: E402
from jaxport.multirelease import _envs as _venvs  # noqa: E402
from jaxport.multirelease import _record, _staging as staging  # noqa: E402
from jaxport_in_release import recorder as _recorder  # noqa: E402
from jaxport.golden import EntryId
from jaxport.errors import GoldenDataError  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402

CASES = ("release_cholesky_f32", "release_vjp_tanh_f32")
CASES_FILE = str(ROOT / "harness" / "cases" / "release_cases.py")


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
  """A staging folder with two cases, as the recorder writes it."""
  out = tmp_path_factory.mktemp("staging") / "run"
  rc = _recorder.main(["--out", str(out), "--date", "2026-01-02", "--cases-file", CASES_FILE] +
                      [a for c in CASES for a in ("--case", c)])
  assert rc == 0
  return out


def _copy(src: Path, dst: Path) -> Path:
  import shutil
  shutil.copytree(src, dst)
  return dst


def test_recorder_writes_plain_files(staged):
  producer = json.loads((staged / "producer.json").read_text())
  assert producer["record_date"] == "2026-01-02" and producer["producer"]["jax"]
  assert json.loads((staged / "skipped.json").read_text()) == {}
  case = staged / "release_cholesky_f32"
  assert sorted(p.name for p in case.iterdir()) == [
      "case.json", "expected.npz", "exported.bin", "inputs.npz", "module.mlir", "module.mlirbc"]
  meta = json.loads((case / "case.json").read_text())
  blob = (case / "exported.bin").read_bytes()
  assert meta["serialization_version"] == _recorder.peek_serialization_version(blob) > 0
  text = (case / "module.mlir").read_text()
  assert "lapack_spotrf_ffi" in text
  # Locations name the case's lines, never the recording script's or the contract's.
  assert 'loc("release_cases.py"' in text
  assert not [n for n in ("recorder.py", "release_jax.py", "_contract.py") if f'"{n}"' in text]
  # The VJP case stores the primal output followed by the input cotangent.
  with np.load(staged / "release_vjp_tanh_f32" / "expected.npz", allow_pickle=False) as npz:
    assert npz.files == ["arr_0", "arr_1"] and npz["arr_1"].shape == (6,)


def test_import_writes_verified_entries_once(staged, tmp_path):
  store = GoldenStore(tmp_path / "store")
  first = staging.import_staging(staged, store)
  assert [e.entry_id.case_id for e in first.written] == sorted(CASES)
  entry = store.entry(next(e.entry_id for e in first.written if "cholesky" in e.entry_id.case_id))
  entry.verify()
  m = entry.manifest
  assert m.family == "lapack_potrf" and m.producer.jaxport is None
  assert m.imported_from.source == staging.IMPORT_SOURCE
  # Replayed under the configuration it ran under; recorded on this machine, by this jaxlib.
  assert m.jax_config == {"jax_enable_x64": False}
  assert m.host is not None and m.host.jaxlib == m.producer.jaxlib
  assert [s.target for s in m.custom_call_targets] == ["lapack_spotrf_ffi"]
  assert m.custom_call_targets[0].operand_types == ("tensor<4x4xf32>",)
  inputs = entry.inputs()
  np.testing.assert_allclose(entry.expected_outputs()[0] @ entry.expected_outputs()[0].T,
                             inputs[0], rtol=1e-5)
  again = staging.import_staging(staged, store)
  assert again.written == () and sorted(again.existing) == sorted(e.entry_id for e in first.written)


def test_import_refuses_a_bad_case_json(staged, tmp_path):
  bad = _copy(staged, tmp_path / "bad")
  meta_path = bad / "release_cholesky_f32" / "case.json"
  meta = json.loads(meta_path.read_text())
  meta["extra"] = 1
  meta_path.write_text(json.dumps(meta))
  with pytest.raises(GoldenDataError, match=r"case.json: expected keys .*'extra'"):
    staging.read_staging(bad)


def test_import_refuses_pickled_arrays(staged, tmp_path):
  bad = _copy(staged, tmp_path / "pickled")
  np.savez(bad / "release_cholesky_f32" / "inputs.npz", np.array([{"a": 1}], dtype=object))
  with pytest.raises(GoldenDataError, match="without unpickling"):
    staging.import_staging(bad, GoldenStore(tmp_path / "store"))


def test_import_refuses_a_missing_file_and_an_old_staging_format(staged, tmp_path):
  bad = _copy(staged, tmp_path / "missing")
  (bad / "release_cholesky_f32" / "module.mlirbc").unlink()
  with pytest.raises(GoldenDataError, match=r"missing file\(s\) \['module.mlirbc'\]"):
    staging.read_staging(bad)
  old = _copy(staged, tmp_path / "old")
  info = json.loads((old / "producer.json").read_text())
  info["staging_format"] = 0
  (old / "producer.json").write_text(json.dumps(info))
  with pytest.raises(GoldenDataError, match="staging_format expected 1"):
    staging.read_staging(old)


def test_recorder_skips_with_a_reason_what_a_release_cannot_express(tmp_path, monkeypatch):
  cases = release_cases.all_cases()
  broken = [c for c in cases if c.case_id == "release_lu_f32"][0]

  def failing(*a):
    raise NotImplementedError("no lu in this release")
  monkeypatch.setattr(_recorder, "load_cases", lambda paths: [
      dataclasses.replace(broken, fun=failing)])
  assert _recorder.main(["--out", str(tmp_path / "s"), "--cases-file", CASES_FILE]) == 0
  skipped = json.loads((tmp_path / "s" / "skipped.json").read_text())
  assert skipped == {"release_lu_f32": "NotImplementedError: no lu in this release"}


def test_recorder_skips_the_cases_whose_record_range_leaves_out_its_jax(tmp_path, monkeypatch):
  cases = {c.case_id: c for c in release_cases.all_cases()}
  legacy = cases["release_lu_f64"]
  assert legacy.record_range == release_cases.LEGACY_RANGE
  future = dataclasses.replace(cases["release_lu_f32"], record_range=("99.0.0", None))
  monkeypatch.setattr(_recorder, "load_cases", lambda paths: [legacy, future])
  assert _recorder.main(["--out", str(tmp_path / "s"), "--cases-file", CASES_FILE]) == 0
  skipped = json.loads((tmp_path / "s" / "skipped.json").read_text())
  assert skipped == {"release_lu_f64": "recorded only by jax <= 0.4.30",
                     "release_lu_f32": "needs jax >= 99.0.0"}


def test_release_cases_match_their_specs_and_the_registry():
  cases = release_cases.all_cases()
  assert [c.case_id for c in cases] == list(release_cases.SPECS)
  registry = {c.case_id: c for c in release_cases.cases()}
  assert set(registry) == set(release_cases.SPECS)
  poly = registry["release_cholesky_poly_f32"]
  assert poly.polymorphic_shapes == ("b, 3, 3",) and poly.targets == ("lapack_spotrf_ffi", "shape_assertion")
  args, kwargs = poly.make_inputs()
  assert kwargs == {} and args[0].shape == (2, 3, 3) and args[0].dtype == np.float32


def test_venv_requirements_follow_the_release():
  assert _venvs.requirements("0.9.2") == ["jax==0.9.2", "jaxlib==0.9.2", "flatbuffers"]
  assert "absl-py" in _venvs.requirements("0.5.3") and "numpy<2" not in _venvs.requirements("0.5.3")
  assert "numpy<2" in _venvs.requirements("0.4.30")
  assert _venvs.venv_dir("0.9.2", "/x").as_posix() == "/x/jax-0.9.2"
  with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
    _venvs.venv_dir("latest")


@pytest.mark.slow  # runs the recorder in a child interpreter
def test_record_with_jax_end_to_end_with_this_interpreter(tmp_path, monkeypatch):
  monkeypatch.setattr(_venvs, "ensure_venv", lambda version, root=None: Path(sys.executable))
  store = tmp_path / "store"
  first = _record.record("0.10.2", store, [Path(CASES_FILE)], cases=["release_lu_f32"],
                         date="2026-02-03")
  assert "wrote   cpu/lapack_getrf/release_lu_f32/2026-02-03_jax-" in _record.summary(first)
  (entry,) = GoldenStore(store).entries()
  assert str(entry.entry_id).startswith("cpu/lapack_getrf/release_lu_f32/2026-02-03_jax-")
  entry.verify()
  # The store is append-only: recording the same day again leaves the entry as it is.
  again = _record.record("0.10.2", store, [Path(CASES_FILE)], cases=["release_lu_f32"],
                         date="2026-02-03")
  assert again.written == () and again.existing == (entry.entry_id,)


def test_a_failing_venv_build_names_the_command_and_the_fix(tmp_path, monkeypatch):
  monkeypatch.setenv("JAXPORT_RELEASE_PYTHON", "false")
  want = r"(?s)creating the environment of jax 0.9.2 failed \(exit \d+\).*does not serve for this Python"
  with pytest.raises(_venvs.VenvError, match=want):
    _venvs.ensure_venv("0.9.2", tmp_path)
  assert not _venvs.is_ready("0.9.2", tmp_path)


def test_the_recorder_refuses_a_case_id_two_case_modules_list(tmp_path):
  with pytest.raises(SystemExit, match="release_cholesky_f32.*listed by both"):
    _recorder.load_cases([CASES_FILE, CASES_FILE])
