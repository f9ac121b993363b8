"""One entry's row of a report: its status, findings and the columns the pages show."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport._vocabulary import Finding, FindingKind, Status, Subject
from jaxport.errors import WorkerAnswerError
from jaxport.golden._entry_id import EntryId, read_entry_id, require_entry_id
from jaxport.report._fields import STRICT, bad, findings_field, iso, runs_on_field, str_map
from jaxport.report._sections import Release


def about_current_lowering(finding: Finding) -> bool:
  """Whether a finding compares the entry with today's lowering (signature or target
  differences, a corpus match), by its subject."""
  return finding.subject is Subject.TODAY


_ENTRY_KEYS = ("entry_id", "case_id", "family", "record_date", "status", "kinds", "messages",
               "findings", "days_to_expiry", "lowering_only", "targets", "current_targets",
               "platforms", "target_verdicts", "release", "expected_failure")
# Columns newer than the first reports, read when present.
_OPTIONAL_ENTRY_KEYS = ("matched_case", "recorded_host", "runs_on", "blob_sha256")


# What an xdist worker sends its controller of each entry (``to_part_json``): every field a run
# keeps, derived from the fields; a refusal is the worker's (``WorkerAnswerError``).
_PART = Strict.raising(WorkerAnswerError)


@json_record(_PART, names=("_part_json", "from_part_json"), where="outcome")
@dataclasses.dataclass(frozen=True)
class EntryResult:
  """What replaying one golden entry in one run found, and (once judged) its status.

  The harness's judge (``jaxport.harness._judge``) builds it from the worker's answer and
  gives it its status; the session keeps it and the report lists it. ``skips``,
  ``upgrade_rules`` and ``replay_host`` are the run's own (the report lists skips in its
  ledger, the upgrade rules in ``release`` and the replay hosts once per run).
  """
  entry_id: EntryId
  case_id: str
  family: str
  record_date: datetime.date | None
  days_to_expiry: int | None
  lowering_only: bool | None
  targets: tuple[str, ...]
  current_targets: tuple[str, ...] | None = None
  # The platforms the entry's module was exported for (None: not known to the run).
  platforms: tuple[str, ...] | None = None
  # Target -> its verdict today (stable, declared, ...), as the run judged it; None: not judged.
  target_verdicts: Mapping[str, str] | None = None
  # The case today's lowering of an imported entry was compared with (None: its own, or none).
  matched_case: str | None = None
  # What the replay found, each with its subject (which reader, today's lowering, ...).
  findings: tuple[Finding, ...] = ()
  # What was not checked for the entry and why.
  skips: tuple[str, ...] = ()
  # The rules jaxport.upgrade applied before the entry ran.
  upgrade_rules: tuple[str, ...] = ()
  # The manifest's record of the machine that recorded the entry; None when unknown.
  recorded_host: Mapping[str, Any] | None = None
  # The host that replayed it (the worker's record).
  replay_host: Mapping[str, Any] | None = None
  # The producer-release annotation of a project with an expectations table.
  release: Release | None = None
  # The reason an expected failure is excused.
  expected_failure: str | None = None
  # None until the judge sets it.
  status: Status | None = None
  # Platform -> the jax releases the entry runs on, as the run computed them from the release
  # table (None: not computed, or a report without them).
  runs_on: Mapping[str, tuple[str, ...]] | None = None
  # The sha256 of the blob the run replayed, as its files verified (None: its files did not
  # read, or a report without it).
  blob_sha256: str | None = None
  # Where a comparison of the entry failed with its checker's error: whether the case's
  # checker today accepts the entry's own recorded outputs (``--compat-update`` then records
  # the case anew); None where none did. The run's own, not listed in a report file.
  checker_fixed: bool | None = None
  # The kinds and messages as a report file listed them (None: derived from ``findings``).
  listed_kinds: tuple[str, ...] | None = key(skip=True, default=None)
  listed_messages: tuple[str, ...] | None = key(skip=True, default=None)
  # Keys of a newer report this release does not know, kept as read.
  extra: Mapping[str, Any] = key(skip=True, default_factory=dict)

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "EntryResult")

  @property
  def kinds(self) -> tuple[str, ...]:
    """The kinds found, sorted, each once."""
    if self.listed_kinds is not None:
      return self.listed_kinds
    return tuple(sorted(set(f.kind for f in self.findings)))

  @property
  def messages(self) -> tuple[str, ...]:
    """The findings as report text, in the order found."""
    if self.listed_messages is not None:
      return self.listed_messages
    return tuple(f.text for f in self.findings)

  def has(self, kind: FindingKind) -> bool:
    return any(f.kind == kind for f in self.findings)

  def of_kind(self, kind: FindingKind) -> tuple[Finding, ...]:
    return tuple(f for f in self.findings if f.kind == kind)

  def replace(self, **changes: Any) -> EntryResult:
    return dataclasses.replace(self, **changes)

  @property
  def platform(self) -> str:
    """The platform whose store holds the entry (the first part of its id)."""
    return self.entry_id.platform

  @property
  def producer(self) -> str:
    """The jax release that recorded the entry, or ``unknown``."""
    if self.release is not None and self.release.producer:
      return self.release.producer
    return self.entry_id.producer

  # The report file's pair is written by hand, not by jaxport._record_codec: a report lists
  # kinds and messages derived from the findings (read back as listed), keeps the keys of a
  # newer report as they were, and lists judged entries only (the part file's pair below holds
  # the run's own fields).
  @classmethod
  def from_json(cls, d: Any, where: str) -> EntryResult:
    STRICT.obj(d, where, _ENTRY_KEYS)
    entry_id = read_entry_id(STRICT, d["entry_id"], f"{where}.entry_id")
    status = STRICT.of(d["status"], str, f"{where}.status")
    if status not in {str(s) for s in Status}:
      raise bad(f"{where}.status", f"expected one of {', '.join(Status)}, got {status!r}")
    return cls(
        entry_id=entry_id,
        case_id=STRICT.of(d["case_id"], str, f"{where}.case_id"),
        family=STRICT.of(d["family"], str, f"{where}.family"),
        record_date=STRICT.date(d["record_date"], f"{where}.record_date", nullable=True),
        status=Status(status),
        listed_kinds=STRICT.strs(d["kinds"], f"{where}.kinds"),
        listed_messages=STRICT.strs(d["messages"], f"{where}.messages"),
        findings=findings_field(d["findings"], f"{where}.findings"),
        platforms=STRICT.strs(d["platforms"], f"{where}.platforms", nullable=True),
        target_verdicts=str_map(d["target_verdicts"], f"{where}.target_verdicts"),
        days_to_expiry=STRICT.of(d["days_to_expiry"], int, f"{where}.days_to_expiry",
                                 nullable=True),
        lowering_only=STRICT.of(d["lowering_only"], bool, f"{where}.lowering_only", nullable=True),
        targets=STRICT.strs(d["targets"], f"{where}.targets"),
        current_targets=STRICT.strs(d["current_targets"], f"{where}.current_targets",
                                    nullable=True),
        release=None if d["release"] is None else Release.from_json(d["release"], f"{where}.release"),
        expected_failure=STRICT.of(d["expected_failure"], str, f"{where}.expected_failure",
                                   nullable=True),
        matched_case=STRICT.of(d.get("matched_case"), str, f"{where}.matched_case", nullable=True),
        recorded_host=STRICT.of(d.get("recorded_host"), Mapping, f"{where}.recorded_host",
                                nullable=True),
        runs_on=runs_on_field(d.get("runs_on"), f"{where}.runs_on"),
        blob_sha256=STRICT.of(d.get("blob_sha256"), str, f"{where}.blob_sha256", nullable=True),
        extra={k: v for k, v in d.items() if k not in _ENTRY_KEYS + _OPTIONAL_ENTRY_KEYS})

  def to_json(self) -> dict[str, Any]:
    """The entry as the report file lists it (a judged entry only)."""
    if self.status is None:
      raise ValueError(f"{self.entry_id}: the entry was never judged (no status)")
    return {**self.extra, "entry_id": str(self.entry_id), "case_id": self.case_id, "family": self.family,
            "record_date": iso(self.record_date), "status": str(self.status),
            "kinds": [str(k) for k in self.kinds], "messages": list(self.messages),
            "findings": [f.to_json() for f in self.findings],
            "days_to_expiry": self.days_to_expiry, "lowering_only": self.lowering_only,
            "targets": list(self.targets),
            "current_targets": None if self.current_targets is None else list(self.current_targets),
            "platforms": None if self.platforms is None else list(self.platforms),
            "target_verdicts": (None if self.target_verdicts is None
                                else dict(self.target_verdicts)),
            "release": None if self.release is None else self.release.to_json(),
            "expected_failure": self.expected_failure,
            # The newer columns, written when known (a report without them reads as before).
            **({} if self.matched_case is None else {"matched_case": self.matched_case}),
            **({} if self.recorded_host is None else {"recorded_host": dict(self.recorded_host)}),
            **({} if self.runs_on is None else
               {"runs_on": {p: list(v) for p, v in self.runs_on.items()}}),
            **({} if self.blob_sha256 is None else {"blob_sha256": self.blob_sha256})}

  def to_part_json(self) -> dict[str, Any]:
    """Everything the run keeps of the entry, for a part file between processes (one xdist
    worker's outcomes for the controller; :meth:`from_part_json` reads it back strictly: a
    missing, unknown or mistyped field is a :class:`WorkerAnswerError` naming it, never an
    entry judged on what was left)."""
    if self.listed_kinds is not None or self.listed_messages is not None or self.extra:
      raise ValueError(f"{self.entry_id}: an entry read from a report file is no run's part")
    return self._part_json()
