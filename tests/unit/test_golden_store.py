"""The golden store: round trip, append-only, atomic writes, tamper detection, prune."""

import re
import dataclasses
import datetime
import io
import json
import os
import pickle
import zipfile

import ml_dtypes
import numpy as np
import pytest

from jaxport.errors import GoldenDataError
from jaxport.golden import EntryId, _entry, _npz, _store
from jaxport.golden._manifest import (
    FORMAT_VERSION, Comparison, CustomCallSignature, ImportSource, Manifest, Producer)
from jaxport.golden._entry import Entry
from jaxport.golden._store import GoldenStore
from jaxport._platforms import PLATFORMS

DAY = datetime.date(2026, 6, 1)


def make_manifest(**changes) -> Manifest:
  base = dict(
      case_id="qr_f32", family="qr", platform="cpu", record_date=DAY,
      producer=Producer(jax="0.10.2", jaxlib="0.10.2", jaxport="0.1.0", numpy="2.0.0",
                        scipy=None, python="3.11.7"),
      calling_convention_version=10, serialization_version=11,
      custom_call_targets=[CustomCallSignature(
          "lapack_sgeqrf_ffi", ["tensor<3x3xf32>"], ["tensor<3x3xf32>", "tensor<3xf32>"],
          {"api_version": "4"})],
      polymorphic_shapes=("b, 3", None), constraints=("b >= 2",), lowering_only=False,
      comparison=Comparison("allclose", 1e-6, 1e-7))
  base.update(changes)
  return Manifest(**base)


INPUTS = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False]),
          np.arange(3).astype(ml_dtypes.bfloat16), np.array(3 + 4j, np.complex128)]
EXPECTED = [np.linspace(0, 1, 5, dtype=np.float64), np.array([7], np.int8)]


@pytest.fixture
def store(tmp_path):
  return GoldenStore(tmp_path / "compat_data")


@pytest.fixture
def entry(store):
  return store.write_entry(make_manifest(), b"\x00blob\xff", INPUTS, EXPECTED, "module @m {}\n")


def resign(entry: Entry, **changes) -> None:
  """Rewrite the manifest with a valid digest and fresh file hashes (a careful forger)."""
  m = Manifest.from_json((entry.path / "manifest.json").read_text(), "test")
  files = {n: _entry.sha256_hex((entry.path / n).read_bytes()) for n in m.files}
  m = dataclasses.replace(m, files=files, **changes)
  (entry.path / "manifest.json").write_text(m.to_json())


def test_round_trip_keeps_every_array_dtype_shape_and_value(store, entry):
  assert entry.entry_id == EntryId.parse("cpu/qr/qr_f32/2026-06-01_jax-0.10.2")
  assert entry.path == store.root / "cpu/qr/qr_f32/2026-06-01_jax-0.10.2"
  assert sorted(os.listdir(entry.path)) == [
      "expected.npz", "exported.bin", "inputs.npz", "manifest.json", "module.mlir"]
  entry.verify()
  got = entry.inputs()
  assert [a.dtype for a in got] == [a.dtype for a in INPUTS]
  for a, b in zip(got, INPUTS):
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.astype(np.complex128), b.astype(np.complex128))
  for a, b in zip(entry.expected_outputs(), EXPECTED):
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
  assert entry.blob() == b"\x00blob\xff"
  assert entry.module_text() == "module @m {}\n"
  m = entry.manifest
  assert m == dataclasses.replace(make_manifest(), files=m.files, arrays=m.arrays)
  assert set(m.files) == {"expected.npz", "exported.bin", "inputs.npz", "module.mlir"}
  assert [s.dtype for s in m.arrays["inputs"]] == ["float32", "bool", "bfloat16", "complex128"]
  assert m.arrays["inputs"][0].shape == (2, 3)


