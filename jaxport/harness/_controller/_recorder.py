"""Recording: cases recorded into staging, the write queue into the store, and ``--compat-update``.

A worker records a case into a staging store outside the golden one and compares
it with what the store holds for the same day (the comparison parses modules, which
needs jax); the recorder queues it, and writes the queue into the store at the end of
the run (append-only). A recording that cannot be written is never lost: its staging
store is kept and the session failure names it.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from jaxport._vocabulary import RecordAction
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller import _update
from jaxport.harness._protocol._answers import RecordAnswer, WorkerFailure
from jaxport.harness._controller._record_hints import hint_for
from jaxport.harness._registry import CaseRegistry
from jaxport.harness._protocol._requests import RecordRequest
from jaxport.harness._controller._worker_pool import WorkerPool, printed
from jaxport.report._sections import Recorded

if TYPE_CHECKING:
  import datetime


class Recorder:
  """The recordings of one pytest process and the entries it writes into the store."""

  def __init__(self, store: GoldenStore, pool: WorkerPool, registry: CaseRegistry,
               today: datetime.date, failures: list[str]):
    self.store = store
    self.pool = pool
    self.registry = registry
    self.today = today
    # The session's failures, which a write that fails adds to.
    self.failures = failures
    # case id -> what recording it did.
    self.recorded: dict[str, Recorded] = {}
    self.updates: list[_update.Update] = []
    self._write_queue: list[EntryId] = []
    self._staging: Path | None = None
    # Removes the staging folder when the recorder is dropped or the process exits without
    # close() (an interrupted run, a session never closed); detached where it is kept.
    self._cleanup: weakref.finalize | None = None

  def _staging_root(self) -> Path:
    if self._staging is None:
      self._staging = Path(tempfile.mkdtemp(prefix="jaxport-harness-staging-"))
      self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._staging), True)
    return self._staging

  def _keep_staging(self) -> Path | None:
    """Keep the staging folder on purpose (a failure names it): nothing removes it, and the
    next recording starts another; the folder kept."""
    kept, self._staging = self._staging, None
    if self._cleanup is not None:
      self._cleanup.detach()
      self._cleanup = None
    return kept

  def _record_in_staging(self, case_id: str) -> tuple[RecordAnswer | WorkerFailure, str]:
    """A worker's recording of ``case_id`` into staging, and what it printed meanwhile."""
    case = self.registry.case(case_id)
    reply = self.pool.worker(case.num_devices if case is not None else 1).request(
        RecordRequest(case_id, self.today.isoformat(), str(self._staging_root()),
                      str(self.store.root)))
    return self.pool.answer(reply, RecordAnswer), reply.output

  def record(self, case_id: str) -> Recorded:
    """Record ``case_id`` into staging and queue it; an identical existing entry is left alone."""
    answer, output = self._record_in_staging(case_id)
    if isinstance(answer, WorkerFailure):
      why = answer.why
      detail = without_repeat(answer.traceback or answer.stderr_tail, why)
      fix = hint_for(f"{why}\n{detail}")
      result = Recorded(case_id, None, RecordAction.ERROR,
                        f"recording failed: {why}" + (f"\n{fix}" if fix else "")
                        + (f"\n{detail}" if detail else "") + printed(output))
    else:
      entry_id = answer.entry_id
      result = Recorded(case_id, entry_id, RecordAction.WRITTEN,
                        "\n".join(filter(None, (nonfinite_message(answer.nonfinite),
                                                 *answer.config_changes, answer.gradients))))
      # The worker compared the recording with the day's newest revision of the case.
      if answer.compared_with is not None:
        entry_id = answer.compared_with
        result = dataclasses.replace(result, entry_id=entry_id)
        differing = list(answer.differing)
        if differing:
          result = dataclasses.replace(result, action=RecordAction.CONFLICT, message=(
              f"{entry_id} already exists and today's recording differs in {differing}. The "
              "store never overwrites an entry (source locations are not compared, so a moved "
              "case is not a cause). Usual causes: the lowering or the results changed today, "
              "or the build is not deterministic. Compare the module.mlir files to see which; "
              "where the function's lowering or results changed on purpose, --compat-update "
              "records it as the day's next revision."
              + (f"\n{answer.gradients}" if answer.gradients else "")))
        else:
          result = dataclasses.replace(result, action=RecordAction.UNCHANGED)
      else:
        self._write_queue.append(entry_id)
    self.recorded[case_id] = result
    return result

  def flush_writes(self) -> None:
    """Write every queued recording into the golden store (atomic, append-only).

    A recording that cannot be written is not lost: the staging store that
    holds it is kept, and the session failure names it.
    """
    staging = GoldenStore(self._staging_root()) if self._write_queue else None
    failed, raced = [], []
    for entry_id in self._write_queue:
      try:
        self.store.adopt(staging.entry(entry_id).snapshot())
      except GoldenDataError as e:
        (raced if self._written_meanwhile(entry_id) else failed).append(entry_id)
        self.failures.append(f"writing {entry_id} failed: {e}")
        for case_id, r in self.recorded.items():
          if r.entry_id == entry_id:
            self.recorded[case_id] = dataclasses.replace(r, action=RecordAction.ERROR,
                                                         message=str(e))
    self._write_queue.clear()
    if raced:
      self.failures.append(
          f"{len(raced)} recording(s) were written meanwhile by another recording of the same "
          f"store ({', '.join(map(str, raced))}); this run's are kept in {self._staging}, a "
          "golden store of the same layout: compare the two (module.mlir, manifest.json), and record again "
          "if they differ.")
    if failed:
      self.failures.append(
          f"{len(failed)} recording(s) could not be written and are kept in {self._staging}, "
          f"a golden store of the same layout; once {self.store.root} is writable, copy its "
          f"entry folders there (cp -r {self._staging}/* {self.store.root}/) or record again.")
    if raced or failed:
      self._keep_staging()  # kept: close() must not remove it

  def _written_meanwhile(self, entry_id: EntryId) -> bool:
    """Whether ``entry_id`` stands in the store now (another recording wrote it after this
    run found it absent)."""
    try:
      self.store.entry(entry_id)
    except GoldenDataError:
      return False
    return True

  # --- update ------------------------------------------------------------------

  def apply_updates(self, changes: list[_update.CaseChange]) -> None:
    """``--compat-update``, at the end of the run: record a new entry of every changed or new
    case and write it into the store, append-only."""
    self.updates = [self._update_case(change) for change in changes]

  def _update_case(self, change: _update.CaseChange) -> _update.Update:
    answer, _ = self._record_in_staging(change.case_id)
    if isinstance(answer, WorkerFailure):
      return self._update_failed(change, f"recording failed: {answer.why}")
    try:
      staged = GoldenStore(self._staging_root()).entry(answer.entry_id)
      snapshot = staged.snapshot()
      manifest = snapshot.manifest
      # Only the day's newest revision counts (the worker compared with it): a change
      # reverted the same day is the revision after it, never the older one it equals.
      if answer.compared_with is not None and not answer.differing:
        return _update.Update(change, RecordAction.UNCHANGED, answer.compared_with,
                              "today's recording equals the newest entry of the same day",
                              targets=_update.targets_of(manifest))
      written = self.store.adopt(snapshot, self.store.next_revision(manifest))
    except GoldenDataError as e:
      kept = self._keep_staging()  # close() must not remove it
      return self._update_failed(change, f"writing {answer.entry_id} failed: {e}; the "
                                         f"recording is kept in the golden store {kept}")
    return _update.Update(change, RecordAction.WRITTEN, written.entry_id,
                          targets=_update.targets_of(manifest))

  def _update_failed(self, change: _update.CaseChange, why: str) -> _update.Update:
    self.failures.append(f"{_update.UPDATE_FLAG}: case {change.case_id}: {why}")
    return _update.Update(change, RecordAction.ERROR, None, why)

  def close(self) -> None:
    """Remove the staging folder, unless a failed write keeps it."""
    if self._cleanup is not None:
      self._cleanup()  # removes it, once
      self._cleanup = None
    self._staging = None


def nonfinite_message(lines: tuple[str, ...]) -> str:
  """What a record line says of recorded outputs that hold NaN or infinities (replays compare
  them as values: NaN matches NaN, an infinity the same infinity); empty when all are finite."""
  if not lines:
    return ""
  return "recorded non-finite values: " + "; ".join(lines)


def without_repeat(traceback_text: str, message: str) -> str:
  """A worker's traceback without its closing exception line when that line only repeats
  ``message`` (already said once above it)."""
  lines = traceback_text.rstrip().splitlines()
  while lines and lines[-1].strip() and lines[-1].strip() in message:
    lines.pop()
  return "\n".join(lines)

