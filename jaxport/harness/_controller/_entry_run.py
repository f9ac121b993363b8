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
from typing import Any

from jaxport._records import Strict
from jaxport.errors import WorkerAnswerError
from jaxport.report._entries import EntryResult

_STRICT = Strict.raising(WorkerAnswerError)

# What a replay did, summed over the run into the report's summary.
WORK = ("from_cache", "reader_runs", "exports_today")


@dataclasses.dataclass(frozen=True)
class EntryRun:
  """One entry's replay in this run."""

  outcome: EntryResult
  # Seconds the worker's replay took, and per part of it (``--compat-timings``); None and
  # empty where no replay answer came (the entry's golden data did not read, the worker died).
  seconds: float | None = None
  parts: Mapping[str, float] = dataclasses.field(default_factory=dict)
  # Executables loaded from the cross-run compile cache, readers' runs, today's exports.
  from_cache: int = 0
  reader_runs: int = 0
  exports_today: int = 0
  # What the worker printed while replaying it, until its test item has reported it.
  output: str = ""
  # Why it is an expected failure, from its replay until its test report takes it.
  xfailed: str | None = None

  def to_json(self) -> dict[str, Any]:
    """Every field, for the boundary between processes (:meth:`from_json` reads it back)."""
    return {"outcome": self.outcome.to_part_json(), "seconds": self.seconds,
            "parts": dict(self.parts), "from_cache": self.from_cache,
            "reader_runs": self.reader_runs, "exports_today": self.exports_today,
            "output": self.output, "xfailed": self.xfailed}

  @classmethod
  def from_json(cls, d: Any, where: str = "run") -> EntryRun:
    """What :meth:`to_json` wrote, read strictly (an error names the field at ``where``)."""
    s = _STRICT
    d = s.record(cls, d, where)
    seconds = s.of(d["seconds"], (int, float), f"{where}.seconds", nullable=True)
    parts = s.of(d["parts"], Mapping, f"{where}.parts")
    return cls(
        outcome=EntryResult.from_part_json(d["outcome"], f"{where}.outcome"),
        seconds=None if seconds is None else float(seconds),
        parts={k: s.number(v, f"{where}.parts.{k}") for k, v in parts.items()},
        **{w: s.count(d[w], f"{where}.{w}") for w in WORK},
        output=s.of(d["output"], str, f"{where}.output"),
        xfailed=s.of(d["xfailed"], str, f"{where}.xfailed", nullable=True))
