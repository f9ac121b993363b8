"""The golden store and its manifests refuse what is out of place with a GoldenDataError naming
it and the fix: folders and files where entries belong, links and files on an entry's path,
a day with every revision taken, bad arguments; and a prune that fails part-way never leaves
a half-removed entry in view."""

import dataclasses
import json
import logging
import os
import re
import time

import pytest

from jaxport.errors import GoldenDataError
from jaxport.golden import EntryId, _store
from jaxport.golden._manifest import MAX_REVISION, ImportSource, Manifest
from jaxport.golden._store import GoldenStore
from test_golden_store import DAY, EXPECTED, INPUTS, make_manifest

ENTRY_DIR = "2026-06-01_jax-0.10.2"
CASE = "cpu/qr/qr_f32"


@pytest.fixture
def store(tmp_path):
  return GoldenStore(tmp_path / "compat_data")


def write(store, **changes):
  return store.write_entry(make_manifest(**changes), b"blob", INPUTS, EXPECTED, "module {}\n")


def test_a_store_names_its_root():
  assert repr(GoldenStore("some/where")) == "GoldenStore('some/where')"


def test_listing_an_unknown_platform_is_refused(store):
  with pytest.raises(GoldenDataError, match=r"unknown platform 'tpu9'; expected one of \["):
    store.listing("tpu9")


def test_a_folder_that_is_not_a_platform_is_a_listing_problem(store):
  entry = write(store)
  (store.root / "notes").mkdir()
  found, problems = store.listing()
  assert found == [entry]
  assert [(p.path.name, p.message) for p in problems] == [(
      "notes", f"{store.root / 'notes'}: unexpected directory in the golden store; platform "
      "directories are " + str(list(_store.PLATFORMS)) + ".")]
  with pytest.raises(GoldenDataError, match="notes: unexpected directory"):
    store.entries()


def test_a_stray_folder_or_file_in_a_case_is_refused_when_naming_a_revision(store):
  write(store)
  case = store.root / CASE
  (case / "scratch").mkdir()
  with pytest.raises(GoldenDataError, match=r"scratch: entry directory name is not"):
    store.next_revision(make_manifest())
  (case / "scratch").rmdir()
  (case / "notes.txt").write_text("x")
  with pytest.raises(GoldenDataError, match=r"notes.txt: unexpected file in the golden store"):
    store.next_revision(make_manifest())


def test_a_day_with_every_revision_taken_is_refused(store):
  case = store.root / CASE
  case.mkdir(parents=True)
  (case / ENTRY_DIR).mkdir()
  for revision in range(2, MAX_REVISION + 1):
    (case / f"2026-06-01.{revision}_jax-0.10.2").mkdir()
  with pytest.raises(GoldenDataError, match=(
      rf"{MAX_REVISION} entries of case qr_f32 were recorded on 2026-06-01 with jax 0.10.2, "
      rf"the most a day holds \({MAX_REVISION}\); prune some")):
    store.next_revision(make_manifest())


def test_a_file_on_an_entrys_path_is_refused(store):
  store.root.mkdir()
  (store.root / "cpu").write_text("not a folder")
  with pytest.raises(GoldenDataError, match=r"cpu: not a directory; the golden store holds"):
    store.entry(EntryId.parse(f"{CASE}/{ENTRY_DIR}"))


def test_a_name_too_long_to_look_up_is_refused_naming_it(store):
  write(store)
  long_case = "c" * 300
  with pytest.raises(GoldenDataError, match=rf"{long_case}: cannot be read \("):
    store.entry(EntryId.parse(f"cpu/qr/{long_case}/{ENTRY_DIR}"))


def test_write_refuses_a_blob_or_module_text_of_the_wrong_type(store):
  with pytest.raises(GoldenDataError, match=rf"{CASE}/{ENTRY_DIR}: blob must be bytes, got str"):
    store.write_entry(make_manifest(), "blob", INPUTS, EXPECTED, "m")
  with pytest.raises(GoldenDataError, match=r"module_text must be str, got bytes"):
    store.write_entry(make_manifest(), b"blob", INPUTS, EXPECTED, b"m")
  assert not store.root.exists()


def test_a_folder_another_writer_made_meanwhile_is_used(store, monkeypatch):
  real_mkdir = os.mkdir
  family = store.root / "cpu" / "qr"
  store.root.mkdir()

  def beaten(path, *args):
    real_mkdir(path, *args)
    if path == family:  # the other writer made it first
      raise FileExistsError(path)

  monkeypatch.setattr(_store.os, "mkdir", beaten)
  entry = write(store)
  monkeypatch.undo()
  assert store.entries() == [entry]