def test_manifest_json_round_trip_and_digest():
  m = make_manifest(imported_from=ImportSource("jax:cpu_qr.py:data['f32']", {"nr_devices": 1}))
  text = m.to_json()
  assert Manifest.from_json(text, "m.json") == m
  d = json.loads(text)
  assert len(d["digest"]) == 64
  assert d["producer"]["scipy"] is None and d["constraints"] == ["b >= 2"]


def test_npz_bytes_are_deterministic(store):
  a, _ = _npz.encode_arrays(INPUTS, "x")
  b, _ = _npz.encode_arrays([np.array(x) for x in INPUTS], "x")
  assert a == b


def test_entries_are_sorted_and_filtered(store):
  for case, fam, plat in [("b", "qr", "cpu"), ("a", "qr", "cpu"), ("a", "eig", "cpu"),
                          ("a", "qr", "tpu")]:
    store.write_entry(make_manifest(case_id=case, family=fam, platform=plat), b"x", [], [], "")
  ids = [str(e.entry_id) for e in store.entries()]
  assert ids == sorted(ids) and len(ids) == 4
  assert ids == [str(i) for i in sorted(map(EntryId.parse, ids), key=_entry.entry_sort_key)]
  assert [list(e.entry_id.parts[:3]) for e in store.entries(platform="cpu", family="qr")] == [
      ["cpu", "qr", "a"], ["cpu", "qr", "b"]]
  assert [str(e.entry_id) for e in store.entries(platform="tpu")] == ["tpu/qr/a/2026-06-01_jax-0.10.2"]
  assert store.entry(EntryId.parse("tpu/qr/a/2026-06-01_jax-0.10.2")).inputs() == []


def test_entries_ignore_hidden_and_root_files_but_refuse_strays(store, entry):
  (store.root / "README.md").write_text("golden data")
  (entry.path.parent / ".tmp-2026-06-01_jax-0.10.2-abc").mkdir()
  assert store.entries() == [entry]
  (entry.path.parent / "notes.txt").write_text("x")
  with pytest.raises(GoldenDataError, match="notes.txt"):
    store.entries()


def test_a_same_day_entry_gets_the_next_revision_and_never_overwrites(store, entry):
  first = entry.manifest
  assert store.next_revision(make_manifest()).revision == 2
  second = store.write_entry(store.next_revision(make_manifest()), b"other", INPUTS, EXPECTED, "b")
  assert str(second.entry_id) == "cpu/qr/qr_f32/2026-06-01.2_jax-0.10.2"
  assert second.manifest.revision == 2 and second.revision == 2 and entry.revision == 1
  assert json.loads((second.path / "manifest.json").read_text())["revision"] == 2
  assert "revision" not in json.loads((entry.path / "manifest.json").read_text())
  assert entry.manifest == first and entry.blob() == b"\x00blob\xff"
  assert [e.entry_id for e in store.same_day(make_manifest())] == [entry.entry_id, second.entry_id]
  # Another jax or another day starts again without a revision.
  other = make_manifest(producer=dataclasses.replace(first.producer, jax="0.10.3"))
  assert store.next_revision(other).revision is None
  assert store.next_revision(make_manifest(record_date=DAY + datetime.timedelta(1))).revision is None
  with pytest.raises(GoldenDataError, match="append-only"):
    store.write_entry(make_manifest(revision=2), b"third", INPUTS, EXPECTED, "c")


def test_revisions_sort_after_the_entry_they_follow(store):
  ids = []
  for revision in (None, 2, 10, 3):
    ids.append(store.write_entry(make_manifest(revision=revision), b"x", [], [], "").entry_id)
  store.write_entry(make_manifest(record_date=DAY - datetime.timedelta(1)), b"x", [], [], "")
  older_jax = dataclasses.replace(make_manifest().producer, jax="0.9.2")
  store.write_entry(make_manifest(producer=older_jax), b"x", [], [], "")
  assert [e.entry_id.folder for e in store.entries()] == [
      "2026-05-31_jax-0.10.2", "2026-06-01_jax-0.9.2", "2026-06-01_jax-0.10.2",
      "2026-06-01.2_jax-0.10.2", "2026-06-01.3_jax-0.10.2", "2026-06-01.10_jax-0.10.2"]
  assert store.next_revision(make_manifest()).revision == 11


