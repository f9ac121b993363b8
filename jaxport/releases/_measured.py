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

``jaxport replay --with-tf VERSION`` keeps, beside them, whether each entry's blob was served by
a TensorFlow release's ``XlaCallModule`` (:class:`MeasuredServe`: served, or not and the
refusal's reason), keyed by the blob's sha256 the same way. Format 3 holds both; a file of
format 2, written before TensorFlow's records, reads as holding none of them.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping, Sequence
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
FORMAT = 3
# The older format still read: the jax releases' records alone (no TensorFlow records).
_JAX_ONLY_FORMAT = 2
_FIX = ("remove the file; `jaxport replay --with-jax VERSION` (and `--with-tf VERSION`) "
        "measures again")
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


def _served_check(record: MeasuredServe, d: Mapping[str, Any], s: Strict, where: str) -> None:
  """A refusal is named by its reason (an identifier); a served entry has none."""
  if record.reason is not None and not record.reason.isidentifier():
    raise s.fail(f"{where}.reason", f"expected a refusal's name, got {record.reason!r}")
  if record.served and record.reason is not None:
    raise s.fail(f"{where}.reason", f"a served entry has no refusal, got {record.reason!r}")


@json_record(_STRICT, check=_served_check)
@dataclasses.dataclass(frozen=True)
class MeasuredServe:
  """One entry called by one TensorFlow release's ``XlaCallModule``: whether it was served
  (called and, where the entry's comparison could, reproduced), else the refusal's ``reason``
  as the judge names it (``calling_convention``, ``stablehlo_version``, ``custom_call``,
  ``platform``; None where TensorFlow computed it differently or failed for no named reason)."""
  # The TensorFlow release: the key of the record in its entry's object.
  release: str = key(skip=True)
  served: bool
  reason: str | None
  detail: str
  date: datetime.date
  blob_sha256: str
  judged_by: str     # the jaxport release whose judge weighed the reader's row

  @property
  def verdict(self) -> str:
    """``serves``, or ``does not serve`` with the refusal's reason and what it says."""
    if self.served:
      return "serves"
    return f"does not serve ({self.reason + ': ' if self.reason else ''}{self.detail})"

  def __str__(self) -> str:
    return (f"TensorFlow {self.release}: {self.verdict}, measured {self.date.isoformat()} by "
            f"jaxport {self.judged_by}")


def _format(s: Strict, value: Any, where: str) -> int:
  """The file's format: this one, or the older one without TensorFlow's records (read as
  holding none); the records of a still older file are measured again."""
  if s.count(value, where) not in (FORMAT, _JAX_ONLY_FORMAT):
    raise s.fail(where, f"expected {FORMAT} (or {_JAX_ONLY_FORMAT}), got {value}" + (
        " (its records do not name the jaxport release that judged them)" if value == 1 else ""))
  return FORMAT


def _records_reader(record: Any, consumer: str):
  """The reader of entry id -> release -> ``record``, each keyed by its release, whose
  releases are ``consumer``'s (``jax``, ``TensorFlow``)."""
  def read(s: Strict, value: Any, where: str) -> dict[EntryId, dict[str, Any]]:
    out = {}
    for entry_id, runs in s.of(value, Mapping, where).items():
      at = f"{where}.{entry_id}"
      out[_entry_id(s, entry_id, at)] = {
          _release(s, release, at, consumer): record.from_json(run, f"{at}.{release}", s,
                                                               release=release)
          for release, run in s.of(runs, Mapping, at).items()}
    return out
  return read


def _write_records(records: Mapping[EntryId, Mapping[str, Any]]) -> dict[str, Any]:
  return {str(e): {r: run.to_json() for r, run in sorted(runs.items())}
          for e, runs in sorted(records.items())}


def _format_check(record: MeasuredRuns, d: Mapping[str, Any], s: Strict, where: str) -> None:
  """TensorFlow's records are in a file of this format, and in no older one."""
  older = d["format"] == _JAX_ONLY_FORMAT
  if older and "tf" in d:
    raise s.fail(where, f"unknown key 'tf' (a file of format {_JAX_ONLY_FORMAT} holds no "
                        "TensorFlow records)")
  if not older and "tf" not in d:
    raise s.fail(where, "missing tf")


