"""What replays under other jax releases measured for a project's own entries.

``jaxport replay --with-jax VERSION`` keeps, per entry and release, whether the entry loaded,
ran and reproduced there, in the project's ``.jaxport_cache/measured-releases.json``. Where the
release table predicts where an entry runs (:func:`runs_on`), a measurement of that entry
takes precedence and says so (:meth:`RunsOn.with_measured`): a measured run counts even where
the prediction says the release refuses, a measured failure even where it says it runs.

A measurement is tied to the entry's blob (the sha256 of the bytes the replay read): a file whose
entry was written anew is not taken for it. Each names the jaxport release that judged it, and
a newer measurement of the entry under the same release replaces it. The file is data only:
strict JSON, refused naming the bad key, never run, and read and written only where neither
its folder nor a folder between it and the project's root is a link (``PrivatePathError``
naming the link: nothing is read or written through it).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._files import refuse_links
from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import JaxportError, ReleaseTableError
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.releases._version_text import parse_version

# Relative to the project's root (where its pytest configuration lives); in the folder
# --compat-cache-dir names instead, where a run names one.
MEASURED_FILE = Path(".jaxport_cache") / "measured-releases.json"
FORMAT = 2
_FIX = "remove the file; `jaxport replay --with-jax VERSION` measures again"
_STRICT = Strict(lambda where, what: ReleaseTableError(f"{MEASURED_FILE}: {where}: {what}; {_FIX}"))


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class MeasuredRun:
  """One entry replayed under one release: whether it loaded, ran and reproduced there."""
  # The key of the run in its entry's object: given to ``from_json`` by its reader.
  release: str = key(skip=True)
  runs: bool
  detail: str        # the failing stage and message, or what was replayed
  date: datetime.date
  blob_sha256: str
  judged_by: str     # the jaxport release whose harness or replayer judged the run

  @property
  def verdict(self) -> str:
    """``runs`` or ``does not run``, with the jaxport release that judged it."""
    return f"{'runs' if self.runs else 'does not run'} (judged by jaxport {self.judged_by})"

  def __str__(self) -> str:
    verdict = "runs" if self.runs else f"does not run ({self.detail})"
    return (f"{self.release}: {verdict}, measured {self.date.isoformat()} by jaxport "
            f"{self.judged_by}")


def _format(s: Strict, value: Any, where: str) -> int:
  """The file's format: this one (an older file's records are measured again)."""
  if s.count(value, where) != FORMAT:
    raise s.fail(where, f"expected {FORMAT}, got {value}" + (
        " (its records do not name the jaxport release that judged them)" if value == 1 else ""))
  return value


def _read_entries(s: Strict, value: Any, where: str) -> dict[EntryId, dict[str, MeasuredRun]]:
  """Entry id -> release -> run, each run keyed by its release."""
  entries = {}
  for entry_id, runs in s.of(value, Mapping, where).items():
    at = f"{where}.{entry_id}"
    entries[_entry_id(s, entry_id, at)] = {
        _release(s, release, at): MeasuredRun.from_json(run, f"{at}.{release}", s,
                                                        release=release)
        for release, run in s.of(runs, Mapping, at).items()}
  return entries


def _write_entries(entries: Mapping[EntryId, Mapping[str, MeasuredRun]]) -> dict[str, Any]:
  return {str(e): {r: run.to_json() for r, run in sorted(runs.items())}
          for e, runs in sorted(entries.items())}


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class MeasuredRuns:
  """Every measurement of a project: entry id -> release -> run (the file's format first: an
  older file is refused before its records are read)."""
  format: int = key(default=FORMAT, read=_format)
  # Keyed by entry id, then by release: the keys are not fields of the runs.
  entries: Mapping[EntryId, Mapping[str, MeasuredRun]] = key(
      default_factory=dict, read=_read_entries, write=_write_entries)

  def of(self, entry_id: EntryId, blob_sha256: str | None) -> tuple[MeasuredRun, ...]:
    """The measurements of ``entry_id`` whose blob is still ``blob_sha256``, oldest release
    first."""
    runs = self.entries.get(require_entry_id(entry_id, "MeasuredRuns.of"), {})
    return tuple(sorted((r for r in runs.values() if r.blob_sha256 == blob_sha256),
                        key=lambda r: parse_version(r.release)))

  def with_runs(self, entry_id: EntryId, runs: list[MeasuredRun]) -> MeasuredRuns:
    """These measurements with ``runs`` of ``entry_id`` added (a release's newer one wins)."""
    require_entry_id(entry_id, "MeasuredRuns.with_runs")
    entries = {k: dict(v) for k, v in self.entries.items()}
    for run in runs:
      entries.setdefault(entry_id, {})[run.release] = run
    return MeasuredRuns(entries=entries)

  def without(self, entry_id: EntryId, release: str) -> MeasuredRuns:
    """These measurements less that of ``entry_id`` under ``release`` (a newer replay there
    could not measure it)."""
    entries = {k: {r: run for r, run in v.items() if (k, r) != (entry_id, release)}
               for k, v in self.entries.items()}
    return MeasuredRuns(entries={k: v for k, v in entries.items() if v})


def _entry_id(s: Strict, text: str, where: str) -> EntryId:
  """The entry id ``text`` names, else the reader's refusal naming ``where``."""
  try:
    return EntryId.parse(text)
  except ValueError as e:
    raise s.fail(where, str(e)) from None


def _release(s: Strict, text: str, where: str) -> str:
  """``text`` if it is a jax version number, else the reader's refusal naming ``where``."""
  try:
    parse_version(text)
  except (ValueError, JaxportError):
    raise s.fail(where, f"{text!r} is not a jax release") from None
  return text


def measured_path(project_root: str | os.PathLike,
                  cache_dir: str | os.PathLike | None = None) -> Path:
  """Where the project's measurements live: in ``cache_dir`` (the run's --compat-cache-dir,
  which keeps jaxport's files out of the project) or in the project's ``.jaxport_cache``."""
  if cache_dir is not None:
    return Path(cache_dir) / MEASURED_FILE.name
  return Path(project_root) / MEASURED_FILE


def checked_path(project_root: str | os.PathLike,
                  cache_dir: str | os.PathLike | None) -> Path:
  """:func:`measured_path`, refused (``PrivatePathError``) where its folder, or one between it
  and the project's root, is a link."""
  path = measured_path(project_root, cache_dir)
  refuse_links(path.parent, project_root, "the measurements of replays under other releases")
  return path


def read_measured(project_root: str | os.PathLike,
                  cache_dir: str | os.PathLike | None = None) -> MeasuredRuns:
  """The project's measurements; none when it has no file yet. A file that is a link, or not
  strict JSON of this form, is refused (``ReleaseTableError`` naming it and the fix)."""
  path = checked_path(project_root, cache_dir)
  if not os.path.lexists(path):
    return MeasuredRuns()
  return MeasuredRuns.from_json(_json.load_file(path, str(path), ReleaseTableError, _FIX,
                                                follow_links=False), "measured")
