"""The golden store: append-only, verified entries under ``compat_data/``.

Layout: ``<root>/<platform>/<family>/<case_id>/<YYYY-MM-DD>[.<revision>]_jax-<version>/`` with
``manifest.json``, ``exported.bin``, ``inputs.npz``, ``expected.npz`` (absent for
lowering-only entries) and ``module.mlir``; see ``docs/golden-format.md``.

Guarantees:
- Loading never executes code: manifests are JSON, arrays are npz members read
  with ``allow_pickle=False``.
- Every reader checks the sha256 recorded in the manifest before using a file,
  and refuses missing, extra or non-regular files in the entry directory.
- Writing is atomic (temporary directory beside the entry, fsync, rename) and
  append-only (an existing entry is never overwritten; a second entry of a case
  on the same day with the same jax gets a revision, ``<date>.2_jax-<version>``);
  only :meth:`GoldenStore.prune` removes entries.
"""

from __future__ import annotations

import concurrent.futures
import copy
import dataclasses
import datetime
import hashlib
import io
import logging
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxport import _limits
from jaxport.errors import GoldenDataError
from jaxport import _bounded
from jaxport.golden._entry_id import FOLDER_FORM, FOLDER_RE, EntryId
from jaxport.golden._manifest import (
    BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MANIFEST_FILE, MODULE_FILE, PLATFORMS, SHARDINGS_FILE,
    FIRST_REVISION, MAX_REVISION, ArraySpec, Manifest, _parse_json, _pretty, is_safe_name)

logger = logging.getLogger(__name__)

# <YYYY-MM-DD>[.<revision>]_jax-<version>; a revision is 2 to MAX_REVISION (no leading zero).
_DIR_RE = FOLDER_RE
_DIR_FORM = FOLDER_FORM
_TMP_PREFIX = ".tmp-"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
# A temporary directory of a write or prune this old was left by a process that was killed
# (an interrupted one removes its own); a later write into the same case removes it.
_STALE_TMP_S = 10 * 60
# Bytes a zip archive adds around one member: local and central headers with the name,
# zip64 extras, data descriptor; and once, the end records.
_ZIP_MEMBER_OVERHEAD = 512


def sha256_hex(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def entry_sort_key(entry_id: str) -> tuple:
  """Platform, family, case, record date, revision, producer jax release (numerically, so
  0.9.2 comes before 0.10.2): the store's order, a case's entries oldest first and a
  same-day update after the entry it follows. Raises for a malformed directory name."""
  platform, family, case_id, name = EntryId.from_tail(entry_id).parts
  m = _DIR_RE.fullmatch(name)
  if m is None:
    raise GoldenDataError(f"{entry_id}: entry directory name is not '{_DIR_FORM}'.")
  revision = int(m.group(2)) if m.group(2) else 1
  release = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m.group(3).split("."))
  return (platform, family, case_id, m.group(1), revision, release)


# --- arrays <-> npz -----------------------------------------------------------

def _extended_dtype(name: str) -> np.dtype | None:
  """The ml_dtypes dtype called ``name`` (bfloat16, float8_*, int4...), or None.

  Only array types count: ml_dtypes also exports ``finfo``, ``iinfo`` and functions,
  which numpy would take as the object dtype (whose arrays are pickles) or refuse.
  """
  try:
    import ml_dtypes
  except ImportError:
    return None
  t = getattr(ml_dtypes, name, None)
  if not isinstance(t, type) or not issubclass(t, np.generic):
    return None
  try:
    dt = np.dtype(t)
  except TypeError:
    return None
  if dt.hasobject or dt.type is not t or dt.name != name:
    return None
  return dt


