"""Where a failing entry's artifacts go and how their files are written: jax-free, so that the
session can say what a worker that died while writing them left behind.

Folder names come from entry ids, sanitised to one plain name directly under the artifacts
directory; files are written to a temporary name and renamed, so a link planted there is
replaced, never followed. ``artifacts.json`` is written before each file and after the last:
while ``writing`` names a file, the artifacts are incomplete.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from jaxport._files import is_partial, write_replacing
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId, split_parts

OBTAINED_FILE = "obtained.npz"
TODAY_MODULE_FILE = "today.mlir"
DIFF_FILE = "module.diff"
RAW_DIFF_FILE = "module.raw.diff"
SUMMARY_FILE = "artifacts.json"
# Longest folder name kept as it is; longer ones are cut and given a digest of the id.
MAX_NAME_CHARS = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def folder_name(entry_id: EntryId | str) -> str:
  """One plain folder name for ``entry_id`` (an id, or text that may name one): its parts
  joined by ``__``, characters outside ``A-Za-z0-9._-`` replaced, no leading dot, never ``.``
  or ``..``; an id that needed any of that (or is long) gets a digest of itself appended, so
  distinct ids stay distinct."""
  entry_id = str(entry_id)
  parts = split_parts(entry_id.replace("\\", "/"))
  kept = [p for p in parts if p not in ("", ".", "..")]
  cleaned = [_UNSAFE.sub("_", p).lstrip(".") or "_" for p in kept]
  name = "__".join(cleaned) or "entry"
  plain = kept == parts and cleaned == kept and "__" not in entry_id
  if not plain or len(name) > MAX_NAME_CHARS:
    digest = hashlib.sha256(entry_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = f"{name[:MAX_NAME_CHARS]}-{digest}"
  return name


def entry_folder(root: Path, entry_id: EntryId) -> Path:
  """The artifacts folder of ``entry_id`` directly under ``root``, made if missing; a link or
  a file in its place is refused (GoldenDataError naming it)."""
  root.mkdir(parents=True, exist_ok=True)
  folder = root / folder_name(entry_id)
  if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
    raise GoldenDataError(f"{folder}: the artifacts folder of {str(entry_id)!r} is taken by a link or "
                          "a file; remove it or pass another --compat-artifacts directory.")
  folder.mkdir(exist_ok=True)
  if folder.resolve().parent != root.resolve():
    raise GoldenDataError(f"{folder}: resolves outside {root}; artifacts are written only "
                          "inside the --compat-artifacts directory.")
  return folder


def write_file(folder: Path, name: str, data: bytes) -> None:
  """``folder/name`` holding ``data``, written under a temporary name and renamed into place."""
  write_replacing(folder / name, data, private=True)


def write_summary(folder: Path, entry_id: EntryId, reader: str, files: Sequence[str],
                  problems: Sequence[str], writing: str | None = None) -> None:
  """``artifacts.json``: the entry, the reader, the files written, why any is missing, and the
  file being written now (None once all are done)."""
  summary = {"entry_id": str(entry_id), "reader": reader, "files": sorted(files),
             "problems": list(problems), "writing": writing}
  write_file(folder, SUMMARY_FILE, (json.dumps(summary, indent=1, sort_keys=True) + "\n").encode())


def left_behind(root: Path, entry_id: EntryId) -> tuple[Path, tuple[str, ...], str | None] | None:
  """What an interrupted writer left of ``entry_id``'s artifacts under ``root``: the folder, the
  whole files in it, and the file it was writing (from ``artifacts.json``); None when there is
  no such folder or it is empty."""
  folder = root / folder_name(entry_id)
  if folder.is_symlink() or not folder.is_dir():
    return None
  files = tuple(sorted(p.name for p in folder.iterdir()
                       if p.is_file() and not is_partial(p.name)
                       and p.name != SUMMARY_FILE))
  writing = None
  try:
    writing = json.loads((folder / SUMMARY_FILE).read_text()).get("writing")
  except (OSError, ValueError, AttributeError):
    pass
  if not files and writing is None:
    return None
  return folder, files, writing if isinstance(writing, str) else None
