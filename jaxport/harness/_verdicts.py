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

from jaxport._records import Strict
from jaxport._vocabulary import Finding, FindingKind, Status
from jaxport.errors import WorkerAnswerError
from jaxport.report import EntryResult, Release


_STRICT = Strict.raising(WorkerAnswerError)


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
  # The sha256 of the blob the worker replayed, as the entry's files verified (None: they did
  # not read).
  blob_sha256: str | None = None

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
  def from_json(cls, d: Any, where: str = "outcome") -> Outcome:
    """What :meth:`to_json` wrote, read strictly: a missing, unknown or mistyped field is a
    :class:`WorkerAnswerError` naming it, never an outcome judged on what was left."""
    s = _STRICT
    d = s.record(cls, d, where)

    def at(key: str) -> str:
      return f"{where}.{key}"

    release = d["release"]
    return cls(
        entry_id=s.of(d["entry_id"], str, at("entry_id")),
        case_id=s.of(d["case_id"], str, at("case_id")),
        family=s.of(d["family"], str, at("family")),
        record_date=s.of(d["record_date"], str, at("record_date"), nullable=True),
        days_to_expiry=s.of(d["days_to_expiry"], int, at("days_to_expiry"), nullable=True),
        lowering_only=s.of(d["lowering_only"], bool, at("lowering_only"), nullable=True),
        targets=s.strs(d["targets"], at("targets")),
        current_targets=s.strs(d["current_targets"], at("current_targets"), nullable=True),
        platforms=s.strs(d["platforms"], at("platforms"), nullable=True),
        target_verdicts=s.str_map(d["target_verdicts"], at("target_verdicts"), nullable=True),
        matched_case=s.of(d["matched_case"], str, at("matched_case"), nullable=True),
        findings=tuple(Finding.from_json(f, at(f"findings[{i}]"), s)
                       for i, f in enumerate(s.of(d["findings"], list, at("findings")))),
        skips=s.strs(d["skips"], at("skips")),
        upgrade_rules=s.strs(d["upgrade_rules"], at("upgrade_rules")),
        recorded_host=s.of(d["recorded_host"], Mapping, at("recorded_host"), nullable=True),
        replay_host=s.of(d["replay_host"], Mapping, at("replay_host"), nullable=True),
        release=None if release is None else Release.from_json(release, at("release")),
        expected_failure=s.of(d["expected_failure"], str, at("expected_failure"), nullable=True),
        status=None if d["status"] is None else s.enum(Status, d["status"], at("status")),
        runs_on=None if d["runs_on"] is None else {
            p: s.strs(v, at(f"runs_on.{p}"))
            for p, v in s.of(d["runs_on"], Mapping, at("runs_on")).items()},
        blob_sha256=s.of(d["blob_sha256"], str, at("blob_sha256"), nullable=True))

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
               runs_on=e.runs_on, blob_sha256=e.blob_sha256)

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
        expected_failure=self.expected_failure, runs_on=self.runs_on,
        blob_sha256=self.blob_sha256)