def dtype_from_name(name: str, where: str) -> np.dtype:
  """The numpy dtype a manifest names: a numeric or bool numpy dtype by its own name
  (``float32``, not ``f4``) or an ml_dtypes array type; anything else is refused."""
  if isinstance(name, str) and name.isidentifier():
    try:
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = np.dtype(name)
    except (TypeError, ValueError):
      dt = None
    if dt is not None and dt.kind in "biufc" and dt.name == name:
      return dt
    dt = _extended_dtype(name)
    if dt is not None:
      return dt
  raise GoldenDataError(f"{where}: unknown dtype name {name!r}; expected the name of a numeric "
                        "or bool numpy dtype ('float32', 'int8', 'complex64', 'bool') or of an "
                        "ml_dtypes array type such as 'bfloat16'. Golden data holds numeric "
                        "arrays only; the manifest was not written by jaxport.")


def check_array_dtypes(m: Manifest, where: str) -> None:
  """Refuse a manifest whose ``arrays`` name a dtype golden data never holds (``finfo``,
  ``object``...), naming the field, before any npz member is opened."""
  for kind, specs in m.arrays.items():
    for i, spec in enumerate(specs):
      dtype_from_name(spec.dtype, f"{where}: arrays.{kind}[{i}].dtype")


def _storage_array(a: Any, where: str) -> tuple[np.ndarray, ArraySpec]:
  """The array as stored in npz (ml_dtypes types as same-width unsigned ints) and its spec."""
  arr = np.asarray(a)
  dt = arr.dtype
  if dt.kind in "biufc":
    stored = arr.astype(dt.newbyteorder("<"), copy=False) if dt.byteorder == ">" else arr
  elif dt.kind == "V" and dt.names is None and _extended_dtype(dt.name) == dt:
    stored = arr.view(np.dtype(f"<u{dt.itemsize}"))
  else:
    raise GoldenDataError(
        f"{where}: cannot store an array of dtype {dt.name} ({dt.str}); golden data holds numeric arrays only "
        "(bool, int, uint, float, complex, and ml_dtypes types such as bfloat16).")
  return np.asarray(stored, order="C"), ArraySpec(dtype=dt.name, shape=tuple(arr.shape))


def encode_arrays(arrays: Sequence[Any], where: str) -> tuple[bytes, tuple[ArraySpec, ...]]:
  """Deterministic npz bytes holding ``arr_0``, ``arr_1``... and the spec of each array."""
  buf = io.BytesIO()
  specs = []
  with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
    for i, a in enumerate(arrays):
      stored, spec = _storage_array(a, f"{where}[{i}]")
      member = io.BytesIO()
      np.lib.format.write_array(member, stored, allow_pickle=False)
      zf.writestr(zipfile.ZipInfo(f"arr_{i}.npy", date_time=_ZIP_EPOCH), member.getvalue())
      specs.append(spec)
  return buf.getvalue(), tuple(specs)


def decode_arrays(data: bytes, specs: Sequence[ArraySpec], where: str) -> list[np.ndarray]:
  """Read npz bytes written by :func:`encode_arrays`, never unpickling; check against specs."""
  try:
    zf = zipfile.ZipFile(io.BytesIO(data))
  except zipfile.BadZipFile as e:
    raise GoldenDataError(f"{where}: not a valid npz (zip) file: {e}.") from None
  with zf:
    names = zf.namelist()
    want = [f"arr_{i}.npy" for i in range(len(specs))]
    if sorted(names) != sorted(want) or len(set(names)) != len(names):
      raise GoldenDataError(
          f"{where}: expected members {want} (from the manifest's arrays), got {names}.")
    out = []
    for i, spec in enumerate(specs):
      member = want[i]
      out.append(_read_member(zf, member, spec, f"{where}: member {member}"))
    return out


