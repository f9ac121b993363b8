"""The harness's verdict on one entry as typed records: findings and the outcome.

The judge (``jaxport.harness._judge``) builds an entry's :class:`Outcome` from the
worker's answer and gives it its status; nothing else makes or changes one. Outcomes cross process boundaries
(xdist workers to the controller) as :meth:`Outcome.to_json`; the compat report
lists each as the typed ``jaxport.report.EntryResult`` (:meth:`Outcome.report_entry`): each
finding as a record (``findings``) and as the text ``"[kind] message"`` (``messages``).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._vocabulary import Finding, FindingKind, Status
from jaxport.report import EntryResult, Release


def _tuple(value: Any) -> tuple | None:
  return None if value is None else tuple(value)


@dataclasses.dataclass(frozen=True)
class Outcome:
  """What replaying one entry found, and (once judged) its status.

  ``skips`` say what was not checked for the entry and why; ``release`` is the
  producer-release annotation of a project with an expectations table;
  ``expected_failure`` the reason an expected failure is excused; ``status``
  is None until the judge sets it.
  """

  entry_id: str
  case_id: str
  family: str
  record_date: str | None
  days_to_expiry: int | None
  lowering_only: bool | None
  targets: tuple[str, ...]
  current_targets: tuple[str, ...] | None = None
  platforms: tuple[str, ...] | None = None
  target_verdicts: Mapping[str, str] | None = None
  matched_case: str | None = None
  findings: tuple[Finding, ...] = ()
  skips: tuple[str, ...] = ()
  upgrade_rules: tuple[str, ...] = ()
  # The manifest's record of the machine that recorded the entry (None: unknown).
  recorded_host: Mapping[str, Any] | None = None
  # The host that replayed it (the worker's record; not in the report's entry, which lists
  # the run's replay hosts once).
  replay_host: Mapping[str, Any] | None = None
  release: Release | None = None
  expected_failure: str | None = None
  status: Status | None = None
  # platform -> the jax releases the entry runs on, computed from the release table (None: not
  # computed in this run).
  runs_on: Mapping[str, tuple[str, ...]] | None = None

  @property
  def kinds(self) -> tuple[FindingKind, ...]:
    """The kinds found, sorted, each once."""
    return tuple(sorted(set(f.kind for f in self.findings)))

  @property
  def messages(self) -> tuple[str, ...]:
    """The findings as report text, in the order found."""
    return tuple(f.text for f in self.findings)

  def has(self, kind: FindingKind) -> bool:
    return any(f.kind == kind for f in self.findings)

  def of_kind(self, kind: FindingKind) -> tuple[Finding, ...]:
    return tuple(f for f in self.findings if f.kind == kind)

  def replace(self, **changes: Any) -> Outcome:
    return dataclasses.replace(self, **changes)

  def to_json(self) -> dict[str, Any]:
    """Everything, for the boundary between processes (:meth:`from_json` reads it back)."""
    d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    d.update(targets=list(self.targets), findings=[f.to_json() for f in self.findings],
             skips=list(self.skips), upgrade_rules=list(self.upgrade_rules),
             current_targets=None if self.current_targets is None else list(self.current_targets),
             platforms=None if self.platforms is None else list(self.platforms),
             target_verdicts=None if self.target_verdicts is None else dict(self.target_verdicts),
             recorded_host=None if self.recorded_host is None else dict(self.recorded_host),
             replay_host=None if self.replay_host is None else dict(self.replay_host),
             release=None if self.release is None else self.release.to_json(),
             status=None if self.status is None else str(self.status),
             runs_on=None if self.runs_on is None else {p: list(v) for p, v in self.runs_on.items()})
    return d

  @classmethod
  def from_json(cls, d: Mapping[str, Any]) -> Outcome:
    return cls(**{**d,
                  "targets": tuple(d["targets"]),
                  "current_targets": _tuple(d["current_targets"]),
                  "platforms": _tuple(d["platforms"]),
                  "findings": tuple(Finding.from_json(f) for f in d["findings"]),
                  "skips": tuple(d["skips"]),
                  "upgrade_rules": tuple(d["upgrade_rules"]),
                  "release": (None if d["release"] is None
                              else Release.from_json(d["release"], f"{d['entry_id']}: release")),
                  "status": None if d["status"] is None else Status(d["status"]),
                  "runs_on": (None if d.get("runs_on") is None
                              else {p: tuple(v) for p, v in d["runs_on"].items()})})

  @classmethod
  def from_report_entry(cls, e: EntryResult) -> Outcome:
    """The outcome a report lists as ``e`` (a replayed entry; which reader found a
    finding is not in the report)."""
    return cls(entry_id=e.entry_id, case_id=e.case_id, family=e.family,
               record_date=None if e.record_date is None else e.record_date.isoformat(),
               days_to_expiry=e.days_to_expiry, lowering_only=e.lowering_only,
               targets=e.targets, current_targets=e.current_targets,
               platforms=e.platforms, target_verdicts=e.target_verdicts,
               matched_case=e.matched_case, recorded_host=e.recorded_host,
               findings=tuple(e.findings),
               upgrade_rules=() if e.release is None else e.release.upgrade_rules,
               release=e.release, expected_failure=e.expected_failure, status=e.status,
               runs_on=e.runs_on)

  def report_entry(self) -> EntryResult:
    """The entry as the compat report lists it: the same record, typed, for the page."""
    if self.status is None:
      raise ValueError(f"{self.entry_id}: the outcome was never judged (no status)")
    return EntryResult(
        entry_id=self.entry_id, case_id=self.case_id, family=self.family,
        record_date=(None if self.record_date is None
                     else datetime.date.fromisoformat(self.record_date)),
        status=self.status, kinds=tuple(str(k) for k in self.kinds), messages=self.messages,
        findings=self.findings, days_to_expiry=self.days_to_expiry,
        lowering_only=self.lowering_only, targets=self.targets,
        current_targets=self.current_targets, platforms=self.platforms,
        target_verdicts=self.target_verdicts, matched_case=self.matched_case,
        recorded_host=self.recorded_host, release=self.release,
        expected_failure=self.expected_failure, runs_on=self.runs_on)
