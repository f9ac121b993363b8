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

An entry's reading and verification is ``jaxport.golden._entry``'s; its arrays' npz form is
``jaxport.golden._npz``'s.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import logging
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxport.errors import GoldenDataError
from jaxport.golden._entry import Entry, Snapshot, entry_sort_key, listdir, sha256_hex
from jaxport.golden._entry_id import FOLDER_FORM, FOLDER_RE, EntryId, require_entry_id
from jaxport.golden._manifest import (
    BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MANIFEST_FILE, MODULE_FILE, PLATFORMS, SHARDINGS_FILE,
    FIRST_REVISION, MAX_REVISION, Manifest, _pretty, is_safe_name)
from jaxport.golden._npz import encode_arrays

logger = logging.getLogger(__name__)


# <YYYY-MM-DD>[.<revision>]_jax-<version>; a revision is 2 to MAX_REVISION (no leading zero).
_DIR_RE = FOLDER_RE
_DIR_FORM = FOLDER_FORM
_TMP_PREFIX = ".tmp-"
# A temporary directory of a write or prune this old was left by a process that was killed
# (an interrupted one removes its own); a later write into the same case removes it.
_STALE_TMP_S = 10 * 60


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

  def __init__(self, root: str | os.PathLike, *, scratch: bool = False):
    """``scratch``: a store a command makes for its own use and removes, whose writes are
    logged at debug level only (a user never sees it)."""
    self.root = Path(root)
    self.scratch = scratch

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
            found.append(Entry(d, EntryId(p.name, fam.name, case.name, d.name)))
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
        found.append(Entry(d, EntryId(manifest.platform, manifest.family, manifest.case_id, d.name)))
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
    for name in sorted(listdir(path)):
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
    parts = require_entry_id(entry_id, "GoldenStore.entry").parts
    if not all(is_safe_name(x) for x in parts):
      raise GoldenDataError(
          f"bad entry id {str(entry_id)!r}; expected '<platform>/<family>/<case_id>/{_DIR_FORM}'.")
    path = self._inside(parts)
    if not path.is_dir():
      raise GoldenDataError(f"golden entry {entry_id}: no such entry under {self.root}.")
    return Entry(path, entry_id)

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
    entry_id = manifest.entry_id
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
    final = self._inside(list(entry_id.parts))
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
    entry_id = manifest.entry_id
    final = self._inside(list(entry_id.parts))
    if os.path.lexists(final):
      raise _exists(entry_id, final)
    case_dir = final.parent
    tmp: Path | None = None
    try:  # On any exception, KeyboardInterrupt included, the temporary directory goes.
      try:
        if not self.root.is_dir():
          self.root.mkdir(parents=True)
        self._inside(list(entry_id.parts), create_parents=True)
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
    logger.log(logging.DEBUG if self.scratch else logging.INFO, "wrote golden entry %s", entry_id)
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
               and (not cases or e.entry_id.case_id in cases)]
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
  for name in sorted(listdir(case_dir)):
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


def _unwritable(path: Path, error: OSError) -> GoldenDataError:
  return GoldenDataError(
      f"{path}: cannot write into the golden store ({error.strerror or error}). Make the "
      "store writable, or pass another store.")


def _exists(entry_id: EntryId, path: Path) -> GoldenDataError:
  return GoldenDataError(
      f"golden entry {entry_id}: {path} already exists. The golden store is append-only and "
      "never overwrites an entry; record on another day or with another jax version, or remove "
      "expired entries with 'jaxport prune'.")