def test_a_folder_that_cannot_be_made_is_an_unwritable_store(store, monkeypatch):
  store.root.mkdir()
  real_mkdir = os.mkdir

  def refused(path, *args):
    if path == store.root / "cpu":
      raise PermissionError(13, "Permission denied", str(path))
    real_mkdir(path, *args)

  monkeypatch.setattr(_store.os, "mkdir", refused)
  with pytest.raises(GoldenDataError, match=(
      r"compat_data/cpu: cannot write into the golden store \(Permission denied\). Make the "
      "store writable, or pass another store.")):
    write(store)


def test_an_entry_finished_by_another_writer_during_the_sync_wins(store, monkeypatch):
  real_sync = _store._sync_files

  def other_writer_first(paths):
    real_sync(paths)
    (store.root / CASE / ENTRY_DIR).mkdir()

  monkeypatch.setattr(_store, "_sync_files", other_writer_first)
  with pytest.raises(GoldenDataError, match="already exists. The golden store is append-only"):
    write(store)
  assert os.listdir(store.root / CASE) == [ENTRY_DIR]


def test_prune_without_a_rule_selects_nothing_and_says_which_rules_there_are(store):
  with pytest.raises(GoldenDataError, match=(
      "prune: no entry selected: give older_than_days, dated_in_future, superseded or cases")):
    store.prune(None, today=DAY)


def test_a_failed_rename_leaves_the_entry_whole_and_no_hidden_folder(store, monkeypatch):
  entry = write(store)

  def refused(src, dst):
    raise OSError(16, "Device or resource busy")

  monkeypatch.setattr(_store.os, "rename", refused)
  with pytest.raises(OSError, match="busy"):
    store.remove_entry(entry)
  monkeypatch.undo()
  assert os.listdir(store.root / CASE) == [ENTRY_DIR]
  entry.verify()


