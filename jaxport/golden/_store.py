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
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxport import _limits
from jaxport.errors import GoldenDataError
from jaxport.golden._manifest import (
    BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MANIFEST_FILE, MODULE_FILE, PLATFORMS, SHARDINGS_FILE,
    FIRST_REVISION, MAX_REVISION, ArraySpec, Manifest, _parse_json, _pretty, is_safe_name)

logger = logging.getLogger(__name__)

# <YYYY-MM-DD>[.<revision>]_jax-<version>; a revision is 2 to MAX_REVISION (no leading zero).
_DIR_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:\.([2-9]|[1-9]\d{1,2}))?_jax-(.+)")
_DIR_FORM = "<YYYY-MM-DD>[.<revision>]_jax-<version>"
_TMP_PREFIX = ".tmp-"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def sha256_hex(data: bytes) -> str:
  return hashlib.sha256(data).hexdigest()


def entry_sort_key(entry_id: str) -> tuple:
  """Platform, family, case, record date, revision, producer jax release (numerically, so
  0.9.2 comes before 0.10.2): the store's order, a case's entries oldest first and a
  same-day update after the entry it follows. Raises for a malformed directory name."""
  platform, family, case_id, name = entry_id.split("/")[-4:]
  m = _DIR_RE.fullmatch(name)
  if m is None:
    raise GoldenDataError(f"{entry_id}: entry directory name is not '{_DIR_FORM}'.")
  revision = int(m.group(2)) if m.group(2) else 1
  release = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m.group(3).split("."))
  return (platform, family, case_id, m.group(1), revision, release)


# --- arrays <-> npz -----------------------------------------------------------

def _extended_dtype(name: str) -> np.dtype | None:
  """The ml_dtypes dtype called ``name`` (bfloat16, float8_*, int4...), or None."""
  try:
    import ml_dtypes
  except ImportError:
    return None
  t = getattr(ml_dtypes, name, None)
  if t is None:
    return None
  try:
    return np.dtype(t)
  except TypeError:
    return None


def dtype_from_name(name: str, where: str) -> np.dtype:
  """The numpy dtype a manifest names, for standard and ml_dtypes types."""
  try:
    dt = np.dtype(name)
    if dt.kind in "biufc":
      return dt
  except TypeError:
    pass
  dt = _extended_dtype(name)
  if dt is None:
    raise GoldenDataError(f"{where}: unknown dtype name {name!r}; expected a numeric numpy "
                          "dtype or an ml_dtypes type such as 'bfloat16'.")
  return dt


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
      bound = _member_bound(zf.getinfo(member), spec, f"{where}: member {member}")
      try:
        with zf.open(member) as f:
          data = f.read(bound)  # zipfile stops at the declared size and checks the CRC there
        raw = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False,
                                       max_header_size=_limits.MAX_NPY_HEADER_BYTES)
      except ValueError as e:
        raise GoldenDataError(
            f"{where}: member {member} cannot be read without unpickling or is malformed ({e}). "
            "Golden data never executes code; the file was not written by jaxport.") from None
      except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise GoldenDataError(f"{where}: member {member} is corrupt: {e}.") from None
      dt = dtype_from_name(spec.dtype, f"{where}: member {member}")
      if dt.kind in "biufc":
        ok = raw.dtype == dt
        arr = raw
      else:
        ok = raw.dtype == np.dtype(f"<u{dt.itemsize}")
        arr = raw.view(dt) if ok else raw
      if not ok or tuple(arr.shape) != tuple(spec.shape):
        raise GoldenDataError(
            f"{where}: member {member} holds {raw.dtype} {tuple(raw.shape)}, but the manifest "
            f"records {spec.dtype} {tuple(spec.shape)}.")
      out.append(arr)
    return out


def _member_bound(info: zipfile.ZipInfo, spec: ArraySpec, where: str) -> int:
  """The most bytes the npz member may inflate to: its header plus the manifest's array.

  Checked against the member's declared size before anything is decompressed;
  reading stops at that size (a member that inflates further fails its CRC).
  """
  if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
    raise GoldenDataError(
        f"{where}: compression method {info.compress_type} is refused; npz files are stored "
        "or deflated (numpy.savez, numpy.savez_compressed).")
  itemsize = dtype_from_name(spec.dtype, where).itemsize
  count = 1
  for d in spec.shape:
    count *= d
  nbytes = count * itemsize
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