def _read_member(zf: zipfile.ZipFile, member: str, spec: ArraySpec, where: str) -> np.ndarray:
  """One npz member as the array ``spec`` records. The ``.npy`` header is read first and its
  dtype and shape compared with ``spec`` (within ``MAX_ARRAY_BYTES``) before any memory is
  set aside for the data, so a header that declares a huge shape costs nothing."""
  dt = dtype_from_name(spec.dtype, where)
  stored_dt = dt if dt.kind in "biufc" else np.dtype(f"<u{dt.itemsize}")
  _member_bound(zf.getinfo(member), spec, where)
  nbytes = _spec_nbytes(spec, dt)
  fmt = np.lib.format
  try:
    with zf.open(member) as f:
      version = fmt.read_magic(f)
      if version == (1, 0):
        shape, fortran, got_dt = fmt.read_array_header_1_0(
            f, max_header_size=_limits.MAX_NPY_HEADER_BYTES)
      elif version == (2, 0):
        shape, fortran, got_dt = fmt.read_array_header_2_0(
            f, max_header_size=_limits.MAX_NPY_HEADER_BYTES)
      else:
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not read; "
                         "jaxport writes 1.0 (numpy writes 2.0 for huge headers)")
      if got_dt.hasobject:
        raise ValueError(f"its header declares dtype {got_dt}, whose data is a pickle")
      if got_dt != stored_dt or tuple(shape) != tuple(spec.shape):
        raise GoldenDataError(
            f"{where} holds {got_dt} {tuple(shape)}, but the manifest records {spec.dtype} "
            f"{tuple(spec.shape)}; refused before reading its data.")
      buf = bytearray(nbytes)
      got = f.readinto(buf) if nbytes else 0
      trailing = f.read(1)  # reaching the end makes zipfile check the CRC
  except ValueError as e:
    if isinstance(e, GoldenDataError):
      raise
    raise GoldenDataError(
        f"{where} cannot be read without unpickling or is malformed ({e}). "
        "Golden data never executes code; the file was not written by jaxport.") from None
  except (zipfile.BadZipFile, EOFError, OSError) as e:
    raise GoldenDataError(f"{where} is corrupt: {e}.") from None
  if got != nbytes or trailing:
    raise GoldenDataError(
        f"{where} is corrupt: its header declares {spec.dtype} {tuple(spec.shape)} "
        f"({nbytes} bytes), but {'more' if trailing else got} bytes of data follow.")
  raw = np.frombuffer(buf, dtype=stored_dt).reshape(shape, order="F" if fortran else "C")
  return raw if dt is stored_dt else raw.view(dt)


def _spec_nbytes(spec: ArraySpec, dt: np.dtype) -> int:
  count = 1
  for d in spec.shape:
    count *= d
  return count * dt.itemsize


def _member_bound(info: zipfile.ZipInfo, spec: ArraySpec, where: str) -> int:
  """The most bytes the npz member may inflate to: its header plus the manifest's array.

  Checked against the member's declared size before anything is decompressed;
  reading stops at that size (a member that inflates further fails its CRC).
  """
  if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
    raise GoldenDataError(
        f"{where}: compression method {info.compress_type} is refused; npz files are stored "
        "or deflated (numpy.savez, numpy.savez_compressed).")
  nbytes = _spec_nbytes(spec, dtype_from_name(spec.dtype, where))
  if nbytes > _limits.MAX_ARRAY_BYTES:
    raise GoldenDataError(
        f"{where}: the manifest's {spec.dtype} {tuple(spec.shape)} needs {nbytes} bytes, more "
        f"than the limit {_limits.name('MAX_ARRAY_BYTES')}.")
  bound = nbytes + _limits.MAX_NPY_HEADER_BYTES
  if info.file_size > bound:
    raise GoldenDataError(
        f"{where}: declares {info.file_size} bytes once inflated, but the manifest's "
        f"{spec.dtype} {tuple(spec.shape)} needs at most {bound} (array plus the limit "
        f"{_limits.name('MAX_NPY_HEADER_BYTES')}); refused before decompressing.")
  return bound


# --- entries ------------------------------------------------------------------

def _fsync_path(path: Path) -> None:
  """fsync a file or a folder by its path."""
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)



