"""Whether today's recording of a case equals the day's newest entry of it in the golden store.

Runs in the worker: the module text and blob are compared without their source locations
(two comment lines above a case move them), and parsing a module for that imports jax, which
the session's process never does. The session reads the result from the record answer
(``RecordAnswer.compared_with``, ``RecordAnswer.differing``).
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxport.errors import GoldenDataError
from jaxport.golden import _locations
from jaxport.golden._entry import Entry
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import LOCATED_FILES, MANIFEST_FILE
from jaxport.golden._store import GoldenStore


def compare_with_store(staged: Entry, store_root: str) -> tuple[EntryId | None, tuple[str, ...]]:
  """The day's newest entry of ``staged``'s case in the store at ``store_root`` and the files
  in which the two differ; (None, ()) where the store holds no entry of that day, or refuses
  to list them (a link: writing the recording there reports why)."""
  try:
    same_day = GoldenStore(store_root).same_day(staged.manifest)
  except GoldenDataError:
    return None, ()
  if not same_day:
    return None, ()
  newest = same_day[-1]
  return newest.entry_id, tuple(differing_files(staged.path, newest.path))


def differing_files(staged: Path, existing: Path) -> list[str]:
  """Files that differ between two entry directories: the blob and the module text compared
  without their source locations, the manifest without its digest, revision and those two
  files' digests, every other file byte for byte."""
  names = sorted({p.name for p in staged.iterdir()} | {p.name for p in existing.iterdir()})
  out = []
  for name in names:
    a, b = staged / name, existing / name
    if not (a.is_file() and b.is_file()):
      out.append(name)
    elif name == MANIFEST_FILE:
      if _manifest_payload(a) != _manifest_payload(b):
        out.append(name)
    elif name in LOCATED_FILES:
      data_a, data_b = a.read_bytes(), b.read_bytes()
      if data_a != data_b and not _locations.same_without_locations(name, data_a, data_b):
        out.append(name)
    elif a.read_bytes() != b.read_bytes():
      out.append(name)
  return out


def _manifest_payload(path: Path) -> dict:
  d = json.loads(path.read_text())
  d.pop("digest", None)
  d.pop("revision", None)  # the entry's name among those of its day, not what it holds
  files = d.get("files")
  if isinstance(files, dict):
    # Digests of files that carry source locations: those files are compared without them.
    d["files"] = {k: v for k, v in files.items() if k not in LOCATED_FILES}
  return d
