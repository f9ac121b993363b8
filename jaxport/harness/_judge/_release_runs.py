"""An entry's replay by another release's own ``jax.export`` (the release replayer's row):
its status, and what it measured of whether the entry runs there.

The replayer reports results only (``jaxport.harness._protocol._release_rows``). An entry that
reproduced, or ran where the project's own checker cannot be had, passes and runs there; one
only read (a lowering-only entry) passes and measured nothing of running; one that failed to load, run or reproduce fails and does not run there; the replayer's own failure
(its files did not verify, it raised, the process died on the entry) fails and measured
nothing; an entry the replayer cannot replay in that release has no status and measured
nothing. ``jaxport replay --with-jax``, the kept measurements, bisection and the matrix all
take an entry's status from here, and a matrix cell's too (:func:`cell_status`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from jaxport._vocabulary import Status
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


def cell_status(runs: Iterable[ReleaseRun], must_pass: bool) -> Status:
  """A producer x consumer cell's status: a failure inside jax's compatibility window
  (``must_pass``) fails it; outside it, a failure only warns."""
  failed = any(r.failed for r in runs)
  if failed and must_pass:
    return Status.FAIL
  return Status.WARN if failed else Status.PASS
