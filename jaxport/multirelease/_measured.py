"""Keeping what a replay under another release measured, per entry, in the project.

A harness replay under a release jaxport runs on (its report) and a replay by an older
release's own ``jax.export`` (the release replayer's rows) both say, per entry, whether the
entry's blob loaded, ran and reproduced there. This writes that into the project's measurements
(whose file :mod:`jaxport.releases._measured` reads), and ``runs_on`` takes it over the release
table's prediction.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from jaxport._files import holding_lock, write_replacing
from jaxport._jaxcompat._version import JAXPORT_VERSION
from jaxport._vocabulary import FindingKind, Subject
from jaxport.errors import JaxportError, PrivatePathError, ReportError
from jaxport.golden import EntryId, GoldenStore
from jaxport.multirelease._native import skip_reason, unregistered_kernel
from jaxport.harness._judge._release_runs import judge_report_entry, judge_row
from jaxport.releases import MeasuredRun, MeasuredRuns, read_measured
from jaxport.releases._measured import checked_path
from jaxport.report import load_report

logger = logging.getLogger(__name__)

_DETAIL_CHARS = 300


def write_measured(project_root: str | os.PathLike, measured: MeasuredRuns,
                   cache_dir: str | os.PathLike | None = None) -> Path:
  """Write the project's measurements whole (to a temporary file of its own, then renamed)."""
  path = checked_path(project_root, cache_dir)
  path.parent.mkdir(parents=True, exist_ok=True)
  text = json.dumps(measured.to_json(), indent=1, sort_keys=True) + "\n"
  write_replacing(path, text.encode(), private=True)
  return path


@contextlib.contextmanager
def updating(project_root: str | os.PathLike,
             cache_dir: str | os.PathLike | None = None) -> Iterator[None]:
  """Hold the project's measurements for one read, change and write (another process
  replaying the same project waits); a link at the lock file is refused, never followed."""
  path = checked_path(project_root, cache_dir)
  path.parent.mkdir(parents=True, exist_ok=True)
  with holding_lock(path.with_name(f".{path.name}.lock")):
    yield


def _blob_sha256(store: GoldenStore, entry_id: EntryId) -> str | None:
  """The sha256 of the entry's blob as read from the store (its bytes, checked against the
  manifest's record); None when it does not read, and a measurement is then not kept."""
  try:
    blob = store.entry(entry_id).blob()
  except (JaxportError, ValueError, OSError) as e:
    logger.warning("not keeping the measurement of %s: its blob does not read: %s", entry_id, e)
    return None
  return hashlib.sha256(blob).hexdigest()


def remember(project: Path, store_root: Path, version: str,
             verdicts: Mapping[EntryId, tuple[bool, str] | None],
             replayed: Mapping[EntryId, str | None] | None = None,
             cache_dir: Path | None = None) -> int:
  """Add ``verdicts`` (entry id -> (runs, detail)) measured under ``version`` to the project's
  measurements (in ``cache_dir``, the run's --compat-cache-dir, when given), replacing what an
  earlier replay there measured (None: this replay could not measure the entry, and the
  earlier measurement goes); how many were kept. Each is keyed by the sha256 of the blob as it
  reads now (one that does not read is not kept) and names this jaxport release as its judge.
  ``replayed``: entry id -> the sha256 of the blob the run replayed, where its report names it;
  a blob that reads otherwise now is not kept. Where the measurements' folder or lock is a
  link, none is kept, and the log says so naming it."""
  try:
    return _remember(project, GoldenStore(store_root), version, verdicts, replayed or {},
                     cache_dir)
  except PrivatePathError as e:  # the run's own verdicts stand; only keeping them is refused
    logger.warning("no measurement under jax %s is kept: %s", version, e)
    return 0


def _remember(project: Path, store: GoldenStore, version: str,
              verdicts: Mapping[EntryId, tuple[bool, str] | None],
              replayed: Mapping[EntryId, str | None],
              cache_dir: Path | None) -> int:
  """:func:`remember`, a link at the measurements' folder or lock refused."""
  today = datetime.date.today()
  kept = 0
  with updating(project, cache_dir):
    measured = read_measured(project, cache_dir)
    for entry_id, verdict in verdicts.items():
      if verdict is None:
        measured = measured.without(entry_id, version)
        continue
      runs, detail = verdict
      sha = _blob_sha256(store, entry_id)
      ran_on = replayed.get(entry_id)
      if sha is not None and ran_on is not None and ran_on != sha:
        logger.warning("not keeping the measurement of %s: the run replayed the blob %s, the "
                       "store now holds %s", entry_id, ran_on, sha)
        sha = None
      if sha is None:
        measured = measured.without(entry_id, version)
        continue
      measured = measured.with_runs(entry_id, [MeasuredRun(
          version, runs, detail[:_DETAIL_CHARS], today, sha, JAXPORT_VERSION)])
      kept += 1
    path = write_measured(project, measured, cache_dir)
  logger.info("kept %d measurements under jax %s in %s", kept, version, path)
  return kept


def verdicts_of_report(report_path: Path, version: str
                       ) -> dict[EntryId, tuple[bool, str] | None]:
  """Entry id -> (runs, detail) from a harness report of a replay under ``version``, judged by
  the release's own reader (None: it measured nothing of the entry, as for an entry whose
  project kernel did not register there: :func:`kernel_skips`). A report of a run under another
  jax is refused: it measured nothing of ``version``."""
  report = _report_under(report_path, version)
  skipped = _kernel_skips(report, version)
  out: dict[EntryId, tuple[bool, str] | None] = {}
  for e in report.entries:
    out[e.entry_id] = (None if e.entry_id in skipped else
                            judge_report_entry(e, report.platform, report.readers, version))
  return out


def replayed_blobs(report_path: Path, version: str) -> dict[EntryId, str | None]:
  """Entry id -> the sha256 of the blob the run under ``version`` replayed (None: its report
  does not name it)."""
  return {e.entry_id: e.blob_sha256 for e in _report_under(report_path, version).entries}


def kernel_skips(report_path: Path, version: str) -> dict[EntryId, str]:
  """Entry id -> why it is skipped: the entries of a report of a replay under ``version``
  whose project native kernel did not register there (:mod:`._native`)."""
  return _kernel_skips(_report_under(report_path, version), version)


def _report_under(report_path: Path, version: str):
  """The report at ``report_path``, which must be of a run under jax ``version``."""
  report = load_report(report_path)
  ran_under = report.versions.get("jax")
  if ran_under != version:
    raise ReportError(f"{report_path} is the report of a run under jax {ran_under}, not "
                      f"{version}: nothing of jax {version} is kept from it. Replay again with "
                      f"--with-jax {version}.")
  return report


def _kernel_skips(report, version: str) -> dict[EntryId, str]:
  out = {}
  for e in report.entries:
    for f in e.findings:
      if f.subject is not Subject.READER or f.kind is not FindingKind.COMPATIBILITY_BREAK:
        continue
      target = unregistered_kernel(f.message, e.targets)
      if target is not None:
        out[e.entry_id] = skip_reason(target, version)
        break
  return out


def verdicts_of_rows(rows: Iterable[Mapping], version: str
                     ) -> dict[EntryId, tuple[bool, str] | None]:
  """Entry id -> (runs, detail) from the release replayer's rows under ``version``, as the
  judge weighs each (``_judge._release_runs``; None: the replayer measured nothing of it)."""
  out: dict[EntryId, tuple[bool, str] | None] = {}
  for row in rows:
    run = judge_row(row, version)
    out[run.entry_id] = None if run.runs is None else (run.runs, run.detail)
  return out