def _write_file(path: Path, data: bytes) -> None:
  """Write a new file; :func:`_sync_files` makes it durable."""
  with open(path, "xb") as f:
    f.write(data)


def _sync_files(paths: Sequence[Path]) -> None:
  """fsync every file of an entry, and its folder, at the same time; return when all are durable.

  The file system commits concurrent syncs together, so an entry waits for
  about one commit rather than one per file (on ext4, a tenth of the time).
  """
  with concurrent.futures.ThreadPoolExecutor(max_workers=len(paths) or 1) as pool:
    for done in [pool.submit(_fsync_path, p) for p in paths]:
      done.result()


class Entry:
  """One golden entry on disk. Readers verify sha256 before returning data."""

  def __init__(self, path: str | os.PathLike, entry_id: str | None = None):
    self.path = Path(path)
    self.entry_id = entry_id or "/".join(self.path.parts[-4:])
    # The manifest last parsed, under the identity of the file it was parsed from.
    self._parsed: tuple[tuple[int, int, int], Manifest] | None = None

  def __repr__(self) -> str:
    return f"Entry({self.entry_id!r})"

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

  def _where(self, name: str) -> str:
    return f"golden entry {self.entry_id}: {name}"

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
    try:
      expected_id = str(EntryId.from_tail(self.entry_id))
    except ValueError:
      raise GoldenDataError(
          f"{where}: the manifest describes {m.relative_dir!r}, but the entry's folder "
          f"{self.path.absolute()} does not end in <platform>/<family>/<case_id>/{_DIR_FORM}. "
          "An entry is read where a golden store keeps it: copy it with its four folders "
          f"(inspect STORE/{m.relative_dir}), or inspect its exported.bin as a bare "
          "blob.") from None
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
    actual = set(_listdir(self.path))
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

  def __init__(self, entry_id: str, manifest: Manifest, files: dict[str, bytes],
               decoded: dict[str, Any]) -> None:
    self.entry_id = entry_id
    self.manifest = manifest
    self._files = files
    self._decoded = decoded

  def __repr__(self) -> str:
    return f"Snapshot({self.entry_id!r})"

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


@dataclasses.dataclass(frozen=True)
class ListingProblem:
  """A folder or file of a store that is not where an entry may be; listing skips it."""

  path: Path
  message: str


def _shown(path: Path) -> str:
  """``path`` for a message: as is when printable ASCII, else escaped (a name holding
  U+202E would reorder the line it is printed on)."""
  text = str(path)
  return text if text.isascii() and text.isprintable() else ascii(text)