def test_superseded_entries_are_older_ones_of_a_case_by_the_same_release(store):
  older_jax = dataclasses.replace(make_manifest().producer, jax="0.9.2")
  write = lambda **m: store.write_entry(make_manifest(**m), b"x", [], [], "").entry_id  # noqa: E731
  first = write(record_date=DAY - datetime.timedelta(3))
  second = write()
  third = write(revision=2)
  other_release = write(producer=older_jax, record_date=DAY - datetime.timedelta(9))
  other_case = write(case_id="lu_f32", record_date=DAY - datetime.timedelta(9))
  assert [e.entry_id for e in store.superseded()] == [first, second]
  assert store.prune(100, today=DAY, superseded=True) == store.superseded()
  removed = store.prune(100, today=DAY, superseded=True, dry_run=False)
  assert [e.entry_id for e in removed] == [first, second]
  assert sorted(e.entry_id for e in store.entries()) == sorted([third, other_release, other_case])
  assert store.superseded() == []


@pytest.mark.parametrize("name", ["2026-06-01.1_jax-0.10.2", "2026-06-01.02_jax-0.10.2",
                                  "2026-06-01.1000_jax-0.10.2", "2026-06-01._jax-0.10.2"])
def test_a_malformed_revision_in_a_directory_name_is_refused(store, entry, name):
  os.rename(entry.path, entry.path.parent / name)
  with pytest.raises(GoldenDataError, match=r"is not '<YYYY-MM-DD>\[.<revision>\]_jax-<version>'"):
    store.entries()


def test_an_entry_renamed_to_another_revision_is_refused(store, entry):
  second = store.write_entry(make_manifest(revision=2), b"x", INPUTS, EXPECTED, "")
  os.rename(second.path, second.path.parent / "2026-06-01.3_jax-0.10.2")
  with pytest.raises(GoldenDataError, match="lies in"):
    store.entry(EntryId.parse("cpu/qr/qr_f32/2026-06-01.3_jax-0.10.2")).manifest


def test_lowering_only_entry_has_no_expected_file(store):
  e = store.write_entry(make_manifest(lowering_only=True), b"b", [np.ones(2)], None, "m")
  assert "expected.npz" not in os.listdir(e.path)
  assert e.expected_outputs() is None
  e.verify()
  with pytest.raises(GoldenDataError, match="lowering_only"):
    store.write_entry(make_manifest(case_id="z", lowering_only=True), b"b", [], [], "m")
  with pytest.raises(GoldenDataError, match="lowering_only"):
    store.write_entry(make_manifest(case_id="z"), b"b", [], None, "m")


def test_append_only_refuses_to_overwrite(store, entry):
  before = {n: (entry.path / n).read_bytes() for n in os.listdir(entry.path)}
  with pytest.raises(GoldenDataError, match="append-only"):
    store.write_entry(make_manifest(), b"other", INPUTS, EXPECTED, "other")
  assert {n: (entry.path / n).read_bytes() for n in os.listdir(entry.path)} == before


def test_failure_mid_write_leaves_nothing(store, monkeypatch):
  real = _store._write_file
  calls = []

  def failing(path, data):
    calls.append(path.name)
    if len(calls) == 3:
      raise OSError("disk full")
    real(path, data)

  monkeypatch.setattr(_store, "_write_file", failing)
  with pytest.raises(GoldenDataError, match="cannot write into the golden store .disk full"):
    store.write_entry(make_manifest(), b"b", INPUTS, EXPECTED, "m")
  case_dir = store.root / "cpu/qr/qr_f32"
  assert os.listdir(case_dir) == []
  assert store.entries() == []
  monkeypatch.setattr(_store, "_write_file", real)
  assert store.write_entry(make_manifest(), b"b", INPUTS, EXPECTED, "m").blob() == b"b"


