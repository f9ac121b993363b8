"""Keeping what a replay under another release measured, per entry, in the project.

A harness replay under a release jaxport runs on (its report) and a replay by an older
release's own ``jax.export`` (the release replayer's rows) both say, per entry, whether the
entry's blob loaded, ran and reproduced there; :mod:`jaxport.releases._measured` keeps that,
and ``runs_on`` takes it over the release table's prediction.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from jaxport._vocabulary import FindingKind, Subject
from jaxport.golden import EntryId, GoldenStore
from jaxport.releases import MeasuredRun, read_measured, write_measured

logger = logging.getLogger(__name__)

# Findings of a reader (or of the process replaying) that say the blob does not load, run or
# reproduce under the release; any other finding (today's lowering, the entry's age, the
# project's policy) says nothing about that.
_NOT_RUNNING = frozenset({FindingKind.COMPATIBILITY_BREAK, FindingKind.GOLDEN_DATA_ERROR,
                          FindingKind.UPGRADED, FindingKind.NUMERICS_CHANGE})
_REPLAY_SUBJECTS = frozenset({Subject.READER, Subject.WORKER})
_DETAIL_CHARS = 300
# The release replayer's outcomes: those that measure nothing.
_UNMEASURED = ("skip",)


def _blob_sha256(store: GoldenStore, entry_id: str) -> str | None:
  try:
    return store.entry(EntryId.parse(entry_id)).manifest.files.get("exported.bin")
  except Exception as e:  # noqa: BLE001  (an unreadable entry is simply not remembered)
    logger.info("not remembering %s: %s", entry_id, e)
    return None


def remember(project: Path, store_root: Path, version: str,
             verdicts: Mapping[str, tuple[bool, str] | None]) -> int:
  """Add ``verdicts`` (entry id -> (runs, detail)) measured under ``version`` to the project's
  measurements, replacing what an earlier replay there measured (None: this replay could not
  measure the entry, and the earlier measurement goes); how many were kept."""
  store = GoldenStore(store_root)
  measured = read_measured(project)
  today = datetime.date.today()
  kept = 0
  for entry_id, verdict in verdicts.items():
    if verdict is None:
      measured = measured.without(entry_id, version)
      continue
    runs, detail = verdict
    sha = _blob_sha256(store, entry_id)
    if sha is None:
      continue
    measured = measured.with_runs(entry_id, [MeasuredRun(version, runs, detail[:_DETAIL_CHARS],
                                                         today, sha)])
    kept += 1
  path = write_measured(project, measured)
  logger.info("kept %d measurements under jax %s in %s", kept, version, path)
  return kept


def verdicts_of_report(report_path: Path, version: str) -> dict[str, tuple[bool, str]]:
  """Entry id -> (runs, detail) from a harness report of a replay under ``version``."""
  from jaxport.report import load_report
  out = {}
  for e in load_report(report_path).entries:
    bad = [f for f in e.findings if f.subject in _REPLAY_SUBJECTS and f.kind in _NOT_RUNNING]
    out[e.entry_id] = ((False, f"[{bad[0].kind}] {bad[0].message}") if bad
                       else (True, f"replayed by the harness under jax {version}"))
  return out


def verdicts_of_rows(rows: Iterable[Mapping], version: str
                     ) -> dict[str, tuple[bool, str] | None]:
  """Entry id -> (runs, detail) from the release replayer's rows under ``version`` (None: the
  replayer could not measure it)."""
  out: dict[str, tuple[bool, str] | None] = {}
  for row in rows:
    outcome = row.get("outcome")
    if outcome in _UNMEASURED:
      out[row["entry_id"]] = None
      continue
    if outcome == "pass":
      out[row["entry_id"]] = (True, f"replayed by jax {version}'s own jax.export")
    elif outcome == "ran":
      out[row["entry_id"]] = (True, f"run by jax {version}'s own jax.export: {row.get('error')}")
    else:
      out[row["entry_id"]] = (False, f"{row.get('stage')}: {row.get('error')}")
  return out