class GoldenStore:
  """The golden entries under one root directory (normally ``compat_data``)."""

  def __init__(self, root: str | os.PathLike):
    self.root = Path(root)

  def __repr__(self) -> str:
    return f"GoldenStore({str(self.root)!r})"

  def dated_after(self, today: datetime.date) -> list[Entry]:
    """Entries whose record date is after ``today`` (a wrong date; see :meth:`prune`)."""
    return [e for e in self.entries() if e.record_date > today]

  def entries(self, platform: str | None = None, family: str | None = None) -> list[Entry]:
    """All entries, sorted by entry id; optionally only one platform and/or family.

    Hidden names (temporary directories of interrupted writes, ``.gitkeep``) and
    plain files at the root are ignored; anything else out of place is an error
    (:meth:`listing` reports it beside the entries instead).
    """
    found, problems = self.listing(platform, family)
    if problems:
      raise GoldenDataError(problems[0].message)
    return found

  def listing(self, platform: str | None = None,
              family: str | None = None) -> tuple[list[Entry], list[ListingProblem]]:
    """The entries (as :meth:`entries`) and, instead of an error for the whole store, one
    :class:`ListingProblem` for each folder or file that is out of place: a folder name that
    is not an entry's, not a safe name or not a platform, a link, a stray file. What lies
    below such a folder is not listed; every other entry is."""
    if platform is not None and platform not in PLATFORMS:
      raise GoldenDataError(f"unknown platform {platform!r}; expected one of {list(PLATFORMS)}.")
    if not self.root.is_dir():
      return [], []
    found: list[Entry] = []
    problems: list[ListingProblem] = []
    for p in self._children(self.root, allow_files=True, problems=problems):
      if p.name not in PLATFORMS:
        problems.append(ListingProblem(p, (
            f"{_shown(p)}: unexpected directory in the golden store; platform directories are "
            f"{list(PLATFORMS)}.")))
        continue
      if platform is not None and p.name != platform:
        continue
      for fam in self._children(p, problems=problems):
        if family is not None and fam.name != family:
          continue
        for case in self._children(fam, problems=problems):
          for d in self._children(case, problems=problems):
            if not _DIR_RE.fullmatch(d.name):
              problems.append(ListingProblem(d, (
                  f"{_shown(d)}: entry directory name is not '{_DIR_FORM}'. Move it out of "
                  "the store, or rename it to start with '.' so that listing ignores it.")))
              continue
            found.append(Entry(d, f"{p.name}/{fam.name}/{case.name}/{d.name}"))
    return sorted(found, key=lambda e: entry_sort_key(e.entry_id)), problems

  def same_day(self, manifest: Manifest) -> list[Entry]:
    """The entries of ``manifest``'s case recorded on its day by its jax (every revision),
    in order; ``manifest``'s own revision is left out of the comparison."""
    first = dataclasses.replace(manifest, revision=None).dir_name
    case_dir = self._inside([manifest.platform, manifest.family, manifest.case_id])
    if not case_dir.is_dir():
      return []
    found = []
    for d in self._children(case_dir):
      m = _DIR_RE.fullmatch(d.name)
      if m is None:
        raise GoldenDataError(f"{d}: entry directory name is not '{_DIR_FORM}'.")
      if f"{m.group(1)}_jax-{m.group(3)}" == first:
        found.append(Entry(d, f"{manifest.platform}/{manifest.family}/{manifest.case_id}/{d.name}"))
    return sorted(found, key=lambda e: entry_sort_key(e.entry_id))

  def next_revision(self, manifest: Manifest) -> Manifest:
    """``manifest`` named after every entry of its case recorded the same day with the same
    jax: without a revision when there is none, else with the next one (2, 3, ...)."""
    taken = self.same_day(manifest)
    if not taken:
      return dataclasses.replace(manifest, revision=None)
    revision = max(FIRST_REVISION, taken[-1].revision + 1)
    if revision > MAX_REVISION:
      raise GoldenDataError(
          f"golden entry {manifest.relative_dir}: {len(taken)} entries of case "
          f"{manifest.case_id} were recorded on {manifest.record_date} with jax "
          f"{manifest.producer.jax}, the most a day holds ({MAX_REVISION}); prune some "
          "('jaxport prune') or record on another day.")
    return dataclasses.replace(manifest, revision=revision)

  def _children(self, path: Path, allow_files: bool = False,
                problems: list[ListingProblem] | None = None) -> list[Path]:
    """The directories in ``path``, hidden names skipped; with ``problems``, what is out of
    place is appended there and skipped, else it raises."""
    out = []
    for name in sorted(_listdir(path)):
      if name.startswith("."):
        continue
      child = path / name
      why = None
      if child.is_symlink() or not child.is_dir():
        if allow_files and not child.is_symlink():
          continue
        why = (f"{_shown(child)}: unexpected file in the golden store (only directories belong "
               "at this level). Move it out of the store, or rename it to start with '.' so "
               "that listing ignores it.")
      elif not is_safe_name(name):
        why = (f"{_shown(child)}: directory name is not a safe name (letters, digits and "
               "'_.+-' only). Move it out of the store or rename it.")
      if why is not None:
        if problems is None:
          raise GoldenDataError(why)
        problems.append(ListingProblem(child, why))
        continue
      out.append(child)
    return out

  def entry(self, entry_id: EntryId) -> Entry:
    """The entry ``entry_id`` names (``EntryId.parse`` reads an id's text)."""
    if not isinstance(entry_id, EntryId):
      raise TypeError(f"GoldenStore.entry takes an EntryId, not {type(entry_id).__name__} "
                      f"{entry_id!r}; EntryId.parse(text) reads an id's text.")
    parts = entry_id.parts
    if not all(is_safe_name(x) for x in parts):
      raise GoldenDataError(
          f"bad entry id {str(entry_id)!r}; expected '<platform>/<family>/<case_id>/{_DIR_FORM}'.")
    path = self._inside(parts)
    if not path.is_dir():
      raise GoldenDataError(f"golden entry {entry_id}: no such entry under {self.root}.")
    return Entry(path, str(entry_id))

  def _inside(self, parts: Sequence[str], create_parents: bool = False) -> Path:
    """``root/parts...``, checked to be real directories down to the first missing one.

    A symbolic link at any level would take reads or writes outside the store,
    so it is refused, as listing refuses it. ``create_parents`` makes every
    level but the last.
    """
    path = self.root
    for i, part in enumerate(parts):
      path = path / part
      try:
        st = os.lstat(path)
      except OSError as e:
        if not isinstance(e, (FileNotFoundError, NotADirectoryError)):
          raise GoldenDataError(f"{path}: cannot be read ({e.strerror or e}).") from None
        if not create_parents or i == len(parts) - 1:
          return self.root.joinpath(*parts)
        try:
          os.mkdir(path)
        except FileExistsError:
          pass  # Another writer made it; it is checked below like any other.
        except OSError as e:
          raise _unwritable(path, e) from None
        st = os.lstat(path)
      if stat.S_ISLNK(st.st_mode):
        raise GoldenDataError(
            f"{path}: a symbolic link inside the golden store {self.root}. The store reads and "
            "writes only real directories below its root, never through links, so that "
            "nothing outside it is read or written; replace the link with a directory.")
      if not stat.S_ISDIR(st.st_mode):
        raise GoldenDataError(f"{path}: not a directory; the golden store holds directories "
                              "down to each entry.")
    return path

  def write_entry(self, manifest: Manifest, blob: bytes, inputs: Sequence[Any],
                  expected: Sequence[Any] | None, module_text: str,
                  shardings: dict[str, Any] | None = None) -> Entry:
    """Write a new entry atomically and return it; never overwrites an existing one.

    ``manifest.files`` and ``manifest.arrays`` are computed here. ``expected``
    must be None exactly when ``manifest.lowering_only``. ``shardings``, a
    JSON object, is stored as ``shardings.json`` when given.
    """
    entry_id = manifest.relative_dir
    if (expected is None) != manifest.lowering_only:
      raise GoldenDataError(
          f"golden entry {entry_id}: lowering_only={manifest.lowering_only} but expected outputs "
          f"were {'not ' if expected is None else ''}given; pass expected=None exactly for "
          "lowering-only entries.")
    if not isinstance(blob, (bytes, bytearray, memoryview)):
      raise GoldenDataError(f"golden entry {entry_id}: blob must be bytes, got {type(blob).__name__}.")
    if not isinstance(module_text, str):
      raise GoldenDataError(
          f"golden entry {entry_id}: module_text must be str, got {type(module_text).__name__}.")
    final = self._inside(list(EntryId.parse(entry_id).parts))
    if os.path.lexists(final):
      raise _exists(entry_id, final)

    payload = {BLOB_FILE: bytes(blob), MODULE_FILE: module_text.encode("utf-8")}
    if shardings is not None:
      payload[SHARDINGS_FILE] = (_pretty(shardings, "") + "\n").encode("utf-8")
    payload[INPUTS_FILE], in_specs = encode_arrays(list(inputs), f"golden entry {entry_id}: inputs")
    arrays = {"inputs": in_specs}
    if expected is not None:
      payload[EXPECTED_FILE], out_specs = encode_arrays(
          list(expected), f"golden entry {entry_id}: expected outputs")
      arrays["expected"] = out_specs
    manifest = dataclasses.replace(
        manifest, files={k: sha256_hex(v) for k, v in payload.items()}, arrays=arrays)
    return self._commit(manifest, payload)

  def adopt(self, staged: Snapshot, manifest: Manifest | None = None) -> Entry:
    """Write the verified entry ``staged`` (read from a staging store) into this store as it
    was verified: its files' bytes, never decoded and encoded again; under ``manifest`` when
    given (the staged manifest's next revision), which keeps the staged files and arrays."""
    if manifest is None:
      manifest = staged.manifest
    else:
      manifest = dataclasses.replace(manifest, files=staged.manifest.files,
                                     arrays=staged.manifest.arrays)
    return self._commit(manifest, staged.file_bytes())

  def _commit(self, manifest: Manifest, payload: Mapping[str, bytes]) -> Entry:
    """Write ``payload`` and ``manifest`` into a temporary folder inside the case's folder,
    make them durable, and rename it into place; never over an existing entry."""
    entry_id = manifest.relative_dir
    final = self._inside(list(EntryId.parse(entry_id).parts))
    if os.path.lexists(final):
      raise _exists(entry_id, final)
    case_dir = final.parent
    tmp: Path | None = None
    try:  # On any exception, KeyboardInterrupt included, the temporary directory goes.
      try:
        if not self.root.is_dir():
          self.root.mkdir(parents=True)
        self._inside(list(EntryId.parse(entry_id).parts), create_parents=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{final.name}-", dir=case_dir))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; entries are shared data.
        for name in sorted(payload):
          _write_file(tmp / name, payload[name])
        _write_file(tmp / MANIFEST_FILE, manifest.to_json().encode("utf-8"))
        _sync_files([*(tmp / name for name in (*sorted(payload), MANIFEST_FILE)), tmp])
        if final.exists():
          raise _exists(entry_id, final)
        try:
          os.rename(tmp, final)
        except OSError:
          if final.exists():  # Another writer won the race; its entry stays.
            raise _exists(entry_id, final) from None
          raise
        tmp = None
        _fsync_path(case_dir)
      except OSError as e:
        raise _unwritable(case_dir, e) from None
    finally:
      if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)
    _remove_stale_temporaries(case_dir)
    logger.info("wrote golden entry %s", entry_id)
    return Entry(final, entry_id)

  def superseded(self) -> list[Entry]:
    """Entries with a newer entry of the same case recorded by the same jax release (the old
    entry an update of a changed case leaves in place), in the store's order."""
    def lineage(e: Entry) -> tuple:  # platform, family, case and producer release
      key = entry_sort_key(e.entry_id)
      return (*key[:3], key[5])

    entries = self.entries()
    newest = {lineage(e): e for e in entries}  # in the store's order: the newest comes last
    return [e for e in entries if newest[lineage(e)] != e]

  def prune(self, older_than_days: int | None, today: datetime.date | None = None,
            dry_run: bool = True, dated_in_future: bool = False,
            superseded: bool = False, cases: Sequence[str] | None = None) -> list[Entry]:
    """Entries recorded more than ``older_than_days`` before ``today`` (None: no age rule);
    removed unless dry_run.

    ``dated_in_future`` adds the entries whose record date is after ``today``:
    no recording comes from the future, so their date is wrong and they would
    never expire. ``superseded`` adds the entries that have a newer entry of
    the same case by the same jax release (:meth:`superseded`). ``cases`` keeps only
    the entries of those case ids; with no other rule, it selects every entry of them.
    """
    if older_than_days is not None and (isinstance(older_than_days, bool) or not isinstance(
        older_than_days, int) or older_than_days < 0):
      raise GoldenDataError(f"older_than_days must be a non-negative integer, got {older_than_days!r}.")
    today = today or datetime.date.today()
    replaced = set(self.superseded()) if superseded else set()
    any_rule = older_than_days is not None or dated_in_future or superseded
    if not any_rule and not cases:
      raise GoldenDataError("prune: no entry selected: give older_than_days, dated_in_future, "
                            "superseded or cases.")
    expired = [e for e in self.entries()
               if (not any_rule
                   or (older_than_days is not None and (today - e.record_date).days > older_than_days)
                   or (dated_in_future and e.record_date > today) or e in replaced)
               and (not cases or EntryId.parse(e.entry_id).case_id in cases)]
    if dry_run:
      return expired
    for e in expired:
      self.remove_entry(e)
    return expired

  def remove_entry(self, entry: Entry) -> None:
    """Remove one entry: rename it out of the store's view (a hidden folder beside it, so a
    crash never leaves a half-deleted entry visible), delete it, then the empty case and
    family folders above it. An error before the rename leaves the entry whole."""
    doomed = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}prune-", dir=entry.path.parent)
    try:
      os.rename(entry.path, os.path.join(doomed, entry.path.name))
    except BaseException:
      try:
        os.rmdir(doomed)
      except OSError:
        pass
      raise
    try:
      shutil.rmtree(doomed)
    except OSError as e:
      # The entry is out of the store already; a leftover hidden folder is only clutter.
      logger.warning("%s: removed from the store, but its hidden folder %s could not be "
                     "deleted (%s); delete it by hand.", entry.entry_id, doomed, e.strerror or e)
    logger.info("pruned golden entry %s", entry.entry_id)
    parent = entry.path.parent
    try:
      while parent != self.root and parent.is_dir() and not os.listdir(parent):
        parent.rmdir()
        parent = parent.parent
    except OSError:
      pass  # an empty case or family folder left behind is harmless


