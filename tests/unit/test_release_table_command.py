"""The release-table command (``_table_measure.main``) and the reader-policy measurement on
sample blobs (``_table_samples``) from this repository's store and the running jax, with each
release's venv and measurement stood in for."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import export

from _release_measurements import measured, script
from jaxport.errors import ReleaseTableError
from jaxport.export import _mlir
from jaxport.harness._judge import _reader_policy
from jaxport.multirelease import _envs, _reader_policy_measure, _table_samples
from jaxport.multirelease import _table_measure as tm
from jaxport.releases import _table
from jaxport.releases._dates import BACKWARD_WINDOW_DAYS
from jaxport.releases._features import module_dialects
from jaxport.serde import _read, _verify
from jaxport.serde._read import read_serialization_version
from jaxport.upgrades import LAYOUTS, envelope_layout, read_any_envelope

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "compat_data"
UNKNOWN = tm.UNKNOWN_TARGET


def _running_python(version):
  return Path(sys.executable)


def _copier(path: Path, source: Path) -> Path:
  """A stand-in for write_sample.py: copies ``source`` where it is told to write."""
  return script(path, "import shutil, sys\nshutil.copyfile(SOURCE, sys.argv[1])\n",
                SOURCE=str(source))


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
  """The sample blobs and the measurement script's inputs over this repository's store; the
  newest release's own blob is the running jax's export of sin (a stand-in for write_sample.py
  copies it where the real one writes)."""
  tmp = tmp_path_factory.mktemp("samples")
  own = tmp / "own.bin"
  own.write_bytes(export.export(jax.jit(jnp.sin))(
      jax.ShapeDtypeStruct((3,), jnp.float32)).serialize())
  asked = []
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(_envs, "ensure_venv",
               lambda version: asked.append(version) or _running_python(version))
    mp.setattr(_table_samples, "WRITE_SAMPLE", _copier(tmp / "write_sample.py", own))
    blobs = _table_samples.sample_blobs(tmp, tm.LAST, STORE)
  assert asked == [tm.LAST]                      # the newest release writes its own
  inputs = tm.reader_samples(tmp, blobs, STORE / "cpu")
  return blobs, inputs, own


# ---- the sample blobs -----------------------------------------------------------------------

def test_the_samples_hold_one_blob_of_each_layout_named_by_its_writer(samples):
  blobs, _, own = samples
  assert set(blobs) <= set(LAYOUTS) and "hlo-shardings" in blobs
  for layout, (producer, path) in blobs.items():
    assert envelope_layout(path.read_bytes()) == layout
    if path.is_relative_to(STORE):
      assert path.parent.parent.name.startswith("release_")
      assert path.parent.name.endswith(f"_jax-{producer}")
  assert blobs["hlo-shardings"][0] == "0.8.3 (built)"
  assert (own.parent / f"jax-{tm.LAST}.bin").read_bytes() == own.read_bytes()


def test_the_first_release_entry_of_a_layout_is_its_sample(samples, tmp_path, monkeypatch):
  blobs, _, own = samples
  short = blobs["short-device-count"][1].read_bytes()
  store = tmp_path / "store"
  for where in ("a/release_x/2026-01-01_jax-0.4.30", "b/release_x/2026-01-01_jax-0.4.26",
                "a/plain_case/2026-01-01_jax-0.4.20"):
    (store / where).mkdir(parents=True)
    (store / where / "exported.bin").write_bytes(short)
  monkeypatch.setattr(_envs, "ensure_venv", _running_python)
  monkeypatch.setattr(_table_samples, "WRITE_SAMPLE", _copier(tmp_path / "w.py", own))
  found = _table_samples.sample_blobs(tmp_path, "9.9.9", store)
  first = store / "a/release_x/2026-01-01_jax-0.4.30/exported.bin"
  assert found["short-device-count"] == ("0.4.30", first)
  own_layout = envelope_layout(own.read_bytes())
  if own_layout != "short-device-count":
    assert found[own_layout] == ("9.9.9", tmp_path / "jax-9.9.9.bin")
  assert found["hlo-shardings"][0] == "0.8.3 (built)"
  assert len(found) == len({"short-device-count", own_layout, "hlo-shardings"})


def test_the_scripts_inputs_name_a_blob_per_device_count_field_and_two_modules(samples):
  blobs, inputs, own = samples
  assert inputs["blobs"] == {layout: str(path) for layout, (_, path) in blobs.items()}
  assert set(inputs["device_count_blobs"]) == {"nr_devices", "nr_devices_short"}
  for field, path in inputs["device_count_blobs"].items():
    t = _verify.decode(Path(path).read_bytes())
    other = "nr_devices_short" if field == "nr_devices" else "nr_devices"
    assert t[getattr(_read._X, field)] == 1 and not t[getattr(_read._X, other)]
  newer = inputs["newer_module"]
  module = bytes(read_any_envelope(own.read_bytes())[0].mlir_module_serialized)
  assert Path(newer["path"]).read_bytes() == module
  assert newer["version"] == _mlir.artifact_version(module)
  sdy = inputs["sdy_module"]
  assert "sdy" in module_dialects(Path(sdy["path"]).read_bytes())
  assert sdy["version"] == _mlir.artifact_version(Path(sdy["path"]).read_bytes())
  assert (ROOT / sdy["from"]).is_dir() and Path(sdy["from"]).parent.name.startswith("release_")


def test_a_script_that_fails_is_an_error_with_its_last_words(tmp_path):
  quiet = script(tmp_path / "quiet.py", "")
  assert _table_samples.run_script(Path(sys.executable), quiet) == ""
  bad = script(tmp_path / "bad.py", "import sys\nsys.exit('no jax here')\n")
  with pytest.raises(RuntimeError, match=r"failed \(exit 1\):\nno jax here"):
    _table_samples.run_script(Path(sys.executable), bad)


def test_the_reader_policy_is_each_releases_reading_of_every_sample(samples, tmp_path,
                                                                   monkeypatch):
  blobs, _, _ = samples
  reader = script(tmp_path / "read_layouts.py", """
