"""Hypothesis: real golden entries mutated at random (manifest fields, file names, links, npz
members, dates, bytes) give only the documented clean outcomes.

Reading the mutated store (listing, lookup, verify, every reader, deserialize,
prune's dry run) returns or raises ``GoldenDataError`` (``DeserializationError``
for the blob's content); writing into it succeeds or raises ``GoldenDataError``;
nothing outside the store is read into a result or written. Runs under the
harness's ``ci`` profile (derandomized), with a small example budget.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jaxport
from _build import REAL_ENTRIES, copy_entry
from harness.fuzz._hypothesis_profiles import budget
from jaxport.golden import EntryId
from jaxport.errors import DeserializationError, GoldenDataError
from jaxport.golden._manifest import (BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MANIFEST_FILE,
                                      MODULE_FILE, _digest)
from jaxport.golden._store import GoldenStore

FILES = (MANIFEST_FILE, BLOB_FILE, INPUTS_FILE, EXPECTED_FILE, MODULE_FILE)
FIELDS = ("format_version", "case_id", "family", "platform", "record_date", "producer",
          "calling_convention_version", "serialization_version", "custom_call_targets",
          "polymorphic_shapes", "constraints", "lowering_only", "comparison", "files", "arrays",
          "imported_from")
TODAY = datetime.date(2026, 12, 1)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "..", "../outside", "a^99999999", "2099-01-01", "2026-02-30", "cpu",
                       "x" * 300, "\u00e9", "float32", "arr_0.npy"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
  root = tmp_path_factory.mktemp("pristine")
  for entry_id in REAL_ENTRIES:
    copy_entry(root, entry_id)
  return root


def _entry_dir(root: Path, i: int) -> Path:
  return root / REAL_ENTRIES[i % len(REAL_ENTRIES)]


def _vouch(entry: Path, name: str) -> None:
  """Makes the manifest record the current sha256 of ``name`` (and a right digest)."""
  path = entry / MANIFEST_FILE
  d = json.loads(path.read_text())
  if isinstance(d.get("files"), dict) and (entry / name).is_file():
    d["files"][name] = hashlib.sha256((entry / name).read_bytes()).hexdigest()
  _redigest(path, d)


def _redigest(path: Path, d: dict) -> None:
  d.pop("digest", None)
  try:
    d["digest"] = _digest(d)
  except (TypeError, ValueError):
    pass
  path.write_text(json.dumps(d, sort_keys=True))


@st.composite
def manifest_field(draw):
  i, field = draw(st.integers(0, 5)), draw(st.sampled_from(FIELDS))
  value, redigest = draw(json_values), draw(st.booleans())

  def apply(root: Path, outside: Path) -> None:
    path = _entry_dir(root, i) / MANIFEST_FILE
    d = json.loads(path.read_text())
    d[field] = value
    if redigest:
      _redigest(path, d)
    else:
      path.write_text(json.dumps(d, sort_keys=True))
  return apply


@st.composite
def file_name(draw):
  i, name = draw(st.integers(0, 5)), draw(st.sampled_from(FILES))
  new = draw(st.sampled_from([".hidden", "extra.bin", "MANIFEST.json", "inputs.npz.bak",
                              "\u00e9.bin", "exported.bin"]))
  copy = draw(st.booleans())

  def apply(root: Path, outside: Path) -> None:
    entry = _entry_dir(root, i)
    if new == name:
      return
    (shutil.copy if copy else os.replace)(entry / name, entry / new)
  return apply


@st.composite
def link(draw):
  i = draw(st.integers(0, 5))
  level = draw(st.sampled_from(["file", "entry", "case", "family", "platform"]))
  name = draw(st.sampled_from(FILES))

  def apply(root: Path, outside: Path) -> None:
    entry = _entry_dir(root, i)
    target = {"file": entry / name, "entry": entry, "case": entry.parent,
              "family": entry.parent.parent, "platform": entry.parent.parent.parent}[level]
    away = outside / f"moved-{level}-{i}"
    if away.exists() or not target.exists():
      return
    shutil.move(str(target), str(away))
    os.symlink(away, target)
  return apply


@st.composite
def npz_member(draw):
  i = draw(st.integers(0, 5))
  which = draw(st.sampled_from([INPUTS_FILE, EXPECTED_FILE]))
  names = draw(st.lists(st.sampled_from(["arr_0.npy", "arr_1.npy", "../evil.npy", "arr_0"]),
                        min_size=0, max_size=3))
  dtype = draw(st.sampled_from(["float32", "int8", "complex64", "bool", "object", "U3", "V4"]))
  shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
  compression = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                      zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
  raw = draw(st.one_of(st.none(), st.binary(max_size=64)))
  vouch = draw(st.booleans())

  def apply(root: Path, outside: Path) -> None:
    entry = _entry_dir(root, i)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
      for n in names:
        member = io.BytesIO()
        if raw is not None:
          member.write(raw)
        else:
          arr = np.zeros(shape, dtype=dtype)
          np.lib.format.write_array(member, arr, allow_pickle=dtype == "object")
        zf.writestr(n, member.getvalue())
    (entry / which).write_bytes(buf.getvalue())
    if vouch:
      _vouch(entry, which)
  return apply


@st.composite
def date(draw):
  i = draw(st.integers(0, 5))
  new = draw(st.sampled_from(["2099-01-01", "2026-02-30", "0001-01-01", "9999-12-31",
                              "2020-13-01"]))
  in_manifest = draw(st.booleans())

  def apply(root: Path, outside: Path) -> None:
    entry = _entry_dir(root, i)
    if in_manifest:
      path = entry / MANIFEST_FILE
      d = json.loads(path.read_text())
      d["record_date"] = new
      _redigest(path, d)
    version = entry.name.split("_jax-", 1)[1]
    os.replace(entry, entry.parent / f"{new}_jax-{version}")
  return apply


@st.composite
def file_bytes(draw):
  i, name = draw(st.integers(0, 5)), draw(st.sampled_from(FILES))
  cut, flip, vouch = draw(st.integers(0, 4000)), draw(st.integers(0, 255)), draw(st.booleans())

  def apply(root: Path, outside: Path) -> None:
    path = _entry_dir(root, i) / name
    if not path.is_file():
      return
    data = bytearray(path.read_bytes()[:cut + 1])
    data[-1] ^= flip
    path.write_bytes(bytes(data))
    if vouch and name != MANIFEST_FILE:
      _vouch(path.parent, name)
  return apply


mutations = st.lists(st.one_of(manifest_field(), file_name(), link(), npz_member(), date(),
                               file_bytes()), min_size=1, max_size=3)


def _snapshot(folder: Path) -> dict[str, bytes]:
  return {str(p.relative_to(folder)): p.read_bytes()
          for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _read_everything(store: GoldenStore, source: GoldenStore) -> None:
  """Every read the harness and the command line make; raises only the clean errors."""
  clean = (GoldenDataError, DeserializationError)
  try:
    entries = store.entries()
  except GoldenDataError:
    entries = []
  for entry_id in REAL_ENTRIES:
    try:
      entries.append(store.entry(EntryId.parse(entry_id)))
    except GoldenDataError:
      pass
  for e in entries:
    for read in (e.verify, e.blob, e.inputs, e.expected_outputs, e.module_text, e.shardings,
                 lambda: e.record_date, lambda: e.manifest):
      try:
        read()
      except GoldenDataError:
        pass
    try:
      jaxport.deserialize(e.blob())
    except clean:
      pass
  try:
    store.prune(180, today=TODAY, dry_run=True, dated_in_future=True)
  except GoldenDataError:
    pass
  good = source.entry(EntryId.parse(REAL_ENTRIES[0]))
  try:
    store.write_entry(good.manifest, good.blob(), good.inputs(), good.expected_outputs(),
                      good.module_text())
  except GoldenDataError:
    pass


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
@budget(25)
@given(changes=mutations)
def test_a_mutated_store_gives_only_clean_outcomes(pristine, tmp_path_factory, changes):
  work = tmp_path_factory.mktemp("mutated")
  root, outside = work / "store", work / "outside"
  shutil.copytree(pristine, root)
  outside.mkdir()
  for apply in changes:
    try:
      apply(root, outside)
    except (OSError, ValueError):
      pass  # an earlier mutation moved or broke what this one changes
  before = _snapshot(outside)
  _read_everything(GoldenStore(root), GoldenStore(pristine))
  assert _snapshot(outside) == before, "something was written outside the store"
  shutil.rmtree(work)
