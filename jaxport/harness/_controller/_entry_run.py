"""What one entry's replay left in a run: its outcome, what the replay cost and did, and what a
test item still has to report of it, as one record kept per entry id by the session.

The record is also what an xdist worker sends its controller for each entry it replayed
(:meth:`EntryRun.to_json`), read back strictly (:meth:`EntryRun.from_json`): a missing,
unknown or mistyped field is a :class:`~jaxport.errors.WorkerAnswerError` naming it, so that
an entry is never judged on part of what its worker found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from jaxport._record_codec import counted, json_record, key
from jaxport._records import Strict
from jaxport.errors import WorkerAnswerError
from jaxport.report._entries import EntryResult

_STRICT = Strict.raising(WorkerAnswerError)

# What a replay did, summed over the run into the report's summary.
WORK = ("from_cache", "reader_runs", "exports_today")


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class EntryRun:
  """One entry's replay in this run."""

  # Crosses as the entry's part record (``EntryResult.to_part_json``): everything the run keeps.
  outcome: EntryResult = key(read=lambda s, v, where: EntryResult.from_part_json(v, where),
                             write=EntryResult.to_part_json)
  # Seconds the worker's replay took, and per part of it (``--compat-timings``); None and
  # empty where no replay answer came (the entry's golden data did not read, the worker died).
  seconds: float | None = None
  parts: Mapping[str, float] = dataclasses.field(default_factory=dict)
  # Executables loaded from the cross-run compile cache, readers' runs, today's exports.
  from_cache: int = key(default=0, read=counted)
  reader_runs: int = key(default=0, read=counted)
  exports_today: int = key(default=0, read=counted)
  # What the worker printed while replaying it, until its test item has reported it.
  output: str = ""
  # Why it is an expected failure, from its replay until its test report takes it.
  xfailed: str | None = None
