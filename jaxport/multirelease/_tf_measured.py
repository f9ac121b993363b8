"""Keeping what a ``replay --with-tf`` run measured, per entry, in the project's measurements.

The judge's outcome of each ``tf`` reader row (``jaxport.harness._judge._tf_runs``) says
whether the TensorFlow release served the entry, or why not; this writes it beside the jax
releases' records (:mod:`jaxport.releases._measured`, read by ``audit`` and ``inspect``), keyed
by the sha256 of the blob the reader called. A row that measured nothing of the release (the
reader's own failure, an entry it does not call) takes away what an earlier run there kept.
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from jaxport._jaxcompat._version import JAXPORT_VERSION
from jaxport.errors import PrivatePathError
from jaxport.golden import GoldenStore
from jaxport.harness._judge._tf_runs import TfRun
from jaxport.harness._protocol._tf_rows import TfRow
from jaxport.multirelease._measured import _blob_sha256, updating, write_measured
from jaxport.releases import MeasuredServe, read_measured

logger = logging.getLogger(__name__)

_DETAIL_CHARS = 300


def served_record(row: TfRow, run: TfRun, release: str, sha: str,
                  today: datetime.date) -> MeasuredServe | None:
  """The record of one judged row of TensorFlow ``release`` (None: it measured nothing)."""
  if not run.measured or run.status is None:
    return None
  refusal = run.refusal
  reason, detail = (None, run.detail) if refusal is None else (str(refusal.reason), refusal.message)
  return MeasuredServe(release, run.passed, reason, detail[:_DETAIL_CHARS], today, sha,
                       JAXPORT_VERSION)


def remember_served(project: str | os.PathLike, store_root: Path, release: str,
                    rows: Sequence[TfRow], runs: Sequence[TfRun],
                    cache_dir: str | os.PathLike | None = None) -> int:
  """Add what TensorFlow ``release`` measured of each row's entry to the project's
  measurements; how many were kept. Each is keyed by the sha256 of the blob the reader called,
  kept only where the store's blob is still that one (a row naming no blob keeps nothing). Where the measurements' folder or lock is
  a link, none is kept, and the log says so naming it."""
  try:
    return _remember(Path(project), GoldenStore(store_root), release, rows, runs, cache_dir)
  except PrivatePathError as e:  # the run's own verdicts stand; only keeping them is refused
    logger.warning("no measurement under TensorFlow %s is kept: %s", release, e)
    return 0


def _remember(project: Path, store: GoldenStore, release: str, rows: Sequence[TfRow],
              runs: Sequence[TfRun], cache_dir: str | os.PathLike | None) -> int:
  today = datetime.date.today()
  kept = 0
  with updating(project, cache_dir):
    measured = read_measured(project, cache_dir)
    for row, run in zip(rows, runs, strict=True):
      now = _blob_sha256(store, row.entry_id)
      if now is not None and row.blob_sha256 != now:
        logger.warning("not keeping the measurement of %s: TensorFlow called the blob %s, the "
                       "store now holds %s", row.entry_id, row.blob_sha256 or "(none)", now)
        now = None
      record = None if now is None else served_record(row, run, release, now, today)
      if record is None:
        measured = measured.without_served(row.entry_id, release)
        continue
      measured = measured.with_served(row.entry_id, [record])
      kept += 1
    path = write_measured(project, measured, cache_dir)
  logger.info("kept %d measurements under TensorFlow %s in %s", kept, release, path)
  return kept