def test_an_entry_is_durable_before_its_rename_with_two_waits(store, monkeypatch):
  events, batches = [], []
  real_sync, real_batch, real_rename = _store._fsync_path, _store._sync_files, os.rename

  def batch(paths):
    batches.append([p.name for p in paths])
    real_batch(paths)

  monkeypatch.setattr(_store, "_fsync_path", lambda p: events.append(("sync", p)) or real_sync(p))
  monkeypatch.setattr(_store, "_sync_files", batch)
  monkeypatch.setattr(_store.os, "rename",
                      lambda a, b: events.append(("rename", str(b))) or real_rename(a, b))
  entry = store.write_entry(make_manifest(), b"b", INPUTS, EXPECTED, "m")
  renamed = events.index(("rename", str(entry.path)))
  before = [p for kind, p in events[:renamed] if kind == "sync"]
  # Every file and the temporary folder reach the disk before the rename, in one batch
  # of concurrent syncs; the case folder is synced once after it.
  # (The syncs run on threads, so their order is not fixed.)
  folders = [p for p in before if p.name.startswith(".tmp-")]
  assert len(folders) == 1 and all(p.parent == folders[0] for p in before if p != folders[0])
  assert sorted(p.name for p in before if p != folders[0]) == sorted(os.listdir(entry.path))
  assert len(batches) == 1 and len(batches[0]) == len(before) == len(os.listdir(entry.path)) + 1
  assert [p for kind, p in events[renamed + 1:] if kind == "sync"] == [entry.path.parent]


def test_failure_at_rename_leaves_nothing(store, monkeypatch):
  def boom(src, dst):
    raise OSError("rename failed")

  monkeypatch.setattr(_store.os, "rename", boom)
  with pytest.raises(GoldenDataError, match="cannot write into the golden store .rename failed"):
    store.write_entry(make_manifest(), b"b", INPUTS, EXPECTED, "m")
  assert os.listdir(store.root / "cpu/qr/qr_f32") == []


def test_write_refuses_object_and_string_arrays(store):
  with pytest.raises(GoldenDataError, match=r"inputs\[1\].*object"):
    store.write_entry(make_manifest(), b"b", [np.ones(1), np.array([{}], dtype=object)], [], "m")
  with pytest.raises(GoldenDataError, match="numeric arrays only"):
    store.write_entry(make_manifest(), b"b", [], [np.array(["a"])], "m")
  assert store.entries() == []


@pytest.mark.parametrize("name", ["exported.bin", "inputs.npz", "expected.npz", "module.mlir"])
def test_changed_byte_is_detected_naming_the_file(entry, name):
  path = entry.path / name
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0x01
  path.write_bytes(bytes(data))
  with pytest.raises(GoldenDataError, match=rf"{name}: sha256 mismatch: the manifest records [0-9a-f]{{64}}, the file \(\d+ bytes\) has [0-9a-f]{{64}}"):
    entry.verify()


@pytest.mark.parametrize("name,reader", [("exported.bin", "blob"), ("inputs.npz", "inputs"),
                                         ("expected.npz", "expected_outputs"),
                                         ("module.mlir", "module_text")])
def test_truncated_file_fails_its_reader(entry, name, reader):
  path = entry.path / name
  path.write_bytes(path.read_bytes()[:-1])
  with pytest.raises(GoldenDataError, match=rf"{name}: sha256 mismatch"):
    getattr(entry, reader)()


@pytest.mark.parametrize("name", ["exported.bin", "inputs.npz", "expected.npz", "module.mlir",
                                  "manifest.json"])
def test_missing_file_is_named(entry, name):
  (entry.path / name).unlink()
  with pytest.raises(GoldenDataError, match=rf"{name}: file is missing"):
    entry.verify()


def test_extra_file_is_named(entry):
  (entry.path / "notes.txt").write_text("hello")
  with pytest.raises(GoldenDataError, match="notes.txt: unexpected file"):
    entry.blob()


