"""Judging one artifact that ``jaxport audit`` read: what it found, as findings, and the
status they make.

Audit reads an artifact (its files, its module through the parser child, today's export of its
case) and hands each result here: golden verification's problems, a module that does not
read, the targets' standing, each lowering difference, the calling contract's difference.
This module makes the findings of them with the rules the replay's findings use
(``_findings``, ``_age``, ``_targets``, ``_drift``) and gives the status (``_status``); audit
prints what it returns.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from typing import Any

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport._vocabulary import Finding, FindingKind, Status, Subject
from jaxport.errors import JaxportError
from jaxport.golden._manifest import CustomCallSignature, Manifest
from jaxport.golden._soundness import ManifestDisagreement
from jaxport.harness._judge._release_runs import ReleaseRun
from jaxport.harness._protocol._answers import EnvelopeRead
from jaxport.harness._protocol._readers import PRIMARY
from jaxport.harness._judge import _age, _drift, _findings, _targets
from jaxport.harness._judge._findings import golden_problem
from jaxport.harness._judge._status import Policy, severity, status_of


@json_record(Strict.raising(JaxportError), also=("ok",))
@dataclasses.dataclass(frozen=True)
class ArtifactJudgement:
  """The judge's outcome of one audited artifact: its findings, their status, and what they
  make of it in words: ``problems`` (what fails it) and ``warnings`` (the notes that judge
  nothing first, then the judge's warnings, then what is reported only)."""
  findings: tuple[Finding, ...]
  status: Status
  problems: tuple[str, ...]
  warnings: tuple[str, ...]

  @property
  def failed(self) -> bool:
    return self.status is Status.FAIL

  @property
  def ok(self) -> bool:
    """Whether the artifact passed (its JSON view says so beside its status)."""
    return not self.failed


class ArtifactFindings:
  """What auditing one artifact found, as the judge's findings, and notes that judge nothing
  (an entry expiring soon, a target its producer vouches for)."""

  def __init__(self) -> None:
    self._findings: list[Finding] = []
    self.notes: list[str] = []

  def damaged(self, message: str) -> None:
    """The artifact's files fail verification (a digest, the manifest, a store folder)."""
    self._findings.append(Finding(FindingKind.GOLDEN_DATA_ERROR, Subject.GOLDEN_DATA, message))

  def golden(self, problems: Iterable[str]) -> None:
    """What golden verification found of the entry as read (``jaxport.golden._soundness``),
    as the replay reports it."""
    self._findings += [golden_problem(p) for p in problems]

  def disagreement(self, d: ManifestDisagreement) -> dict[str, Any]:
    """The manifest disagrees with the module: a golden data error; its typed record."""
    self.golden([d.message])
    return {"kind": str(FindingKind.GOLDEN_DATA_ERROR),
            **d.to_json(), "message": self._findings[-1].message}

  def unreadable(self, message: str) -> None:
    """The artifact's module does not read."""
    self._findings.append(Finding(FindingKind.COMPATIBILITY_BREAK, Subject.READER, message))

  def refused_as_is(self, env: EnvelopeRead | None, consumer: str | None, *, shipped: bool,
                    shipped_fails: bool = True, why_not: str | None = None) -> None:
    """The running jax refuses the artifact's envelope as it is. ``env``: the rewrite
    ``jaxport upgrade`` makes, after which it loads (None: it does not load after it either,
    ``why_not`` says why). ``shipped``: a bare blob or an imported entry, judged as shipped
    (the fleet loads these bytes: it fails, or warns where the project chose so); a recorded
    entry is judged as the replay judges it (read after the rewrite: upgraded)."""
    if env is None:
      self.unreadable(f"jax {consumer or 'installed'} refuses it as it is and `jaxport "
                      f"upgrade` does not make it load: {why_not}")
    elif shipped:
      self._findings.append(_findings._shipped_envelope_finding(PRIMARY, env, consumer,
                                                                shipped_fails, ran=False))
    else:
      self._findings.append(_findings._envelope_finding(PRIMARY, env, consumer, ran=False))

  def ran(self, run: ReleaseRun) -> None:
    """The artifact run with its sample inputs (``audit --run``), its row judged by the
    release rows' judge: one that failed to load, run or reproduce breaks it."""
    if run.failed:
      self._findings.append(Finding(FindingKind.COMPATIBILITY_BREAK, Subject.READER,
                                    f"run with its sample inputs: {run.detail}"))

  def aged(self, record_date: datetime.date, today: datetime.date, window_days: int) -> None:
    """The entry's age against the compat window."""
    self._findings += _age.age_findings(record_date, today, window_days)

  def target(self, target: str, platforms: Sequence[str], promised: bool) -> None:
    """A custom-call target of the module; ``promised``: something promises it keeps working."""
    if not promised:
      self._findings.append(_targets.not_stable_finding(target, platforms, Subject.READER))

  def lowering_difference(self, manifest: Manifest, consumer: str | None, lead: str,
                          line: str, current: Sequence[CustomCallSignature] | None,
                          lines: Sequence[str]) -> None:
    """One difference ``line`` of today's lowering from the entry's (among all of them,
    ``lines``); ``current``: the signatures of the case's entry recorded by ``consumer``.
    Audit runs nothing: like a replay's entry that is not run, its results are not found to
    differ."""
    evidence = _drift.lowers_as_current_entry(manifest, lines, current)
    self._findings.append(_drift.lowering_difference(manifest, consumer, lead, line,
                                                     evidence=evidence))

  def contract(self, manifest: Manifest, consumer: str | None, by_function: Sequence[str],
               by_jax: Sequence[str], newest: bool, platforms_added: Sequence[str] = (),
               donation_removed: Sequence[str] = ()) -> None:
    """A difference of today's calling contract from the entry's (``_drift``)."""
    findings, skips = _drift.contract_findings(manifest, consumer, by_function, by_jax, newest,
                                               platforms_added, donation_removed)
    self._findings += findings
    self.notes += skips

  def judged(self, policy: Policy) -> ArtifactJudgement:
    """The findings, the status the judge gives them, and the problems and warnings."""
    status = status_of((f.kind for f in self._findings), policy)
    problems = tuple(f.message for f in self._findings
                     if severity(f.kind, policy) is Status.FAIL)
    warnings = tuple(self.notes) + tuple(
        f.message for level in (Status.WARN, Status.DRIFT, Status.PASS)
        for f in self._findings if severity(f.kind, policy) is level)
    return ArtifactJudgement(tuple(self._findings), status, problems, warnings)


def audit_policy(strict: bool, changes_fail: bool, newest: bool) -> Policy:
  """How strictly audit judges an artifact: as the replay judges its case's newest entry, or
  an older one."""
  return Policy(strict=strict, changes_fail=changes_fail and newest, superseded=not newest)
