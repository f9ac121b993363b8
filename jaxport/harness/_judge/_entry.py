"""Judging one replayed entry: every step of ``jaxport.harness._judge`` in order, and the
run's context they all take."""

from __future__ import annotations

import dataclasses
import datetime

from jaxport.golden._manifest import CustomCallSignature, Manifest
from jaxport.harness._judge._expectations import Table
from jaxport.harness._judge import _consumers
from jaxport.harness._judge._corpus_known import with_jax_skip
from jaxport.harness._judge._findings import findings_of, unreadable_outcome
from jaxport.harness._judge._release import with_release
from jaxport.harness._judge._status import Policy, status_of, worst_first
from jaxport.harness._project import ProjectTargets
from jaxport.harness._protocol._answers import ReplayAnswer, WorkerFailure
from jaxport.harness._protocol._requests import FeaturesWanted, ReplayRequest
from jaxport.report._entries import EntryResult
from jaxport.report import Status
from jaxport.releases import MeasuredRuns

@dataclasses.dataclass(frozen=True)
class RunContext:
  """What one run judges every entry against: today, the compat window, the installed jax
  (``consumer``), the project's expectations table and stable targets, and how strictly."""
  today: datetime.date
  window_days: int
  consumer: str | None
  strict: bool = False
  # ``--compat-update``: every changed case is recorded anew, so a change only warns.
  updating: bool = False
  # The project's policy is that a changed function fails (``on_change = fail``).
  changes_fail: bool = False
  expectations: Table | None = None
  project_targets: ProjectTargets = dataclasses.field(default_factory=ProjectTargets)
  # What replays under other releases measured for the project's entries (``--with-jax``).
  measured: MeasuredRuns = dataclasses.field(default_factory=MeasuredRuns)
  # An imported artifact the installed jax refuses as expired fails (else it warns).
  shipped_expired_fails: bool = True

  def policy(self, newest: bool) -> Policy:
    """How strictly an entry is judged: its case's newest, or an older one."""
    if self.updating:
      return Policy(strict=self.strict, updating=True)
    return Policy(strict=self.strict, changes_fail=self.changes_fail and newest,
                  superseded=not newest)


@dataclasses.dataclass(frozen=True)
class EntryContext:
  """What the judge knows of one entry besides the worker's answer: its manifest, whether it
  is its case's newest, the oldest consumer its case promises, why its numerics are not
  run (an accelerator's entry in a CPU run; None when they are), and the lowering of its
  case's entry recorded by the installed jax."""
  manifest: Manifest
  newest: bool = True
  min_consumer: str | None = None
  numerics_skipped: str | None = None
  # The custom-call signatures of the case's newest entry recorded by the installed jax (None:
  # none), the evidence that another release's lowering difference is jax's.
  current_jax: tuple[CustomCallSignature, ...] | None = None


def judge(entry_id: EntryId, answer: ReplayAnswer | WorkerFailure, request: ReplayRequest,
          entry: EntryContext, run: RunContext) -> EntryResult:
  """The judged outcome of one replayed entry: its findings, release verdict, the releases
  it runs on, and its status."""
  m = entry.manifest
  outcome = findings_of(answer, request, entry_id=entry_id, manifest=m, today=run.today,
                        window_days=run.window_days, consumer=run.consumer,
                        numerics_skipped=entry.numerics_skipped, newest=entry.newest,
                        current_jax=entry.current_jax, declared=run.project_targets,
                        shipped_expired_fails=run.shipped_expired_fails)
  if run.expectations is not None:
    outcome = with_release(outcome, m, today=run.today, consumer=run.consumer,
                           table=run.expectations)
  outcome = with_jax_skip(outcome, m)
  outcome = _with_consumers(outcome, answer, request, entry, run)
  policy = run.policy(entry.newest)
  if outcome.checker_fixed and entry.newest:
    policy = dataclasses.replace(policy, checker_fixed=True)
  return _with_superseded(_with_status(outcome, policy), policy)


# The lead of the skip line of an entry whose changes warn because its case has a newer entry.
SUPERSEDED = "superseded: "


def superseded_warning(outcome: EntryResult) -> bool:
  """Whether an entry warns only as a superseded one: its case has a newer entry, which
  judges today's function, so its own changes warn, also under --compat-strict."""
  return outcome.status is Status.WARN and any(s.startswith(SUPERSEDED) for s in outcome.skips)


def _with_superseded(outcome: EntryResult, policy: Policy) -> EntryResult:
  """``outcome`` with the line saying it is superseded, where that is why it only warns: it
  warns also under --compat-strict, which only an older entry's changes do."""
  if not policy.superseded or policy.updating or outcome.status is not Status.WARN:
    return outcome
  if status_of(outcome.kinds, dataclasses.replace(policy, strict=True),
               expected_failure=bool(outcome.expected_failure)) is not Status.WARN:
    return outcome
  return outcome.replace(skips=outcome.skips + (
      f"{SUPERSEDED}case {outcome.case_id} has a newer entry, which judges today's function; "
      "this entry's changes warn, also under --compat-strict (`jaxport prune --superseded` "
      "removes the entries a newer one of the same jax release replaced)",))


def judge_unreadable(entry_id: EntryId, error: Exception, run: RunContext,
                     newest: bool = True) -> EntryResult:
  """The judged outcome of an entry whose golden data cannot even be read."""
  return _with_status(unreadable_outcome(entry_id, error), run.policy(newest))


def _with_status(outcome: EntryResult, policy: Policy) -> EntryResult:
  """``outcome`` with its status, and its findings worst first: what fails an entry is what
  its first lines say, above the findings that only inform (another host's tiny differences)."""
  findings = sorted(outcome.findings, key=lambda f: worst_first(f.kind, policy))
  return outcome.replace(findings=tuple(findings),
                         status=status_of(outcome.kinds, policy,
                                          expected_failure=bool(outcome.expected_failure)))


def _with_consumers(outcome: EntryResult, answer: ReplayAnswer | WorkerFailure,
                    request: ReplayRequest, entry: EntryContext, run: RunContext) -> EntryResult:
  """``outcome`` with the releases the entry runs on (for the report) and a
  ``below_min_consumer`` finding when they leave out the oldest consumer its case promises.
  Releases wanted for the report only and not computed are a skip line naming why."""
  if request.features is None or not isinstance(answer, ReplayAnswer):
    return outcome
  m = entry.manifest
  range_, why, features = _consumers.releases_run_on(answer.features, answer.features_error,
                                                     run.project_targets.stable(m.platform))
  if range_ is not None:
    range_ = range_.with_measured(m.platform, run.measured.of(outcome.entry_id,
                                                              m.files.get("exported.bin")))
    outcome = outcome.replace(runs_on=dict(range_.releases))
  if request.features is FeaturesWanted.REPORT or entry.min_consumer is None:
    if range_ is None and why is not None:
      outcome = outcome.replace(skips=outcome.skips + (
          f"the releases the entry runs on are not computed: {why}",))
    return outcome
  if answer.features is None and answer.features_error is not None:
    found = [_consumers.unreadable_features_finding(entry.min_consumer, answer.features_error)]
    return outcome.replace(findings=outcome.findings + tuple(found))
  found = _consumers.min_consumer_findings(entry.min_consumer, m.platform, range_,
                                           _consumers.measured_releases(), m.producer.jax,
                                           why=why, features=features)
  return outcome.replace(findings=outcome.findings + tuple(found)) if found else outcome
