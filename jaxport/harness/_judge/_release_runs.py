"""An entry's replay by another release's own ``jax.export`` (the release replayer's row):
its status, and what it measured of whether the entry runs there.

The replayer reports results only (``jaxport.harness._protocol._release_rows``). An entry that
reproduced, or ran where the project's own checker cannot be had, passes and runs there; one
only read (a lowering-only entry) passes and measured nothing of running; one that failed to
load, run or reproduce fails and does not run there; the replayer's own failure (its files did
not verify, it raised, the process died on the entry) fails and measured nothing; an entry the
replayer cannot replay in that release has no status and measured nothing. ``jaxport replay
--with-jax``, the kept measurements, bisection and the matrix all take an entry's status from
here, and a matrix cell's too (:func:`cell_status`). Whether an entry runs there is one
judgement, :func:`runs_there`, over findings: a row's (:func:`row_findings`) and a harness
replay's report entry's under another release (:func:`judge_report_entry`) alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from jaxport._vocabulary import Finding, FindingKind as K, Status, Subject
from jaxport.golden._entry_id import EntryId
from jaxport.harness._protocol._release_rows import (HARNESS, PROCESS, VERIFY, ReleaseRow,
                                                   read_row)

# The stage a row ends at without an error when the replayer only read the entry.
READ_ONLY = "deserialize"


@dataclasses.dataclass(frozen=True)
class ReleaseRun:
  """The judge's outcome of one release replayer row: its ``status`` (None: not replayed
  there), whether the entry ``runs`` there (None: nothing measured) and why, in words."""
  entry_id: EntryId
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
  """The outcome of one row of the release replayer under jax ``version``: its status from how
  far the row got, whether the entry runs there from :func:`runs_there`."""
  r = row if isinstance(row, ReleaseRow) else read_row(row)
  found, ran, ok = row_findings(r, version)
  if r.not_replayable is not None:
    status = None
  elif r.stage in (VERIFY, HARNESS, PROCESS) or r.error is not None or r.matched is False:
    status = Status.FAIL
  else:
    status = Status.PASS
  measured = runs_there(found, ran=ran, ran_detail=ok)
  runs, detail = (None, found[0].message if found else ok) if measured is None else measured
  return ReleaseRun(r.entry_id, status, runs, detail, r.stage, r.error)


def row_findings(r: ReleaseRow, version: str) -> tuple[tuple[Finding, ...], bool, str]:
  """A release replayer's row in the judge's terms: what the release's own reader (or the
  replaying process, or the entry's files) found, whether the entry was run there (not only
  read, not left unreplayed), and what the row says when nothing went wrong."""
  where = f"{r.stage}: {r.error}"
  if r.not_replayable is not None:
    return (), False, r.not_replayable
  if r.stage == VERIFY:
    return (Finding(K.GOLDEN_DATA_ERROR, Subject.GOLDEN_DATA, where),), True, ""
  if r.stage in (HARNESS, PROCESS):
    return (Finding(K.COMPATIBILITY_BREAK, Subject.WORKER, where),), True, ""
  if r.error is not None:
    return (Finding(K.COMPATIBILITY_BREAK, Subject.READER, where, RELEASE_READER),), True, ""
  if r.matched is False:
    return (Finding(K.NUMERICS_CHANGE, Subject.READER, f"{r.stage}: {r.problems}",
                    RELEASE_READER),), True, ""
  if r.stage == READ_ONLY:
    # A lowering-only entry is read, never run: it measured nothing of running there.
    return (), False, (f"read by jax {version}'s own jax.export, not run "
                       "(a lowering-only entry)")
  if r.not_compared is not None:
    return (), True, f"run by jax {version}'s own jax.export: {r.not_compared}"
  return (), True, f"replayed by jax {version}'s own jax.export"


# What a consumer on a release would meet is what the release's own reader (jax's, the
# harness's reference reader) found in a harness replay under it: a break, changed numerics,
# or a blob it read only after jaxport rewrote it. jaxport's reader, today's lowering, the
# entry's age and the project's policy say nothing of it.
RELEASE_READER = "jax"
_NOT_RUNNING = frozenset({K.COMPATIBILITY_BREAK, K.UPGRADED, K.NUMERICS_CHANGE})
# What leaves a replay without a measurement: a worker that failed (the project's modules did
# not load, a crash), an entry whose own files did not read (nothing was deserialized or
# called), a checker that raised (nothing judged the outputs).
_MEASURED_NOTHING = frozenset({K.GOLDEN_DATA_ERROR, K.CHECKER_ERROR})


def runs_there(findings: Iterable[Finding], *, ran: bool,
               ran_detail: str) -> tuple[bool, str] | None:
  """Whether an entry runs under a release, and why, from what one replay there found: the one
  judgement of "runs on" for a harness replay's report and the release replayer's rows. None
  where the replay measured nothing of running it (``ran`` false: only read, or not
  replayed; a failed worker, unreadable files or a checker that raised); False with the first
  finding of the release's own reader that means it does not run; else True with
  ``ran_detail``."""
  found = list(findings)
  if not ran or any(f.subject is Subject.WORKER or f.kind in _MEASURED_NOTHING for f in found):
    return None
  bad = [f for f in found if f.subject is Subject.READER and f.reader == RELEASE_READER
         and f.kind in _NOT_RUNNING]
  if bad:
    return False, bad[0].text
  return True, ran_detail


def judge_report_entry(entry: Any, platform: str, readers: Iterable[str],
                       version: str) -> tuple[bool, str] | None:
  """Whether an entry of a harness replay under jax ``version`` (a report's ``EntryResult``,
  replayed on ``platform`` by ``readers``) runs there, and why (:func:`runs_there`): nothing
  is measured of an entry only read (lowering-only, or of another platform than the run's) or
  of a replay without the release's own reader."""
  ran = (not bool(entry.lowering_only) and entry.platform == platform
         and RELEASE_READER in readers)
  return runs_there(entry.findings, ran=ran,
                    ran_detail=f"replayed by the harness under jax {version}")


def exit_status_with_skips(code: int, entries: Iterable[Any], session_failed: bool,
                           skipped: Mapping[EntryId, str]) -> int:
  """The exit status of a harness replay under another release (pytest's ``code``; its report's
  ``entries``; whether the session itself failed) once the ``skipped`` entries (id -> why:
  their project kernel does not register there) count as skipped, not failed: 1 when every
  entry was skipped so (nothing was measured, which is not a pass); 0 when they were the run's
  only failures; else ``code``."""
  if not skipped:
    return code
  entries = list(entries)
  if len(skipped) == len(entries):
    return 1
  others_failed = any(e.status is Status.FAIL and e.entry_id not in skipped for e in entries)
  if code == 1 and not others_failed and not session_failed:
    return 0
  return code


def cell_status(runs: Iterable[ReleaseRun], must_pass: bool) -> Status:
  """A producer x consumer cell's status: a failure inside jax's compatibility window
  (``must_pass``) fails it; outside it, a failure only warns."""
  failed = any(r.failed for r in runs)
  if failed and must_pass:
    return Status.FAIL
  return Status.WARN if failed else Status.PASS