def _remove_stale_temporaries(case_dir: Path, now: float | None = None) -> list[Path]:
  """Remove the temporary directories (``.tmp-*``) that writes and prunes killed mid-way
  left in ``case_dir`` more than ``_STALE_TMP_S`` ago; a younger one may be another
  writer's, still at work. Returns what was removed; a failure to remove is only logged."""
  now = time.time() if now is None else now
  removed = []
  for name in sorted(_listdir(case_dir)):
    if not name.startswith(_TMP_PREFIX):
      continue
    path = case_dir / name
    try:
      st = os.lstat(path)
      if not stat.S_ISDIR(st.st_mode) or now - st.st_mtime < _STALE_TMP_S:
        continue
      shutil.rmtree(path)
    except OSError as e:
      logger.warning("cannot remove the stale temporary directory %s: %s", path, e)
      continue
    logger.info("removed the stale temporary directory %s", path)
    removed.append(path)
  return removed


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
                  + _limits.MAX_NPY_HEADER_BYTES + _ZIP_MEMBER_OVERHEAD)
    return "MAX_ARRAY_BYTES", members * per_member + _ZIP_MEMBER_OVERHEAD
  # exported.bin, module.mlir (the module's text is of the blob's order of size).
  return "MAX_BLOB_BYTES", None


def _listdir(path: Path) -> list[str]:
  try:
    return os.listdir(path)
  except OSError as e:
    raise GoldenDataError(f"{path}: cannot be listed ({e.strerror or e}).") from None


def _unwritable(path: Path, error: OSError) -> GoldenDataError:
  return GoldenDataError(
      f"{path}: cannot write into the golden store ({error.strerror or error}). Make the "
      "store writable, or pass another store.")


def _exists(entry_id: str, path: Path) -> GoldenDataError:
  return GoldenDataError(
      f"golden entry {entry_id}: {path} already exists. The golden store is append-only and "
      "never overwrites an entry; record on another day or with another jax version, or remove "
      "expired entries with 'jaxport prune'.")
