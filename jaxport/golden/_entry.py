"""One golden entry on disk, read and verified: its manifest checked against its folder, its
listing against the manifest, each file's size bounded and its sha256 checked before use
(:class:`Entry`); and the verified bytes kept for a replay (:class:`Snapshot`).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from jaxport import _bounded, _limits
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import (FOLDER_FORM as _DIR_FORM, FOLDER_RE as _DIR_RE, EntryId,
                                      require_entry_id)
from jaxport.golden._manifest import (BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MANIFEST_FILE,
                                      MODULE_FILE, SHARDINGS_FILE, Manifest, _parse_json)
from jaxport.golden._npz import ZIP_MEMBER_OVERHEAD, check_array_dtypes, decode_arrays


def sha256_hex(data: bytes) -> str:
  """The hex sha256 of ``data``, as a manifest records each file's."""
  return hashlib.sha256(data).hexdigest()


def entry_sort_key(entry_id: EntryId) -> tuple:
  """Platform, family, case, record date, revision, producer jax release (numerically, so
  0.9.2 comes before 0.10.2): the store's order, a case's entries oldest first and a
  same-day update after the entry it follows. Raises for a malformed directory name."""
  require_entry_id(entry_id, "entry_sort_key")
  platform, family, case_id, name = entry_id.parts
  m = _DIR_RE.fullmatch(name)
  if m is None:
    raise GoldenDataError(f"{entry_id}: entry directory name is not '{_DIR_FORM}'.")
  revision = int(m.group(2)) if m.group(2) else 1
  release = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m.group(3).split("."))
  return (platform, family, case_id, m.group(1), revision, release)