def _fsync_dir(path: Path) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
  with open(path, "xb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


class Entry:
  """One golden entry on disk. Readers verify sha256 before returning data."""

  def __init__(self, path: str | os.PathLike, entry_id: str | None = None):
    self.path = Path(path)
    self.entry_id = entry_id or "/".join(self.path.parts[-4:])

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
    """The validated manifest; checks that it agrees with the entry's directory."""
    where = self._where(MANIFEST_FILE)
    path = self.path / MANIFEST_FILE
    self._check_regular(MANIFEST_FILE)
    m = Manifest.from_json(_read_bytes(path, where), where)
    if not m.files:
      raise GoldenDataError(f"{where}: 'files' is empty; a stored entry lists its files' sha256.")
    expected_id = "/".join(self.entry_id.split("/")[-4:])
    if m.relative_dir != expected_id:
      raise GoldenDataError(
          f"{where}: the manifest describes {m.relative_dir!r} (platform/family/case_id/"
          f"date_jax-version) but lies in {expected_id!r}. Entries cannot be moved or renamed; "
          "restore it from version control.")
    return m

  def _check_regular(self, name: str) -> None:
    path = self.path / name
    try:
      st = os.lstat(path)
    except FileNotFoundError:
      raise GoldenDataError(f"{self._where(name)}: file is missing.") from None
    if not stat.S_ISREG(st.st_mode):
      raise GoldenDataError(f"{self._where(name)}: not a regular file (links and "
                            "directories are refused).")

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
    data = _read_bytes(self.path / name, self._where(name))
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

  def shardings(self) -> dict[str, Any] | None:
    recorded = self._decoded.get(SHARDINGS_FILE)
    return copy.deepcopy(recorded) if recorded is not None else None


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
    plain files at the root are ignored; anything else out of place is an error.
    """
    if platform is not None and platform not in PLATFORMS:
      raise GoldenDataError(f"unknown platform {platform!r}; expected one of {list(PLATFORMS)}.")
    if not self.root.is_dir():
      return []
    found = []
    for p in self._children(self.root, allow_files=True):
      if p.name not in PLATFORMS:
        raise GoldenDataError(
            f"{p}: unexpected directory in the golden store; platform directories are "
            f"{list(PLATFORMS)}.")
      if platform is not None and p.name != platform:
        continue
      for fam in self._children(p):
        if family is not None and fam.name != family:
          continue
        for case in self._children(fam):
          for d in self._children(case):
            if not _DIR_RE.fullmatch(d.name):
              raise GoldenDataError(f"{d}: entry directory name is not '{_DIR_FORM}'.")
            found.append(Entry(d, f"{p.name}/{fam.name}/{case.name}/{d.name}"))
    return sorted(found, key=lambda e: entry_sort_key(e.entry_id))

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

  def _children(self, path: Path, allow_files: bool = False) -> list[Path]:
    out = []
    for name in sorted(_listdir(path)):
      if name.startswith("."):
        continue
      child = path / name
      if child.is_symlink() or not child.is_dir():
        if allow_files and not child.is_symlink():
          continue
        raise GoldenDataError(f"{child}: unexpected file in the golden store (only "
                              "directories belong at this level). Move it out of the store, or "
                              "rename it to start with '.' so that listing ignores it.")
      if not is_safe_name(name):
        raise GoldenDataError(f"{child}: directory name is not a safe name.")
      out.append(child)
    return out

  def entry(self, entry_id: str) -> Entry:
    """The entry with id ``<platform>/<family>/<case_id>/<dir name>``."""
    parts = entry_id.strip("/").split("/")
    if len(parts) != 4 or not all(is_safe_name(x) for x in parts):
      raise GoldenDataError(
          f"bad entry id {entry_id!r}; expected '<platform>/<family>/<case_id>/{_DIR_FORM}'.")
    path = self._inside(parts)
    if not path.is_dir():
      raise GoldenDataError(f"golden entry {entry_id}: no such entry under {self.root}.")
    return Entry(path, "/".join(parts))

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
    final = self._inside(entry_id.split("/"))
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

    case_dir = final.parent
    try:
      if not self.root.is_dir():
        self.root.mkdir(parents=True)
      self._inside(entry_id.split("/"), create_parents=True)
      tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{final.name}-", dir=case_dir))
    except OSError as e:
      raise _unwritable(case_dir, e) from None
    try:
      os.chmod(tmp, 0o755)  # mkdtemp makes it private; entries are shared data.
      for name in sorted(payload):
        _write_file(tmp / name, payload[name])
      _write_file(tmp / MANIFEST_FILE, manifest.to_json().encode("utf-8"))
      _fsync_dir(tmp)
      if final.exists():
        raise _exists(entry_id, final)
      try:
        os.rename(tmp, final)
      except OSError:
        if final.exists():  # Another writer won the race; its entry stays.
          raise _exists(entry_id, final) from None
        raise
      _fsync_dir(case_dir)
    except BaseException as e:
      shutil.rmtree(tmp, ignore_errors=True)
      if isinstance(e, OSError):
        raise _unwritable(case_dir, e) from None
      raise
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

  def prune(self, older_than_days: int, today: datetime.date | None = None,
            dry_run: bool = True, dated_in_future: bool = False,
            superseded: bool = False) -> list[Entry]:
    """Entries recorded more than ``older_than_days`` before ``today``; removed unless dry_run.

    ``dated_in_future`` adds the entries whose record date is after ``today``:
    no recording comes from the future, so their date is wrong and they would
    never expire. ``superseded`` adds the entries that have a newer entry of
    the same case by the same jax release (:meth:`superseded`).
    """
    if isinstance(older_than_days, bool) or not isinstance(older_than_days, int) or older_than_days < 0:
      raise GoldenDataError(f"older_than_days must be a non-negative integer, got {older_than_days!r}.")
    today = today or datetime.date.today()
    replaced = set(self.superseded()) if superseded else set()
    expired = [e for e in self.entries() if (today - e.record_date).days > older_than_days
               or (dated_in_future and e.record_date > today) or e in replaced]
    if dry_run:
      return expired
    for e in expired:
      # Move out of the way first so that a crash never leaves a half-deleted entry visible.
      doomed = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}prune-", dir=e.path.parent))
      os.rename(e.path, doomed / e.path.name)
      shutil.rmtree(doomed)
      logger.info("pruned golden entry %s", e.entry_id)
      parent = e.path.parent
      while parent != self.root and parent.is_dir() and not os.listdir(parent):
        parent.rmdir()
        parent = parent.parent
    return expired


def _read_bytes(path: Path, where: str) -> bytes:
  try:
    return path.read_bytes()
  except OSError as e:
    raise GoldenDataError(f"{where}: cannot be read ({e.strerror or e}).") from None


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