def test_a_pruned_entry_whose_hidden_folder_stays_is_gone_with_a_warning(store, monkeypatch,
                                                                          caplog):
  entry = write(store)
  other = write(store, case_id="kept")

  def refused(path, *args, **kwargs):
    raise OSError(39, "Directory not empty")

  monkeypatch.setattr(_store.shutil, "rmtree", refused)
  with caplog.at_level(logging.WARNING, logger=_store.logger.name):
    store.remove_entry(entry)
  assert store.entries() == [other]
  (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
  assert re.fullmatch(rf"{CASE}/{ENTRY_DIR}: removed from the store, but its hidden folder "
                      r".*\.tmp-prune-\w+ could not be deleted \(Directory not empty\); delete it "
                      "by hand.", warning)


def test_an_empty_folder_left_above_a_pruned_entry_is_harmless(store, monkeypatch):
  entry = write(store)

  def refused(self):
    raise OSError(16, "Device or resource busy")

  monkeypatch.setattr(_store.Path, "rmdir", refused)
  store.remove_entry(entry)
  monkeypatch.undo()
  assert store.entries() == [] and (store.root / CASE).is_dir()


def test_a_stale_temporary_folder_that_cannot_be_removed_is_only_logged(store, monkeypatch,
                                                                         caplog):
  write(store)
  case = store.root / CASE
  (case / ".tmp-old").mkdir()
  (case / ".tmp-file").write_text("not a folder")

  def refused(path, *args, **kwargs):
    raise OSError(16, "Device or resource busy")

  monkeypatch.setattr(_store.shutil, "rmtree", refused)
  with caplog.at_level(logging.WARNING, logger=_store.logger.name):
    assert _store._remove_stale_temporaries(case, now=time.time() + 3600) == []
  assert [r.getMessage() for r in caplog.records] == [
      f"cannot remove the stale temporary directory {case / '.tmp-old'}: "
      "[Errno 16] Device or resource busy"]
  monkeypatch.undo()
  assert _store._remove_stale_temporaries(case, now=time.time() + 3600) == [case / ".tmp-old"]


# --- manifests ------------------------------------------------------------------------------

def test_a_manifest_is_hashable_and_equal_ones_hash_alike():
  m = make_manifest(imported_from=ImportSource("jax-testdata", {"b": 1, "a": None}))
  again = make_manifest(imported_from=ImportSource("jax-testdata", {"a": None, "b": 1}))
  assert hash(m) == hash(again) and hash(m.imported_from) == hash(again.imported_from)
  assert len({m, again, make_manifest()}) == 2


def test_a_record_date_given_as_text_is_read_as_a_date_or_refused():
  assert make_manifest(record_date="2026-06-01").record_date == DAY
  with pytest.raises(GoldenDataError, match=(
      r"a Manifest under construction: record_date: expected an ISO date 'YYYY-MM-DD', "
      r"got '1 June 2026'")):
    make_manifest(record_date="1 June 2026")


SHA = "0" * 64
SIG = {"target": "t", "operand_types": [], "result_types": [], "attributes": {}}
TOL = {"path": "[0]", "dtype": "float32", "rtol": 0.0, "atol": 0.0}
SPEC = {"dtype": "float32", "shape": [2]}
ALL_FILES = {"exported.bin": SHA, "inputs.npz": SHA, "module.mlir": SHA, "expected.npz": SHA}


@pytest.mark.parametrize("changes,match", [
    ({"tolerances": "loose"}, r"tolerances: expected a list of \{path, dtype, rtol, atol\}"),
    ({"tolerances": [{**TOL, "path": ""}]}, r"tolerances\[0\]\.path: expected a non-empty string"),
    ({"tolerances": [{**TOL, "atol": -1}]}, r"tolerances\[0\]\.atol: expected a finite number"),
    ({"tolerances": [TOL, TOL]}, r"tolerances: expected one entry per output path"),
    ({"tolerances": [TOL], "arrays": {"expected": [SPEC, SPEC]}},
     r"tolerances: expected one entry per expected output \(2\), got '1 entries'"),
    ({"producer": {"jax": "0.10 2", "jaxlib": None, "jaxport": None, "numpy": None,
                   "scipy": None, "python": None}},
     r"producer\.jax: expected a version string or null, got '0.10 2'"),
    ({"calling_convention_version": -1},
     "calling_convention_version: expected a non-negative integer"),
    ({"custom_call_targets": {"t": SIG}}, "custom_call_targets: expected a list"),
    ({"custom_call_targets": [{**SIG, "target": ""}]},
     r"custom_call_targets\[0\]\.target: expected a non-empty string"),
    ({"custom_call_targets": [{**SIG, "attributes": {"api_version": 4}}]},
     r"custom_call_targets\[0\]\.attributes: expected an object of strings"),
    ({"lowering_only": "no"}, "lowering_only: expected true or false"),
    ({"comparison": {"mode": "", "rtol": 0, "atol": 0}}, "comparison.mode: expected a checker name"),
    ({"files": ["exported.bin"]}, "files: expected an object of file name -> sha256"),
    ({"files": {"notes.txt": SHA}}, r"files: expected names among \["),
    ({"files": {"exported.bin": SHA}}, (
        r"files: expected exactly \['expected.npz', 'exported.bin', 'inputs.npz', "
        r"'module.mlir'\] \(lowering_only=False\)")),
    ({"arrays": []}, "arrays: expected an object"),
    ({"arrays": {"outputs": []}}, r"arrays: expected keys among \['expected', 'inputs'\]"),
    ({"files": ALL_FILES, "arrays": {"inputs": []}},
     r"arrays: expected keys \['expected', 'inputs'\], got \['inputs'\]"),
    ({"arrays": {"inputs": "x"}}, "arrays.inputs: expected a list"),
    ({"arrays": {"inputs": [{**SPEC, "dtype": ""}]}}, r"arrays.inputs\[0\]\.dtype: expected a dtype"),
    ({"arrays": {"inputs": [{**SPEC, "shape": [-1]}]}},
     r"arrays.inputs\[0\]\.shape: expected a list of non-negative integers"),
    ({"imported_from": {"source": "", "details": {}}},
     "imported_from.source: expected a non-empty string"),
    ({"imported_from": {"source": "s", "details": {"devices": [1]}}},
     "imported_from.details: expected an object of JSON scalars"),
])
def test_every_nested_field_is_validated(changes, match):
  d = json.loads(make_manifest().to_json())
  d.pop("digest")
  d.update(changes)
  d["digest"] = "0" * 64
  with pytest.raises(GoldenDataError, match=rf"m.json: {match}"):
    Manifest.from_json(json.dumps(d), "m.json")


def test_a_manifest_with_every_field_right_reads_back():
  m = dataclasses.replace(make_manifest(), imported_from=ImportSource("s", {"n": 1}))
  assert Manifest.from_json(m.to_json(), "m.json") == m