class Entry:
  """One golden entry on disk. Readers verify sha256 before returning data."""

  def __init__(self, path: str | os.PathLike, entry_id: EntryId | None = None):
    self.path = Path(path)
    if entry_id is None:
      try:
        entry_id = EntryId.from_folder(self.path)
      except ValueError:
        pass  # a folder with fewer than four above it: its manifest says where it belongs
    else:
      require_entry_id(entry_id, "Entry")
    self._id = entry_id
    # The manifest last parsed, under the identity of the file it was parsed from.
    self._parsed: tuple[tuple[int, int, int], Manifest] | None = None

  def __repr__(self) -> str:
    return f"Entry({str(self._id or self.path)!r})"

  def __eq__(self, other: object) -> bool:
    return isinstance(other, Entry) and self.path == other.path

  def __hash__(self) -> int:
    return hash(self.path)

  def _dir_match(self) -> re.Match:
    m = _DIR_RE.fullmatch(self.path.name)
    if m is None:
      raise GoldenDataError(f"{self.path}: directory name is not '{_DIR_FORM}'.")
    return m

  @property
  def record_date(self) -> datetime.date:
    """The record date stated by the directory name."""
    try:
      return datetime.date.fromisoformat(self._dir_match().group(1))
    except ValueError as e:
      raise GoldenDataError(f"{self.path}: directory name holds no valid date ({e}).") from None

  @property
  def revision(self) -> int:
    """The entry's number among its case's entries of the same day and jax (1 for the first)."""
    revision = self._dir_match().group(2)
    return int(revision) if revision else 1

  @property
  def entry_id(self) -> EntryId:
    """The entry's id: as given, or the last four parts of its folder's path."""
    if self._id is None:
      raise GoldenDataError(f"{self.path}: not an entry folder; an entry lies in "
                            f"<store>/<platform>/<family>/<case_id>/{_DIR_FORM}.")
    return self._id

  def _where(self, name: str) -> str:
    return f"golden entry {self._id or self.path}: {name}"

  @property
  def manifest(self) -> Manifest:
    """The validated manifest; checks that it agrees with the entry's directory. Parsed once
    for each version of the file (its inode, size and modification time): a replay asks for
    it several times."""
    where = self._where(MANIFEST_FILE)
    path = self.path / MANIFEST_FILE
    st = self._check_regular(MANIFEST_FILE)
    identity = (st.st_ino, st.st_size, st.st_mtime_ns)
    if self._parsed is not None and self._parsed[0] == identity:
      return self._parsed[1]
    m = Manifest.from_json(read_bounded(path, where, "MAX_JSON_BYTES"), where)
    check_array_dtypes(m, where)
    if not m.files:
      raise GoldenDataError(f"{where}: 'files' is empty; a stored entry lists its files' sha256.")
    if self._id is None:
      raise GoldenDataError(
          f"{where}: the manifest describes {m.relative_dir!r}, but the entry's folder "
          f"{self.path.absolute()} does not end in <platform>/<family>/<case_id>/{_DIR_FORM}. "
          "An entry is read where a golden store keeps it: copy it with its four folders "
          f"(inspect STORE/{m.relative_dir}), or inspect its exported.bin as a bare "
          "blob.")
    expected_id = str(self._id)
    if m.relative_dir != expected_id:
      raise GoldenDataError(
          f"{where}: the manifest describes {m.relative_dir!r} (platform/family/case_id/"
          f"date_jax-version) but lies in {expected_id!r}. Entries cannot be moved or renamed; "
          "restore it from version control.")
    self._parsed = (identity, m)
    return m

  def _check_regular(self, name: str) -> os.stat_result:
    path = self.path / name
    try:
      st = os.lstat(path)
    except FileNotFoundError:
      raise GoldenDataError(f"{self._where(name)}: file is missing.") from None
    if not stat.S_ISREG(st.st_mode):
      raise GoldenDataError(f"{self._where(name)}: not a regular file (links and "
                            "directories are refused).")
    return st

  def _check_listing(self, m: Manifest) -> None:
    if not self.path.is_dir():
      raise GoldenDataError(f"golden entry {self.entry_id}: directory {self.path} is missing.")
    actual = set(listdir(self.path))
    expected = set(m.files) | {MANIFEST_FILE}
    missing = sorted(expected - actual)
    extra = sorted(actual - expected)
    if missing:
      raise GoldenDataError(
          f"{self._where(', '.join(missing))}: file is missing (the manifest lists it). "
          "Restore the entry from version control.")
    if extra:
      raise GoldenDataError(
          f"{self._where(', '.join(extra))}: unexpected file in the entry (not listed in "
          "the manifest). Entries are immutable; remove it.")

  def _read(self, name: str, m: Manifest | None = None) -> bytes:
    m = m or self.manifest
    self._check_listing(m)
    return self._read_listed(name, m)

  def _read_listed(self, name: str, m: Manifest) -> bytes:
    """A file of an entry whose listing was checked against ``m``; its sha256 checked."""
    self._check_regular(name)
    limit, most = _file_limit(name, m)
    data = read_bounded(self.path / name, self._where(name), limit, most,
                        "one array for each the manifest records, with its header and the "
                        "zip's records, each array at most")
    actual = sha256_hex(data)
    if actual != m.files[name]:
      raise GoldenDataError(
          f"{self._where(name)}: sha256 mismatch: the manifest records {m.files[name]}, the "
          f"file ({len(data)} bytes) has {actual}. The file was changed or truncated after "
          "recording; restore it from version control or record a new entry.")
    return data

  def verify(self) -> None:
    """Check the manifest, the file listing, every sha256, the npz members and the text."""
    self.snapshot()

  def snapshot(self) -> Snapshot:
    """Verify the entry (as :meth:`verify`) and keep what was read: a replay then uses the
    very bytes that were checked, each file read and the manifest parsed once."""
    m = self.manifest
    self._check_listing(m)
    files: dict[str, bytes] = {}
    decoded: dict[str, Any] = {}
    for name in sorted(m.files):
      data = files[name] = self._read_listed(name, m)
      if name == INPUTS_FILE:
        decoded[name] = decode_arrays(data, m.arrays["inputs"], self._where(name))
      elif name == EXPECTED_FILE:
        decoded[name] = decode_arrays(data, m.arrays["expected"], self._where(name))
      elif name == MODULE_FILE:
        decoded[name] = self._decode_text(data)
      elif name == SHARDINGS_FILE:
        decoded[name] = self._decode_shardings(data)
    return Snapshot(self.entry_id, m, files, decoded)

  def blob(self) -> bytes:
    """The serialized Exported."""
    return self._read(BLOB_FILE)

  def inputs(self) -> list[np.ndarray]:
    """The flat list of input arrays."""
    m = self.manifest
    return decode_arrays(self._read(INPUTS_FILE, m), m.arrays["inputs"], self._where(INPUTS_FILE))

  def expected_outputs(self) -> list[np.ndarray] | None:
    """The flat list of expected outputs, or None for a lowering-only entry."""
    m = self.manifest
    if m.lowering_only:
      return None
    return decode_arrays(self._read(EXPECTED_FILE, m), m.arrays["expected"],
                         self._where(EXPECTED_FILE))

  def module_text(self) -> str:
    """The StableHLO text recorded for review diffs."""
    return self._decode_text(self._read(MODULE_FILE))

  def shardings(self) -> dict[str, Any] | None:
    """The recorded output shardings (a JSON object), or None for an entry without them."""
    m = self.manifest
    if SHARDINGS_FILE not in m.files:
      return None
    return self._decode_shardings(self._read(SHARDINGS_FILE, m))

  def _decode_shardings(self, data: bytes) -> dict[str, Any]:
    where = self._where(SHARDINGS_FILE)
    d = _parse_json(data, where)
    if not isinstance(d, dict):
      raise GoldenDataError(f"{where}: expected a JSON object, got {type(d).__name__}.")
    return d

  def _decode_text(self, data: bytes) -> str:
    try:
      return data.decode("utf-8")
    except UnicodeDecodeError as e:
      raise GoldenDataError(f"{self._where(MODULE_FILE)}: not UTF-8 text ({e}).") from None