def test_symlinked_file_is_refused(entry, tmp_path):
  target = tmp_path / "elsewhere.bin"
  target.write_bytes((entry.path / "exported.bin").read_bytes())
  (entry.path / "exported.bin").unlink()
  (entry.path / "exported.bin").symlink_to(target)
  with pytest.raises(GoldenDataError, match="exported.bin: not a regular file"):
    entry.blob()


@pytest.mark.parametrize("field,value,match", [
    ("comparison", {"mode": "allclose", "rtol": 1.0, "atol": 1e-7}, "digest mismatch"),
    ("calling_convention_version", 9, "digest mismatch"),
    ("custom_call_targets", [], "digest mismatch"),
    ("lowering_only", True, r"files: expected exactly \['exported.bin', 'inputs.npz', 'module.mlir'\]"),
])
def test_edited_manifest_field_is_refused(entry, field, value, match):
  path = entry.path / "manifest.json"
  d = json.loads(path.read_text())
  d[field] = value
  path.write_text(json.dumps(d))
  with pytest.raises(GoldenDataError, match=rf"manifest.json: {match}"):
    entry.inputs()


def test_manifest_disagreeing_with_directory_is_refused(entry):
  resign(entry, case_id="other_case")
  with pytest.raises(GoldenDataError, match="manifest.json: the manifest describes 'cpu/qr/other_case"):
    entry.verify()


