"""An entry's replay by another release's own ``jax.export`` (the release replayer's row):
its status, and what it measured of whether the entry runs there.

The replayer reports results only (``jaxport.harness._protocol._release_rows``). An entry that
reproduced, or ran where the project's own checker cannot be had, passes and runs there; one
only read (a lowering-only entry) passes and measured nothing of running; one that failed to load, run or reproduce fails and does not run there; the replayer's own failure
(its files did not verify, it raised, the process died on the entry) fails and measured
nothing; an entry the replayer cannot replay in that release has no status and measured
nothing. ``jaxport replay --with-jax``, the kept measurements, bisection and the matrix all
take an entry's status from here, and a matrix cell's too (:func:`cell_status`); so does a
harness replay's report under another release (:func:`judge_report_entry`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from jaxport._vocabulary import FindingKind, Status, Subject
from jaxport.harness._protocol._release_rows import HARNESS, PROCESS, VERIFY, ReleaseRow

# The stage a row ends at without an error when the replayer only read the entry.
READ_ONLY = "deserialize"


@dataclasses.dataclass(frozen=True)
class ReleaseRun:
  """The judge's outcome of one release replayer row: its ``status`` (None: not replayed
  there), whether the entry ``runs`` there (None: nothing measured) and why, in words."""
  entry_id: str
  status: Status | None
  runs: bool | None
  detail: str
  stage: str
  error: str | None

  @property
  def failed(self) -> bool:
    return self.status is Status.FAIL

  @property
  def passed(self) -> bool:
    return self.status is Status.PASS


def judge_row(row: ReleaseRow | Mapping[str, Any], version: str) -> ReleaseRun:
  """The outcome of one row of the release replayer under jax ``version``."""
  r = row if isinstance(row, ReleaseRow) else ReleaseRow.from_json(row)

  def out(status: Status | None, runs: bool | None, detail: str) -> ReleaseRun:
    return ReleaseRun(r.entry_id, status, runs, detail, r.stage, r.error)

  if r.not_replayable is not None:
    return out(None, None, r.not_replayable)
  if r.stage in (VERIFY, HARNESS, PROCESS):
    return out(Status.FAIL, None, f"{r.stage}: {r.error}")
  if r.error is not None:
    return out(Status.FAIL, False, f"{r.stage}: {r.error}")
  if r.matched is False:
    return out(Status.FAIL, False, f"{r.stage}: {r.problems}")
  if r.stage == READ_ONLY:
    # A lowering-only entry is read, never run: it measured nothing of running there.
    return out(Status.PASS, None, f"read by jax {version}'s own jax.export, not run "
                                  "(a lowering-only entry)")
  if r.not_compared is not None:
    return out(Status.PASS, True, f"run by jax {version}'s own jax.export: {r.not_compared}")
  return out(Status.PASS, True, f"replayed by jax {version}'s own jax.export")


# What a consumer on a release would meet is what the release's own reader (jax's, the
# harness's reference reader) found in a harness replay under it: a break, changed numerics,
# or a blob it read only after jaxport rewrote it. jaxport's reader, today's lowering, the
# entry's age and the project's policy say nothing of it.
RELEASE_READER = "jax"
_NOT_RUNNING = frozenset({FindingKind.COMPATIBILITY_BREAK, FindingKind.UPGRADED,
                          FindingKind.NUMERICS_CHANGE})
# What leaves a replay without a measurement: a worker that failed (the project's modules did
# not load, a crash), an entry whose own files did not read (nothing was deserialized or
# called), a checker that raised (nothing judged the outputs).
_MEASURED_NOTHING = frozenset({FindingKind.GOLDEN_DATA_ERROR, FindingKind.CHECKER_ERROR})


def judge_report_entry(entry: Any, platform: str, readers: Iterable[str],
                       version: str) -> tuple[bool, str] | None:
  """Whether an entry of a harness replay under jax ``version`` (a report's ``EntryResult``,
  replayed on ``platform`` by ``readers``) runs there, and why, or None where the replay
  measured nothing of running it: an entry only read (lowering-only, or of another platform
  than the run's), a replay without the release's own reader, or one left without a
  measurement."""
  if bool(entry.lowering_only) or entry.platform != platform or RELEASE_READER not in readers:
    return None
  if any(f.subject is Subject.WORKER or f.kind in _MEASURED_NOTHING for f in entry.findings):
    return None
  bad = [f for f in entry.findings if f.subject is Subject.READER
         and f.reader == RELEASE_READER and f.kind in _NOT_RUNNING]
  if bad:
    return False, f"[{bad[0].kind}] {bad[0].message}"
  return True, f"replayed by the harness under jax {version}"


def cell_status(runs: Iterable[ReleaseRun], must_pass: bool) -> Status:
  """A producer x consumer cell's status: a failure inside jax's compatibility window
  (``must_pass``) fails it; outside it, a failure only warns."""
  failed = any(r.failed for r in runs)
  if failed and must_pass:
    return Status.FAIL
  return Status.WARN if failed else Status.PASS