@json_record(_STRICT, check=_format_check)
@dataclasses.dataclass(frozen=True)
class MeasuredRuns:
  """Every measurement of a project: entry id -> jax release -> run, and entry id ->
  TensorFlow release -> whether it served the entry (``tf``); the file's format first, an
  older file refused before its records are read."""
  format: int = key(default=FORMAT, read=_format)
  # Keyed by entry id, then by release: the keys are not fields of the runs.
  entries: Mapping[EntryId, Mapping[str, MeasuredRun]] = key(
      default_factory=dict, read=_records_reader(MeasuredRun, "jax"), write=_write_records)
  tf: Mapping[EntryId, Mapping[str, MeasuredServe]] = key(
      default_factory=dict, optional=True, read=_records_reader(MeasuredServe, "TensorFlow"),
      write=_write_records)

  def of(self, entry_id: EntryId, blob_sha256: str | None) -> tuple[MeasuredRun, ...]:
    """The measurements of ``entry_id`` whose blob is still ``blob_sha256``, oldest release
    first."""
    return _of(self.entries, require_entry_id(entry_id, "MeasuredRuns.of"), blob_sha256)

  def served_by(self, entry_id: EntryId, blob_sha256: str | None) -> tuple[MeasuredServe, ...]:
    """What TensorFlow releases measured of ``entry_id`` whose blob is still ``blob_sha256``,
    oldest release first."""
    return _of(self.tf, require_entry_id(entry_id, "MeasuredRuns.served_by"), blob_sha256)

  def with_runs(self, entry_id: EntryId, runs: list[MeasuredRun]) -> MeasuredRuns:
    """These measurements with ``runs`` of ``entry_id`` added (a release's newer one wins)."""
    require_entry_id(entry_id, "MeasuredRuns.with_runs")
    return dataclasses.replace(self, entries=_added(self.entries, entry_id, runs))

  def with_served(self, entry_id: EntryId, served: list[MeasuredServe]) -> MeasuredRuns:
    """These measurements with TensorFlow's ``served`` of ``entry_id`` added (a release's
    newer one wins)."""
    require_entry_id(entry_id, "MeasuredRuns.with_served")
    return dataclasses.replace(self, tf=_added(self.tf, entry_id, served))

  def without(self, entry_id: EntryId, release: str) -> MeasuredRuns:
    """These measurements less that of ``entry_id`` under ``release`` (a newer replay there
    could not measure it)."""
    return dataclasses.replace(self, entries=_removed(self.entries, entry_id, release))

  def without_served(self, entry_id: EntryId, release: str) -> MeasuredRuns:
    """These measurements less TensorFlow ``release``'s of ``entry_id`` (a newer run there
    could not measure it)."""
    return dataclasses.replace(self, tf=_removed(self.tf, entry_id, release))


def _of(records: Mapping[EntryId, Mapping[str, Any]], entry_id: EntryId,
        blob_sha256: str | None) -> tuple[Any, ...]:
  runs = records.get(entry_id, {})
  return tuple(sorted((r for r in runs.values() if r.blob_sha256 == blob_sha256),
                      key=lambda r: parse_version(r.release)))


def _added(records: Mapping[EntryId, Mapping[str, Any]], entry_id: EntryId,
           runs: list[Any]) -> dict[EntryId, dict[str, Any]]:
  out = {k: dict(v) for k, v in records.items()}
  for run in runs:
    out.setdefault(entry_id, {})[run.release] = run
  return out


def _removed(records: Mapping[EntryId, Mapping[str, Any]], entry_id: EntryId,
             release: str) -> dict[EntryId, dict[str, Any]]:
  out = {k: {r: run for r, run in v.items() if (k, r) != (entry_id, release)}
         for k, v in records.items()}
  return {k: v for k, v in out.items() if v}


def _entry_id(s: Strict, text: str, where: str) -> EntryId:
  """The entry id ``text`` names, else the reader's refusal naming ``where``."""
  try:
    return EntryId.parse(text)
  except ValueError as e:
    raise s.fail(where, str(e)) from None


def _release(s: Strict, text: str, where: str, consumer: str = "jax") -> str:
  """``text`` if it is a version number of ``consumer``'s, else the reader's refusal naming
  ``where``."""
  try:
    parse_version(text)
  except (ValueError, JaxportError):
    raise s.fail(where, f"{text!r} is not a {consumer} release") from None
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

# How audit and inspect carry what ``--with-tf`` runs measured of an entry.
SERVES_ON_TF = "serves_on_tf"


def serves_on_tf_json(served: Sequence[MeasuredServe]) -> dict[str, Any]:
  """``{"serves_on_tf": {release: record}}``: what TensorFlow releases measured of an entry
  (only measured: nothing predicts TensorFlow)."""
  return {SERVES_ON_TF: {r.release: {"served": r.served, "reason": r.reason, "detail": r.detail,
                                     "date": r.date.isoformat(), "judged_by": r.judged_by}
                         for r in served}}


def serves_on_tf_lines(record: Mapping[str, Any]) -> list[str]:
  """The text line of :func:`serves_on_tf_json` within ``record``, none where nothing was
  measured."""
  served = record.get(SERVES_ON_TF) or {}
  if not served:
    return []
  parts = []
  for release, r in served.items():
    verdict = "serves" if r["served"] else "does not serve (" + (
        f"{r['reason']}: " if r["reason"] else "") + f"{r['detail']})"
    parts.append(f"{release} {verdict}, measured {r['date']} by jaxport {r['judged_by']}")
  return ["  serves on TensorFlow (measured by --with-tf replays): " + "; ".join(parts)]