@pytest.mark.parametrize("text,match", [
    ("{not json", "invalid JSON at line 1 column 2"),
    ("[1, 2]", "the top level: expected a JSON object"),
    ('{"a": 1, "a": 2}', r"duplicate key\(s\) \['a'\]"),
    ('{"x": NaN}', "non-standard JSON constant NaN"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_bad_json_is_reported_with_the_file(entry, text, match):
  path = entry.path / "manifest.json"
  path.write_bytes(text if isinstance(text, bytes) else text.encode())
  with pytest.raises(GoldenDataError, match=rf"qr_f32/2026-06-01_jax-0.10.2: manifest.json: {match}"):
    entry.manifest


@pytest.mark.parametrize("field,value,match", [
    ("platform", "gpu", rf"platform: expected one of {re.escape(str(list(PLATFORMS)))}, got 'gpu'"),
    ("record_date", "2026-6-1", "record_date: expected an ISO date"),
    ("case_id", "../escape", "case_id: expected a name"),
    ("format_version", 99, "format_version 99 is newer than this jaxport reads"),
    ("serialization_version", "11", "serialization_version: expected a non-negative integer"),
    ("files", {"exported.bin": "xyz"}, r"files\['exported.bin'\]: expected 64 lowercase hex"),
    ("comparison", {"mode": "allclose", "rtol": -1, "atol": 0}, "comparison.rtol: expected a finite number"),
    ("unexpected", 1, "manifest: unknown key 'unexpected'"),
    ("revision", 1, "revision: expected an integer from 2 to 999"),
    ("revision", "2", "revision: expected an integer from 2 to 999"),
    ("revision", True, "revision: expected an integer from 2 to 999"),
    ("jax_config", {"jax_enable_x64": 1}, "jax_config: expected an object of true/false"),
])
def test_every_field_is_validated(field, value, match):
  d = json.loads(make_manifest().to_json())
  d.pop("digest")
  d[field] = value
  d["digest"] = "0" * 64
  with pytest.raises(GoldenDataError, match=match):
    Manifest.from_json(json.dumps(d), "m.json")


def test_missing_field_and_missing_digest_are_named():
  d = json.loads(make_manifest().to_json())
  del d["producer"]
  with pytest.raises(GoldenDataError, match="manifest: missing producer"):
    Manifest.from_json(json.dumps(d), "m.json")
  del d["digest"]
  with pytest.raises(GoldenDataError, match="m.json: field 'digest' is missing"):
    Manifest.from_json(json.dumps(d), "m.json")


def _npz_with(member_bytes: dict[str, bytes]) -> bytes:
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, "w") as zf:
    for name, data in member_bytes.items():
      zf.writestr(name, data)
  return buf.getvalue()


def _npy(arr, allow_pickle=False) -> bytes:
  b = io.BytesIO()
  np.lib.format.write_array(b, arr, allow_pickle=allow_pickle)
  return b.getvalue()


class Boom:
  def __reduce__(self):
    return (os.system, ("echo pwned > /dev/null",))


@pytest.mark.parametrize("members,match", [
    ({"arr_0.npy": _npy(np.array([Boom()], dtype=object), allow_pickle=True)},
     "cannot be read without unpickling"),
    ({"arr_0.npy": pickle.dumps([1, 2])}, "cannot be read without unpickling or is malformed"),
    ({"arr_0.npy": _npy(np.ones(2)), "payload.pkl": pickle.dumps(1)}, "expected members"),
    ({"arr_0.npy": _npy(np.ones(3, np.int64))}, r"holds int64 \(3,\), but the manifest records"),
])
def test_npz_that_needs_pickle_or_disagrees_is_refused_even_with_valid_hashes(
    entry, monkeypatch, members, match):
  (entry.path / "expected.npz").write_bytes(_npz_with(members))
  resign(entry, arrays={"inputs": entry.manifest.arrays["inputs"],
                        "expected": entry.manifest.arrays["expected"][:1]})
  ran = []
  monkeypatch.setattr(os, "system", lambda *a: ran.append(a))
  with pytest.raises(GoldenDataError, match=rf"expected.npz: .*{match}"):
    entry.expected_outputs()
  with pytest.raises(GoldenDataError, match="expected.npz"):
    entry.verify()
  assert ran == []


def test_prune_dry_run_then_removes_only_expired(store):
  old = store.write_entry(make_manifest(record_date=datetime.date(2025, 1, 1)), b"b", [], [], "m")
  edge = store.write_entry(make_manifest(record_date=DAY - datetime.timedelta(days=180)),
                           b"b", [], [], "m")
  new = store.write_entry(make_manifest(case_id="other", record_date=DAY), b"b", [], [], "m")
  assert store.prune(180, today=DAY) == [old]
  assert len(store.entries()) == 3
  assert store.prune(180, today=DAY, dry_run=False) == [old]
  assert store.entries() == [new, edge]
  assert store.prune(179, today=DAY, dry_run=False) == [edge]
  assert store.entries() == [new]
  assert not (store.root / "cpu/qr/qr_f32").exists()
  with pytest.raises(GoldenDataError, match="non-negative integer"):
    store.prune(-1, today=DAY)


def test_losing_a_write_race_reports_the_existing_entry(store, monkeypatch):
  real_rename = os.rename

  def racing_rename(src, dst):
    # Another writer finishes the same entry just before us.
    os.makedirs(os.path.join(dst, "from_other_writer"))
    real_rename(src, dst)

  monkeypatch.setattr(_store.os, "rename", racing_rename)
  with pytest.raises(GoldenDataError, match="append-only"):
    store.write_entry(make_manifest(), b"b", INPUTS, EXPECTED, "m")
  assert os.listdir(store.root / "cpu/qr/qr_f32") == ["2026-06-01_jax-0.10.2"]


def test_a_snapshot_answers_as_the_entry_from_the_bytes_it_verified(entry):
  snap = entry.snapshot()
  assert snap.manifest == entry.manifest and snap.entry_id == entry.entry_id
  assert snap.blob() == entry.blob() and snap.module_text() == entry.module_text()
  assert snap.shardings() is None
  for got, want in ((snap.inputs(), entry.inputs()),
                    (snap.expected_outputs(), entry.expected_outputs())):
    assert [a.dtype for a in got] == [a.dtype for a in want]
    for a, b in zip(got, want):
      np.testing.assert_array_equal(a, b)
  snap.inputs()[0][...] = -1  # each call hands out its own arrays
  np.testing.assert_array_equal(snap.inputs()[0], INPUTS[0])
  (entry.path / "exported.bin").write_bytes(b"changed after the snapshot")
  assert snap.blob() == b"\x00blob\xff"
  with pytest.raises(GoldenDataError, match="exported.bin: sha256 mismatch"):
    entry.snapshot()


def test_looking_an_entry_up_by_its_text_is_a_type_error_naming_the_parser(store, entry):
  text = str(entry.entry_id)
  with pytest.raises(TypeError, match=r"takes an EntryId, not str.*EntryId\.parse"):
    store.entry(text)
  assert store.entry(EntryId.parse(text)) == entry
  with pytest.raises(GoldenDataError, match="bad entry id"):
    store.entry(EntryId("cpu", "..", "qr_f32", "2026-06-01_jax-0.10.2"))


def test_an_adopted_entry_keeps_the_staged_bytes_and_is_not_encoded_again(tmp_path, entry,
                                                                           monkeypatch):
  target = GoldenStore(tmp_path / "target")
  staged = entry.snapshot()

  def no_encoding(*args, **kwargs):
    raise AssertionError("adopting an entry encoded its arrays again")

  monkeypatch.setattr(_store, "encode_arrays", no_encoding)
  adopted = target.adopt(staged)
  assert adopted.entry_id == entry.entry_id
  for name in [*staged.manifest.files, "manifest.json"]:
    assert (adopted.path / name).read_bytes() == (entry.path / name).read_bytes(), name
  revised = target.adopt(staged, target.next_revision(staged.manifest))
  assert revised.manifest.revision == 2 and revised.manifest.files == staged.manifest.files
  for name in staged.manifest.files:
    assert (revised.path / name).read_bytes() == (entry.path / name).read_bytes(), name
  with pytest.raises(GoldenDataError, match="already exists"):
    target.adopt(staged)


def test_the_manifest_is_parsed_once_per_version_of_its_file(entry, monkeypatch):
  parses = []
  parse = Manifest.from_json
  monkeypatch.setattr(_store.Manifest, "from_json",
                      lambda text, where: parses.append(where) or parse(text, where))
  first = entry.manifest
  assert entry.manifest is first and entry.manifest is first
  assert len(parses) == 1
  # A manifest written anew (another file in its place) is read again, and checked again.
  path = entry.path / "manifest.json"
  text = path.read_text()
  path.unlink()
  path.write_text(text.replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 99'))
  with pytest.raises(GoldenDataError, match="format_version"):
    entry.manifest
  assert len(parses) == 2


def test_an_entry_folders_id_is_its_last_four_path_parts(store, entry):
  assert EntryId.from_folder(entry.path) == EntryId.parse(str(entry.entry_id))
  assert EntryId.from_folder("store/cpu/linalg/qr_f32/2026-06-01_jax-0.10.2") == EntryId(
      "cpu", "linalg", "qr_f32", "2026-06-01_jax-0.10.2")
  with pytest.raises(ValueError, match="not an entry folder"):
    EntryId.from_folder("/qr_f32/2026-06-01_jax-0.10.2")


def test_entry_ids_sort_as_their_texts_do():
  texts = ["a/f/c/2026-06-01_jax-0.10.2", "a-x/f/c/2026-06-01_jax-0.10.2",
           "a/f-b/c/2026-06-01_jax-0.10.2", "a/f/c_2/2026-06-01_jax-0.10.2",
           "a/f/c/2026-06-01.2_jax-0.10.2"]
  ids = [EntryId.parse(t) for t in texts]
  assert [str(i) for i in sorted(ids)] == sorted(texts)
  # As parts, ("a", ...) would come first; as text "a-x/" comes before "a/".
  assert EntryId.parse("a-x/f/c/d") < EntryId.parse("a/f/c/d")
  assert max(ids) == EntryId.parse(max(texts))


def test_an_entry_id_compared_with_text_is_a_type_error_naming_the_parser():
  with pytest.raises(TypeError, match=r"EntryId\.parse"):
    EntryId.parse("a/f/c/d") < "a/f/c/e"
  assert EntryId.parse("a/f/c/d") != "a/f/c/d"