import json, sys
reads = {layout: {"status": "refuses_expired" if layout in EXPIRED else "reads",
                  "error": EXPIRED.get(layout)} for layout, path in json.loads(sys.argv[1]).items()
         if open(path, "rb").read(4)}
print(json.dumps({"jax": "?", "reads": reads}))
""", EXPIRED={"hlo-shardings": "ValueError: outside the backward-compatibility window"})
  asked, sampled = [], []
  monkeypatch.setattr(_envs, "ensure_venv",
                      lambda version: asked.append(version) or _running_python(version))
  monkeypatch.setattr(_reader_policy_measure, "sample_blobs",
                      lambda tmp, newest, store: sampled.append((newest, store)) or blobs)
  monkeypatch.setattr(_reader_policy_measure, "READ_LAYOUTS", reader)
  doc = _reader_policy_measure.measure(["0.4.36", "0.11.2"], STORE, "how")
  assert sampled == [("0.11.2", STORE)] and asked == ["0.4.36", "0.11.2"]
  policy = _reader_policy.parse(doc, "the measurement")
  assert list(doc["layouts"]) == [layout for layout in LAYOUTS if layout in blobs]
  assert policy.written_by == {layout: producer for layout, (producer, _) in blobs.items()}
  for release in ("0.4.36", "0.11.2"):
    got = policy.readers[release]
    assert set(got) == set(blobs)
    assert got["hlo-shardings"].status.value == "refuses_expired"
    assert {r.status.value for layout, r in got.items() if layout != "hlo-shardings"} == {"reads"}
  assert doc["method"] == "how" and doc["measured_on"] == datetime.date.today().isoformat()


# ---- the command ------------------------------------------------------------------------------

class Releases:
  """Stand-ins for each release's venv and measurements: ``unserved`` releases pip refuses,
  ``failing`` ones fail to measure, ``statuses`` is how every release reads every layout."""

  def __init__(self, samples, scratch):
    self.blobs, self.inputs, _ = samples
    self.scratch = scratch
    self.unserved: dict[str, str] = {}
    self.failing: set[str] = set()
    self.statuses = dict.fromkeys(self.blobs, "reads")
    self.fields = {"nr_devices": True, "nr_devices_short": True}
    self.measured: list[str] = []
    self.reread: list[str] = []
    self.sampled: list = []

  def python_for(self, version, scratch):
    assert scratch == self.scratch
    if version in self.unserved:
      return None, self.unserved[version], True
    d = _envs.venv_dir(version, scratch)
    (d / "bin").mkdir(parents=True, exist_ok=True)
    return d / "bin" / "python", None, True

  def _version(self, python, samples):
    assert samples is self.inputs
    return python.parent.parent.name.removeprefix("jax-")

  def measure_one(self, python, targets, samples):
    version = self._version(python, samples)
    assert targets[-1] == UNKNOWN
    self.measured.append(version)
    if version in self.failing:
      raise RuntimeError(f"jax {version} crashed")
    return measured(version, self.statuses, self.fields)

  def measure_reader(self, python, samples):
    self.reread.append(self._version(python, samples))
    got = measured("?", self.statuses, self.fields)
    del got["probes"]
    return got


@pytest.fixture
def releases(samples, tmp_path, monkeypatch):
  fake = Releases(samples, tmp_path / "scratch")
  monkeypatch.setattr(tm, "sample_blobs", lambda tmp, newest, store:
                      fake.sampled.append((newest, store)) or fake.blobs)
  monkeypatch.setattr(tm, "reader_samples", lambda tmp, blobs, store:
                      fake.sampled.append(store) or fake.inputs)
  monkeypatch.setattr(tm, "_python_for", fake.python_for)
  monkeypatch.setattr(tm, "measure_one", fake.measure_one)
  monkeypatch.setattr(tm, "measure_reader", fake.measure_reader)
  return fake


def _run(tmp_path, *argv):
  return tm.main([*argv, "--out", str(tmp_path / "table.json"),
                  "--scratch", str(tmp_path / "scratch")], STORE, "the test's method")


def _loaded(tmp_path) -> _table.ReleaseTable:
  return _table.parse(_table_doc(tmp_path), "the written table")


def _table_doc(tmp_path, releases=None):
  path = tmp_path / "table.json"
  if releases is not None:
    path.write_text(json.dumps({"format_version": _table.FORMAT_VERSION, "releases": releases}))
  return json.loads(path.read_text()) if path.exists() else None


def _unserved(date):
  return {"installable": False, "not_installable_reason": "pip: none", "date": date,
          "measured_on": "2026-01-01"}


def test_a_new_release_is_measured_on_its_date_and_a_rerun_skips_it_unless_forced(
    releases, tmp_path, capsys):
  assert _run(tmp_path, "--releases", "0.13.0", "--date", "2026-12-01") == 0
  doc = _table_doc(tmp_path)
  assert releases.sampled == [(tm.LAST, STORE), STORE / "cpu"]
  assert doc["method"] == "the test's method"
  assert doc["measured_on"] == datetime.date.today().isoformat()
  assert doc["layouts_written_by"] == {layout: p for layout, (p, _) in releases.blobs.items()}
  assert doc["layouts_serialization_version"] == {
      layout: read_serialization_version(path.read_bytes())
      for layout, (_, path) in releases.blobs.items()}
  assert doc["probed_targets"] == tm.probed_targets({})[:-1]
  f = _loaded(tmp_path).get("0.13.0")
  assert f.date == datetime.date(2026, 12, 1) and f.cpu_targets == {"lapack_spotrf_ffi"}
  assert set(f.serialization_versions_read) == set(doc["layouts_serialization_version"].values())
  assert not (tmp_path / "scratch" / "jax-0.13.0").exists()       # built here, so removed
  assert capsys.readouterr().out == (f"wrote {tmp_path / 'table.json'}: 1 releases measured, "
                                     "0 already in the table (1 releases in it)\n")

  releases.statuses["hlo-shardings"] = "refuses"
  _run(tmp_path, "--releases", "0.13.0")
  assert releases.measured == ["0.13.0"] and _table_doc(tmp_path) == doc
  _run(tmp_path, "--releases", "0.13.0", "--force", "--keep-venvs")
  assert releases.measured == ["0.13.0", "0.13.0"]
  again = _loaded(tmp_path).get("0.13.0")
  assert again.envelope_layouts["hlo-shardings"] == "refuses"
  assert (tmp_path / "scratch" / "jax-0.13.0").is_dir()             # kept as asked


def test_when_every_release_is_in_the_table_nothing_is_measured_or_written(releases, tmp_path,
                                                                          capsys):
  assert _run(tmp_path) == 0
  assert capsys.readouterr().out == (f"nothing to measure: the table lists no release from "
                                     f"{tm.FIRST} to {tm.LAST}; name one with --releases and "
                                     "--date\n")
  assert not (tmp_path / "table.json").exists()
  _table_doc(tmp_path, {"0.4.36": _unserved("2024-12-05"), "0.4.37": _unserved("2024-12-10")})
  table = tmp_path / "table.json"
  before, written_at = table.read_bytes(), table.stat().st_mtime_ns
  for argv in ((), ("--reader-only",), ("--releases", "0.4.37")):
    assert _run(tmp_path, *argv) == 0
    n = 1 if argv[:1] == ("--releases",) else 2
    assert capsys.readouterr().out == (f"nothing to measure: {n} releases already in the table "
                                       "(use --force to measure them again)\n")
  assert table.read_bytes() == before and table.stat().st_mtime_ns == written_at
  assert releases.measured == releases.reread == releases.sampled == []


def test_a_release_pip_cannot_install_is_listed_with_the_reason(releases, tmp_path):
  releases.unserved["0.4.32"] = "pip: no matching distribution on Python 3.11 to 3.13 (...)"
  _run(tmp_path, "--releases", "0.4.32", "--date", "2024-09-12")
  f = _loaded(tmp_path).get("0.4.32")
  assert not f.installable and not f.measured and f.date == datetime.date(2024, 9, 12)
  assert f.not_installable_reason == releases.unserved["0.4.32"]
  assert releases.measured == []


def test_reader_only_measures_the_reader_facts_again_and_keeps_the_probes(releases, tmp_path):
  header = {layout: 3 for layout in releases.blobs}
  record = {**tm.facts_from(measured("0.4.36", releases.statuses), "2026-01-01", header),
            "date": "2024-12-05"}
  _table_doc(tmp_path, {"0.4.36": record, "0.4.37": _unserved("2024-12-10")})
  releases.statuses["short-device-count"] = "refuses_expired"
  releases.fields = {"nr_devices": False, "nr_devices_short": True}
  _run(tmp_path, "--reader-only")
  assert releases.reread == ["0.4.36"] and releases.measured == []
  f = _loaded(tmp_path).get("0.4.36")
  assert f.envelope_layouts["short-device-count"] == "refuses_expired"
  assert f.expiry_days == BACKWARD_WINDOW_DAYS and f.needs_nr_devices_short
  assert f.cpu_targets == {"lapack_spotrf_ffi"} and f.measured_on == datetime.date(2026, 1, 1)
  assert not _loaded(tmp_path).get("0.4.37").installable
  assert not (tmp_path / "scratch" / "jax-0.4.37").exists()         # not built again


def test_a_measured_release_it_cannot_measure_again_keeps_its_record_and_fails_at_the_end(
    releases, tmp_path, capsys, caplog):
  header = {layout: 3 for layout in releases.blobs}
  records = {version: {**tm.facts_from(measured(version, releases.statuses), "2026-01-01",
                                       header), "date": day}
             for version, day in (("0.4.35", "2024-10-22"), ("0.4.36", "2024-12-05"))}
  _table_doc(tmp_path, records)
  reason = "pip: no matching distribution on Python 3.11 to 3.13 (default Python: gone)"
  releases.unserved["0.4.35"] = reason
  releases.statuses["short-device-count"] = "refuses_expired"
  caplog.set_level("INFO", logger=tm.__name__)
  assert _run(tmp_path, "--reader-only") == 1
  doc = _table_doc(tmp_path)
  assert doc["releases"]["0.4.35"] == records["0.4.35"]                  # untouched
  assert releases.reread == ["0.4.36"]                                   # the others still are
  assert _loaded(tmp_path).get("0.4.36").envelope_layouts["short-device-count"] == (
      "refuses_expired")
  assert f"jax 0.4.35: not measured again, its record is kept: {reason}" in caplog.text
  out, err = capsys.readouterr()
  assert f"not measured again (their records are kept): 0.4.35 ({reason})" in err
  assert out.startswith(f"wrote {tmp_path / 'table.json'}: 1 releases measured, 0 already")
  before = (tmp_path / "table.json").read_bytes()
  releases.unserved["0.4.36"] = reason
  assert _run(tmp_path, "--reader-only") == 1
  assert capsys.readouterr().out == f"nothing written: {tmp_path / 'table.json'} is as it was\n"
  assert (tmp_path / "table.json").read_bytes() == before
  # Measuring everything again with --force keeps the records it cannot measure again just so.
  assert _run(tmp_path, "--force") == 1
  assert (tmp_path / "table.json").read_bytes() == before
  assert "not measured again (their records are kept): 0.4.35" in capsys.readouterr().err


def test_a_wrong_missing_or_misplaced_date_stops_the_command_before_measuring(releases, tmp_path,
                                                                             capsys):
  _table_doc(tmp_path, {"0.4.37": _unserved("2024-12-10")})
  before = (tmp_path / "table.json").read_text()
  with pytest.raises(SystemExit) as stop:
    _run(tmp_path, "--releases", "0.4.37", "0.13.0", "--date", "2026-12-01")
  assert stop.value.code == 2 and "--date dates one release" in capsys.readouterr().err
  with pytest.raises(SystemExit, match="the table dates it 2024-12-10, not 2024-12-11"):
    _run(tmp_path, "--releases", "0.4.37", "--date", "2024-12-11", "--force")
  with pytest.raises(SystemExit, match="jax 0.13.0 is not in the table yet"):
    _run(tmp_path, "--releases", "0.4.37", "0.13.0", "--force")
  assert releases.measured == [] and releases.sampled == []
  assert (tmp_path / "table.json").read_text() == before


def test_each_release_is_written_once_measured_so_a_failure_keeps_those_before(releases,
                                                                               tmp_path):
  _table_doc(tmp_path, {"0.4.20": _unserved("2023-10-30"), "0.4.36": _unserved("2024-12-05"),
                        "0.4.37": _unserved("2024-12-10")})
  releases.failing.add("0.4.37")
  with pytest.raises(RuntimeError, match="jax 0.4.37 crashed"):
    _run(tmp_path, "--force")
  assert releases.measured == ["0.4.36", "0.4.37"]            # 0.4.20 is below the range
  doc = _table_doc(tmp_path)
  assert doc["releases"]["0.4.36"]["installable"] and not doc["releases"]["0.4.37"]["installable"]
  assert doc["releases"]["0.4.20"] == _unserved("2023-10-30")
  assert not (tmp_path / "scratch" / "jax-0.4.37").exists()   # removed though it failed


def test_a_table_the_loader_would_refuse_is_never_written(tmp_path):
  path = tmp_path / "table.json"
  path.write_text("{}\n")
  bad = {"format_version": _table.FORMAT_VERSION,
         "releases": {"0.4.37": {**_unserved("2024-12-10"), "not_installable_reason": None}}}
  with pytest.raises(ReleaseTableError, match="release 0.4.37: a release that is not installable "
                                              "needs its not_installable_reason"):
    tm._write(bad, path)
  assert path.read_text() == "{}\n"
  tm._write({**bad, "releases": {"0.4.37": _unserved("2024-12-10")}}, path)
  written = _table.parse(json.loads(path.read_text()), "x").get("0.4.37")
  assert written.not_installable_reason == "pip: none"