class Snapshot:
  """An entry's files as :meth:`Entry.snapshot` read and verified them; the same reading
  methods as :class:`Entry`, answered from memory (arrays decoded afresh for each call)."""

  def __init__(self, entry_id: EntryId, manifest: Manifest, files: dict[str, bytes],
               decoded: dict[str, Any]) -> None:
    self.entry_id = entry_id
    self.manifest = manifest
    self._files = files
    self._decoded = decoded

  def __repr__(self) -> str:
    return f"Snapshot({str(self.entry_id)!r})"

  def blob(self) -> bytes:
    return self._files[BLOB_FILE]

  def _arrays(self, name: str) -> list[np.ndarray]:
    arrays = self._decoded.get(name)
    if arrays is None:
      raise GoldenDataError(f"golden entry {self.entry_id}: {name}: file is missing (the "
                            "manifest does not list it). Restore the entry from version control.")
    return [a.copy() for a in arrays]

  def inputs(self) -> list[np.ndarray]:
    return self._arrays(INPUTS_FILE)

  def expected_outputs(self) -> list[np.ndarray] | None:
    if self.manifest.lowering_only:
      return None
    return self._arrays(EXPECTED_FILE)

  def module_text(self) -> str:
    return self._decoded[MODULE_FILE]

  def file_bytes(self) -> dict[str, bytes]:
    """Each listed file's bytes, as read and checked against the manifest's sha256."""
    return dict(self._files)

  def shardings(self) -> dict[str, Any] | None:
    recorded = self._decoded.get(SHARDINGS_FILE)
    return copy.deepcopy(recorded) if recorded is not None else None


def read_bounded(path: Path, where: str, limit: str, most: int | None = None,
                 how: str = "") -> bytes:
  """The bytes of the regular file ``path`` of a golden store (links refused too), through
  :func:`jaxport._bounded.read_regular`; a ``GoldenDataError`` naming ``where`` otherwise."""
  return _bounded.read_regular(path, where, GoldenDataError, limit, most=most, how=how,
                               follow_links=False,
                               fix="Real golden files are far smaller; restore the entry from "
                                   "version control.")


def _file_limit(name: str, m: Manifest) -> tuple[str, int | None]:
  """The limit on the size of an entry's file ``name``: its limit's name, and the bound
  itself where it is derived from the manifest (None for the limit's own value)."""
  if name in (MANIFEST_FILE, SHARDINGS_FILE):
    return "MAX_JSON_BYTES", None
  if name in (INPUTS_FILE, EXPECTED_FILE):
    # Each member's own size is checked against its array when it is read; the file as a
    # whole can be no larger than its members at the limit, with their headers and the
    # zip's records (deflate grows incompressible data by well under 1 %).
    members = len(m.arrays.get("inputs" if name == INPUTS_FILE else "expected", ()))
    per_member = (_limits.MAX_ARRAY_BYTES + _limits.MAX_ARRAY_BYTES // 100
                  + _limits.MAX_NPY_HEADER_BYTES + ZIP_MEMBER_OVERHEAD)
    return "MAX_ARRAY_BYTES", members * per_member + ZIP_MEMBER_OVERHEAD
  # exported.bin, module.mlir (the module's text is of the blob's order of size).
  return "MAX_BLOB_BYTES", None


def listdir(path: Path) -> list[str]:
  """The names in the folder ``path``; a ``GoldenDataError`` naming it when it cannot be listed."""
  try:
    return os.listdir(path)
  except OSError as e:
    raise GoldenDataError(f"{path}: cannot be listed ({e.strerror or e}).") from None
