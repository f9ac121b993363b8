"""The harness's JSON compatibility report as typed records: one loader, one writer.

The harness (``pytest harness/ --compat-report=RUN.json``) writes the report;
everything in this package reads it through :func:`load_report` and works on
the records below, never on the raw dictionaries; the harness session builds a
:class:`RunReport` and writes it with ``to_json``. ``RunReport.to_json`` gives
back exactly the dictionary that was read (for the keys this module knows,
plus any unknown top-level and entry keys, kept as they were), so a merged
report is written in the harness's own format.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport.golden._entry_id import UNKNOWN_PRODUCER, case_of, platform_of, producer_of  # noqa: F401
from jaxport.golden._entry_id import EntryId
from jaxport._vocabulary import Finding, FindingKind, RecordAction, Status, Subject  # noqa: F401 (re-exported)
from jaxport._vocabulary import DRIFT_KINDS  # noqa: F401 (re-exported)
from jaxport.errors import ReportError
from jaxport.report._files import write_text_atomically

# The report format this package reads and writes (the harness writes it too). Format 2 adds
# typed findings (kind, subject, message, reader) to each entry, and the run's shard.
REPORT_FORMAT = 2
# An update run replays, then records the cases that changed (``--compat-update``).
MODES = ("replay", "record", "update")


def other_host_passes(entries: Iterable[Any]) -> int:
  """How many passing entries (outcomes or report entries) matched the recorded outputs within
  tolerance but not bitwise on a host of another class than the recording one: counted
  apart from the bitwise passes."""
  return sum(1 for e in entries
             if e.status == Status.PASS and FindingKind.NUMERICS_OTHER_HOST in e.kinds)




# --- reading helpers: each names the file and the key path of what is wrong ----------------------

def _bad(where: str, what: str) -> ReportError:
  return ReportError(f"{where}: {what}. Is this a report written by `pytest "
                     f"--compat-report=FILE.json` (format {REPORT_FORMAT})?")


def _obj(value: Any, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
  if not isinstance(value, Mapping):
    raise _bad(where, f"expected an object, got {type(value).__name__}")
  missing = [k for k in keys if k not in value]
  if missing:
    raise _bad(where, f"missing {', '.join(missing)}")
  return value


def _typed(value: Any, where: str, kind: type | tuple[type, ...], nullable: bool = False) -> Any:
  if value is None and nullable:
    return None
  # bool is an int in Python; a count or day number must not be a boolean.
  if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
    names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
    raise _bad(where, f"expected {names}{' or null' if nullable else ''}, got {value!r}")
  return value


def _strs(value: Any, where: str, nullable: bool = False) -> tuple[str, ...] | None:
  if value is None and nullable:
    return None
  _typed(value, where, list)
  return tuple(_typed(v, f"{where}[{i}]", str) for i, v in enumerate(value))


def _date(value: Any, where: str, nullable: bool = False) -> datetime.date | None:
  if value is None and nullable:
    return None
  try:
    return datetime.date.fromisoformat(_typed(value, where, str))
  except ValueError:
    raise _bad(where, f"expected a date YYYY-MM-DD, got {value!r}") from None


def _iso(d: datetime.date | None) -> str | None:
  return None if d is None else d.isoformat()


# --- records -------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Window:
  """Where the producer release of an entry stands in jax's compat window."""
  producer: str
  producer_date: datetime.date
  consumer: str
  consumer_date: datetime.date
  age_days: int
  gap_days: int
  direction: str
  inside_window: bool

  @classmethod
  def of(cls, position: Any) -> Window:
    """The record of a computed position (``jaxport.releases``' ``WindowPosition``)."""
    return cls(**{f.name: getattr(position, f.name) for f in dataclasses.fields(cls)})

  @classmethod
  def from_json(cls, d: Any, where: str) -> Window:
    _obj(d, where, tuple(f.name for f in dataclasses.fields(cls)))
    return cls(producer=_typed(d["producer"], f"{where}.producer", str),
               producer_date=_date(d["producer_date"], f"{where}.producer_date"),
               consumer=_typed(d["consumer"], f"{where}.consumer", str),
               consumer_date=_date(d["consumer_date"], f"{where}.consumer_date"),
               age_days=_typed(d["age_days"], f"{where}.age_days", int),
               gap_days=_typed(d["gap_days"], f"{where}.gap_days", int),
               direction=_typed(d["direction"], f"{where}.direction", str),
               inside_window=_typed(d["inside_window"], f"{where}.inside_window", bool))

  def to_json(self) -> dict[str, Any]:
    d = dataclasses.asdict(self)
    d["producer_date"], d["consumer_date"] = _iso(self.producer_date), _iso(self.consumer_date)
    return d


@dataclasses.dataclass(frozen=True)
class Release:
  """The producer release of an entry, the expectation for it and the verdict."""
  producer: str | None
  consumer: str | None
  window: Window | None
  expected: str
  reason: str | None
  verdict: str
  policy_ok: bool
  # The rules jaxport.upgrade applied before the entry ran (verdict "upgraded");
  # written only when there are some.
  upgrade_rules: tuple[str, ...] = ()

  @classmethod
  def from_json(cls, d: Any, where: str) -> Release:
    _obj(d, where, tuple(f.name for f in dataclasses.fields(cls) if f.name != "upgrade_rules"))
    return cls(producer=_typed(d["producer"], f"{where}.producer", str, nullable=True),
               consumer=_typed(d["consumer"], f"{where}.consumer", str, nullable=True),
               window=None if d["window"] is None else Window.from_json(d["window"], f"{where}.window"),
               expected=_typed(d["expected"], f"{where}.expected", str),
               reason=_typed(d["reason"], f"{where}.reason", str, nullable=True),
               verdict=_typed(d["verdict"], f"{where}.verdict", str),
               policy_ok=_typed(d["policy_ok"], f"{where}.policy_ok", bool),
               upgrade_rules=_strs(d.get("upgrade_rules", []), f"{where}.upgrade_rules"))

  def to_json(self) -> dict[str, Any]:
    d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    d["window"] = None if self.window is None else self.window.to_json()
    d["upgrade_rules"] = list(self.upgrade_rules)
    if not self.upgrade_rules:
      del d["upgrade_rules"]
    return d


def about_current_lowering(finding: Finding) -> bool:
  """Whether a finding compares the entry with today's lowering (signature or target
  differences, a corpus match), by its subject."""
  return finding.subject is Subject.TODAY


_FINDING_KEYS = tuple(f.name for f in dataclasses.fields(Finding))


def _findings(value: Any, where: str) -> tuple[Finding, ...]:
  out = []
  for i, f in enumerate(_typed(value, where, list)):
    at = f"{where}[{i}]"
    _obj(f, at, _FINDING_KEYS)
    try:
      out.append(Finding.from_json(f))
    except ValueError as e:
      raise _bad(at, str(e)) from None
  return tuple(out)


def _str_map(value: Any, where: str) -> Mapping[str, str] | None:
  if value is None:
    return None
  _typed(value, where, Mapping)
  return {k: _typed(v, f"{where}.{k}", str) for k, v in value.items()}


_ENTRY_KEYS = ("entry_id", "case_id", "family", "record_date", "status", "kinds", "messages",
               "findings", "days_to_expiry", "lowering_only", "targets", "current_targets",
               "platforms", "target_verdicts", "release", "expected_failure")
# Columns newer than the first reports, read when present.
_OPTIONAL_ENTRY_KEYS = ("matched_case", "recorded_host", "runs_on")


@dataclasses.dataclass(frozen=True)
class EntryResult:
  """The outcome of replaying one golden entry in one run."""
  entry_id: str
  case_id: str
  family: str
  record_date: datetime.date | None
  status: Status
  kinds: tuple[str, ...]
  messages: tuple[str, ...]
  days_to_expiry: int | None
  lowering_only: bool | None
  targets: tuple[str, ...]
  current_targets: tuple[str, ...] | None
  release: Release | None
  expected_failure: str | None
  # What the replay found, each with its subject (which reader, today's lowering, ...).
  findings: tuple[Finding, ...] = ()
  # The platforms the entry's module was exported for (None: not known to the run).
  platforms: tuple[str, ...] | None = None
  # Target -> its verdict today (stable, declared, ...), as the run judged it; None: not judged.
  target_verdicts: Mapping[str, str] | None = None
  # The case today's lowering of an imported entry was compared with (None: its own, or none).
  matched_case: str | None = None
  # The manifest's record of the machine that recorded the entry; None when unknown.
  recorded_host: Mapping[str, Any] | None = None
  # Platform -> the jax releases the entry runs on, as the run computed them from the release
  # table (None: not computed, or a report without them).
  runs_on: Mapping[str, tuple[str, ...]] | None = None
  # Keys of a newer report this release does not know, kept as read.
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def platform(self) -> str:
    """The platform whose store holds the entry (the first part of its id)."""
    return platform_of(self.entry_id)

  @property
  def producer(self) -> str:
    """The jax release that recorded the entry, or ``unknown``."""
    if self.release is not None and self.release.producer:
      return self.release.producer
    return producer_of(self.entry_id)

  @classmethod
  def from_json(cls, d: Any, where: str) -> EntryResult:
    _obj(d, where, _ENTRY_KEYS)
    entry_id = _typed(d["entry_id"], f"{where}.entry_id", str)
    try:
      EntryId.parse(entry_id)
    except ValueError:
      raise _bad(f"{where}.entry_id",
                 f"expected platform/family/case/date_jax-version, got {entry_id!r}") from None
    status = _typed(d["status"], f"{where}.status", str)
    if status not in {str(s) for s in Status}:
      raise _bad(f"{where}.status", f"expected one of {', '.join(Status)}, got {status!r}")
    return cls(
        entry_id=entry_id,
        case_id=_typed(d["case_id"], f"{where}.case_id", str),
        family=_typed(d["family"], f"{where}.family", str),
        record_date=_date(d["record_date"], f"{where}.record_date", nullable=True),
        status=Status(status),
        kinds=_strs(d["kinds"], f"{where}.kinds"),
        messages=_strs(d["messages"], f"{where}.messages"),
        findings=_findings(d["findings"], f"{where}.findings"),
        platforms=_strs(d["platforms"], f"{where}.platforms", nullable=True),
        target_verdicts=_str_map(d["target_verdicts"], f"{where}.target_verdicts"),
        days_to_expiry=_typed(d["days_to_expiry"], f"{where}.days_to_expiry", int, nullable=True),
        lowering_only=_typed(d["lowering_only"], f"{where}.lowering_only", bool, nullable=True),
        targets=_strs(d["targets"], f"{where}.targets"),
        current_targets=_strs(d["current_targets"], f"{where}.current_targets", nullable=True),
        release=None if d["release"] is None else Release.from_json(d["release"], f"{where}.release"),
        expected_failure=_typed(d["expected_failure"], f"{where}.expected_failure", str, nullable=True),
        matched_case=_typed(d.get("matched_case"), f"{where}.matched_case", str, nullable=True),
        recorded_host=_typed(d.get("recorded_host"), f"{where}.recorded_host", Mapping,
                             nullable=True),
        runs_on=_runs_on(d.get("runs_on"), f"{where}.runs_on"),
        extra={k: v for k, v in d.items() if k not in _ENTRY_KEYS + _OPTIONAL_ENTRY_KEYS})

  def to_json(self) -> dict[str, Any]:
    return {**self.extra, "entry_id": self.entry_id, "case_id": self.case_id, "family": self.family,
            "record_date": _iso(self.record_date), "status": str(self.status),
            "kinds": list(self.kinds), "messages": list(self.messages),
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
               {"runs_on": {p: list(v) for p, v in self.runs_on.items()}})}


def _runs_on(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  _typed(value, where, Mapping)
  return {p: _strs(v, f"{where}.{p}") for p, v in value.items()}


@dataclasses.dataclass(frozen=True)
class Targets:
  """Target coverage of the run: required by the stable table, reached today, covered by entries."""
  required: tuple[str, ...]
  reachable: tuple[str, ...]
  covered: tuple[str, ...]
  missing_required: tuple[str, ...]
  missing_reachable: tuple[str, ...]

  @classmethod
  def from_json(cls, d: Any, where: str) -> Targets:
    names = tuple(f.name for f in dataclasses.fields(cls))
    _obj(d, where, names)
    return cls(**{n: _strs(d[n], f"{where}.{n}") for n in names})

  def to_json(self) -> dict[str, Any]:
    return {f.name: list(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class PlatformTargets:
  """Coverage of one other platform's stable targets by the run's lowering-only entries:
  required, covered, unreachable from this host (target -> why) and missing."""
  required: tuple[str, ...]
  covered: tuple[str, ...]
  unreachable: Mapping[str, str]
  missing: tuple[str, ...]

  @classmethod
  def from_json(cls, d: Any, where: str) -> PlatformTargets:
    _obj(d, where, ("required", "covered", "unreachable", "missing"))
    return cls(required=_strs(d["required"], f"{where}.required"),
               covered=_strs(d["covered"], f"{where}.covered"),
               unreachable=_str_map(d["unreachable"], f"{where}.unreachable") or {},
               missing=_strs(d["missing"], f"{where}.missing"))

  def to_json(self) -> dict[str, Any]:
    return {"required": list(self.required), "covered": list(self.covered),
            "unreachable": dict(self.unreachable), "missing": list(self.missing)}


@dataclasses.dataclass(frozen=True, order=True)
class ShardRef:
  """Which part of a sharded run a report is: shard ``index`` (1-based) of ``count``."""
  index: int
  count: int

  @classmethod
  def from_json(cls, d: Any, where: str) -> ShardRef:
    _obj(d, where, ("index", "count"))
    index = _typed(d["index"], f"{where}.index", int)
    count = _typed(d["count"], f"{where}.count", int)
    if not 1 <= index <= count:
      raise _bad(where, f"expected 1 <= index <= count, got {index}/{count}")
    return cls(index, count)

  def to_json(self) -> dict[str, Any]:
    return {"index": self.index, "count": self.count}

  def __str__(self) -> str:
    return f"{self.index}/{self.count}"


@dataclasses.dataclass(frozen=True)
class CorpusImport:
  """What importing jax's own back-compat corpus into the run's store did (a corpus run)."""
  source: str
  jax: str | None
  imported: int
  duplicates: tuple[str, ...]
  skipped: tuple[str, ...]
  failed: tuple[str, ...]

  @classmethod
  def from_json(cls, d: Any, where: str) -> CorpusImport:
    names = tuple(f.name for f in dataclasses.fields(cls))
    _obj(d, where, names)
    return cls(source=_typed(d["source"], f"{where}.source", str),
               jax=_typed(d["jax"], f"{where}.jax", str, nullable=True),
               imported=_typed(d["imported"], f"{where}.imported", int),
               **{n: _strs(d[n], f"{where}.{n}") for n in ("duplicates", "skipped", "failed")})

  def to_json(self) -> dict[str, Any]:
    return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class Skip:
  """One line of the skip ledger: what was not done, and why."""
  what: str
  why: str

  @classmethod
  def from_json(cls, d: Any, where: str) -> Skip:
    _obj(d, where, ("what", "why"))
    return cls(_typed(d["what"], f"{where}.what", str), _typed(d["why"], f"{where}.why", str))

  def to_json(self) -> dict[str, Any]:
    return {"what": self.what, "why": self.why}


@dataclasses.dataclass(frozen=True)
class DriftItem:
  """A drift finding (a kind of :data:`DRIFT_KINDS`) of one entry, listed run-wide."""
  entry_id: str
  kind: str
  detail: str

  @classmethod
  def from_json(cls, d: Any, where: str) -> DriftItem:
    _obj(d, where, ("entry_id", "kind", "detail"))
    return cls(*(_typed(d[k], f"{where}.{k}", str) for k in ("entry_id", "kind", "detail")))

  def to_json(self) -> dict[str, Any]:
    return {"entry_id": self.entry_id, "kind": self.kind, "detail": self.detail}


@dataclasses.dataclass(frozen=True)
class Recorded:
  """What recording one case did (record mode): written, unchanged, conflict or error."""
  case_id: str
  entry_id: str | None
  action: RecordAction
  message: str

  @classmethod
  def from_json(cls, d: Any, where: str) -> Recorded:
    _obj(d, where, ("case_id", "entry_id", "action", "message"))
    action = _typed(d["action"], f"{where}.action", str)
    if action not in {str(a) for a in RecordAction}:
      raise _bad(f"{where}.action", f"expected one of {', '.join(RecordAction)}, got {action!r}")
    return cls(_typed(d["case_id"], f"{where}.case_id", str),
               _typed(d["entry_id"], f"{where}.entry_id", str, nullable=True),
               RecordAction(action),
               _typed(d["message"], f"{where}.message", str))

  def to_json(self) -> dict[str, Any]:
    return {"case_id": self.case_id, "entry_id": self.entry_id, "action": str(self.action),
            "message": self.message}


# The record actions the report's summary counts, in the order it writes them.
RECORD_ACTIONS = tuple(str(a) for a in RecordAction)


@dataclasses.dataclass(frozen=True)
class Updated:
  """What an update run did for one changed case: the entry it differed from (``since``, None
  for a case without entries), the new entry, and what changed."""
  case_id: str
  since: str | None
  entry_id: str | None
  action: str
  message: str
  targets_added: tuple[str, ...]
  targets_removed: tuple[str, ...]
  signature_changes: tuple[str, ...]
  numerics: tuple[str, ...]

  @classmethod
  def from_json(cls, d: Any, where: str) -> Updated:
    names = tuple(f.name for f in dataclasses.fields(cls))
    _obj(d, where, names)
    lists = ("targets_added", "targets_removed", "signature_changes", "numerics")
    return cls(**{n: _strs(d[n], f"{where}.{n}") if n in lists else
                  _typed(d[n], f"{where}.{n}", str, nullable=n in ("since", "entry_id"))
                  for n in names})

  def to_json(self) -> dict[str, Any]:
    return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)}

  def change_lines(self) -> tuple[str, ...]:
    """What changed, one line each, as every rendering of the report shows it."""
    lines = []
    if self.targets_added or self.targets_removed:
      lines.append(f"targets added {list(self.targets_added)}, removed "
                   f"{list(self.targets_removed)}")
    lines += [f"signature: {s}" for s in self.signature_changes]
    lines += [f"numerics: {s}" for s in self.numerics]
    if self.message:
      lines.append(self.message)
    return tuple(lines)


def host_line(record: Mapping[str, Any] | None) -> str:
  """One line naming a host record of a report (an entry's recording host, a replay host)."""
  from jaxport.golden._host import Host   # jax-free
  from jaxport.errors import GoldenDataError
  if record is None:
    return "unknown"
  try:
    return Host.from_json(record, "report").describe()
  except GoldenDataError:
    return "unreadable host record"


# The top-level report key listing the hosts that replayed the run (one per shard machine).
REPLAY_HOSTS_KEY = "replay_hosts"
# The top-level key of the project's own declared stable targets (platform -> targets), as its
# ``jaxport_stable_targets`` file lists them; absent from reports written before it was kept.
DECLARED_TARGETS_KEY = "declared_targets"
# The top-level key of each producer release's position in jax's compat window against the
# replaying jax (producer -> Window), known from release dates alone, with or without an
# expected-status table; absent from reports written before it was kept.
RELEASE_WINDOWS_KEY = "release_windows"
# The top-level key of the other platforms' coverage by lowering-only entries.
LOWERING_ONLY_TARGETS_KEY = "lowering_only_targets"
# The summary key counting passes within tolerance on another host class.
OTHER_HOST_KEY = "pass_other_host"
# The summary key counting executables loaded from the cross-run compile cache.
FROM_CACHE_KEY = "from_cache"
# The summary keys counting the replay's work: readers' deserialize-and-call runs, and today's
# exports of the entries' cases (the same in a warm run as in a cold one).
READER_RUNS_KEY = "reader_runs"
EXPORTS_TODAY_KEY = "exports_today"


@dataclasses.dataclass(frozen=True)
class Summary:
  """The counts of the run: entries per status, present and replayed, recording actions."""
  counts: Mapping[Status, int]
  present: int
  replayed: int
  actions: Mapping[str, int]
  upgraded: int = 0   # entries that ran after jaxport.upgrade; written only when some did
  # Passes within tolerance on another host class (other_host_passes); written only when some did.
  other_host: int = 0
  # Executables loaded from the cross-run compile cache; None: the run kept no such cache.
  from_cache: int | None = None
  # Readers' runs and today's exports done for the replayed entries; None: not counted (a
  # report written before they were).
  reader_runs: int | None = None
  exports_today: int | None = None

  @classmethod
  def from_json(cls, d: Any, where: str) -> Summary:
    keys = (*Status, "present", "replayed", *RECORD_ACTIONS)
    _obj(d, where, tuple(str(k) for k in keys))
    def num(k: str) -> int:
      return _typed(d[k], f"{where}.{k}", int)
    return cls(counts={s: num(str(s)) for s in Status}, present=num("present"),
               replayed=num("replayed"), actions={a: num(a) for a in RECORD_ACTIONS},
               upgraded=num("upgraded") if "upgraded" in d else 0,
               other_host=num(OTHER_HOST_KEY) if OTHER_HOST_KEY in d else 0,
               from_cache=num(FROM_CACHE_KEY) if FROM_CACHE_KEY in d else None,
               reader_runs=num(READER_RUNS_KEY) if READER_RUNS_KEY in d else None,
               exports_today=num(EXPORTS_TODAY_KEY) if EXPORTS_TODAY_KEY in d else None)

  def to_json(self) -> dict[str, Any]:
    upgraded = {"upgraded": self.upgraded} if self.upgraded else {}
    other = {OTHER_HOST_KEY: self.other_host} if self.other_host else {}
    counted = {k: v for k, v in ((FROM_CACHE_KEY, self.from_cache),
                                 (READER_RUNS_KEY, self.reader_runs),
                                 (EXPORTS_TODAY_KEY, self.exports_today)) if v is not None}
    return {**{str(s): n for s, n in self.counts.items()}, "present": self.present,
            "replayed": self.replayed, **self.actions, **upgraded, **other, **counted}

  def work_line(self) -> str:
    """What the replay did beside its verdicts, e.g. "; 12 reader runs, 6 of today's exports;
    4 executables loaded from the compile cache" ("" where nothing was counted)."""
    parts = []
    if self.reader_runs is not None and self.exports_today is not None:
      parts.append(f"{self.reader_runs} reader runs, {self.exports_today} of today's exports")
    if self.from_cache is not None:
      parts.append(f"{self.from_cache} executables loaded from the compile cache")
    return "".join(f"; {p}" for p in parts)


_TOP_KEYS = ("format", "mode", "platform", "today", "compat_window_days", "strict", "readers",
             "producer", "versions", "entries", "targets", "skips", "drift", "recorded",
             "session_failures", "session_warnings", "summary", "shard",
             LOWERING_ONLY_TARGETS_KEY, "jax_corpus", REPLAY_HOSTS_KEY)


@dataclasses.dataclass(frozen=True)
class RunReport:
  """One harness run's compatibility report (``source`` names the file it came from)."""
  mode: str
  platform: str
  today: datetime.date
  compat_window_days: int
  strict: bool
  readers: tuple[str, ...]
  producer: str
  versions: Mapping[str, str | None]
  entries: tuple[EntryResult, ...]
  targets: Targets
  skips: tuple[Skip, ...]
  drift: tuple[DriftItem, ...]
  recorded: tuple[Recorded, ...]
  session_failures: tuple[str, ...]
  session_warnings: tuple[str, ...]
  summary: Summary
  # The part of a sharded run this report is (None: the whole run, or a merged one).
  shard: ShardRef | None = None
  # Per other platform the host lowers for, its targets' coverage by lowering-only entries.
  lowering_only_targets: Mapping[str, PlatformTargets] = dataclasses.field(default_factory=dict)
  # What importing jax's corpus did (None: the run replayed the project's store).
  jax_corpus: CorpusImport | None = None
  # The host records (``jaxport.golden._host.Host.to_json``) of the machines that replayed it.
  replay_hosts: tuple[Mapping[str, Any], ...] = ()
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  source: str = dataclasses.field(default="<report>", compare=False)
  # The changed cases an update run recorded (None: not an update run's report).
  updated: tuple[Updated, ...] | None = None
  # The project's declared stable targets per platform (``any`` included); None: not recorded.
  declared_targets: Mapping[str, tuple[str, ...]] | None = None
  # Per producer release of the entries, its compat-window position; None: not recorded.
  release_windows: Mapping[str, Window] | None = None

  def declares(self, target: str, platform: str) -> bool:
    """Whether the project declared ``target`` stable for ``platform`` (or for any platform).

    A report written before the declarations were kept counts its required targets as
    declared for its own platform (the project's declarations are among them)."""
    if self.declared_targets is None:
      return platform == self.platform and target in self.targets.required
    return target in self.declared_targets.get(platform, ())

  def window_of(self, producer: str) -> Window | None:
    """The compat-window position of ``producer``: from an entry's release annotation, else
    from the run's release windows; None when no release date is known."""
    for e in self.entries:
      if e.producer == producer and e.release is not None and e.release.window is not None:
        return e.release.window
    return (self.release_windows or {}).get(producer)

  @property
  def ok(self) -> bool:
    """Whether the run passed: no failing entry and no session failure."""
    return not self.session_failures and not any(e.status == Status.FAIL for e in self.entries)

  @classmethod
  def from_json(cls, d: Any, source: str = "<report>") -> RunReport:
    """Validate and convert the decoded JSON of a report; errors name ``source`` and the key path."""
    _obj(d, source, ("format",))
    if isinstance(d["format"], int) and not isinstance(d["format"], bool) and (
        d["format"] < REPORT_FORMAT):
      raise ReportError(f"{source}: report format {d['format']}, written by an older jaxport; "
                        f"this one reads format {REPORT_FORMAT}, whose findings say what each "
                        "is about. Replay again with this jaxport to write the report anew "
                        "(or render it with the jaxport release that wrote it).")
    if d["format"] != REPORT_FORMAT:
      raise ReportError(f"{source}: report format {d['format']!r}, but this jaxport reads format "
                        f"{REPORT_FORMAT}. Render it with the jaxport release that wrote it, or "
                        "re-run the harness with this one.")
    _obj(d, source, _TOP_KEYS)
    def at(key: str) -> str:
      return f"{source}: {key}"

    def items(key: str, kind: Any) -> tuple[Any, ...]:
      return tuple(kind.from_json(x, at(f"{key}[{i}]"))
                   for i, x in enumerate(_typed(d[key], at(key), list)))

    mode = _typed(d["mode"], at("mode"), str)
    if mode not in MODES:
      raise _bad(at("mode"), f"expected one of {', '.join(MODES)}, got {mode!r}")
    versions = _typed(d["versions"], at("versions"), Mapping)
    for k, v in versions.items():
      _typed(v, at(f"versions.{k}"), str, nullable=True)
    return cls(
        mode=mode,
        platform=_typed(d["platform"], at("platform"), str),
        today=_date(d["today"], at("today")),
        compat_window_days=_typed(d["compat_window_days"], at("compat_window_days"), int),
        strict=_typed(d["strict"], at("strict"), bool),
        readers=_strs(d["readers"], at("readers")),
        producer=_typed(d["producer"], at("producer"), str),
        versions=dict(versions),
        entries=items("entries", EntryResult),
        targets=Targets.from_json(d["targets"], at("targets")),
        skips=items("skips", Skip),
        drift=items("drift", DriftItem),
        recorded=items("recorded", Recorded),
        session_failures=_strs(d["session_failures"], at("session_failures")),
        session_warnings=_strs(d["session_warnings"], at("session_warnings")),
        summary=Summary.from_json(d["summary"], at("summary")),
        shard=None if d["shard"] is None else ShardRef.from_json(d["shard"], at("shard")),
        lowering_only_targets={
            p: PlatformTargets.from_json(c, at(f"{LOWERING_ONLY_TARGETS_KEY}.{p}"))
            for p, c in _typed(d[LOWERING_ONLY_TARGETS_KEY], at(LOWERING_ONLY_TARGETS_KEY),
                               Mapping).items()},
        jax_corpus=(None if d["jax_corpus"] is None
                    else CorpusImport.from_json(d["jax_corpus"], at("jax_corpus"))),
        replay_hosts=tuple(_typed(h, at(f"{REPLAY_HOSTS_KEY}[{i}]"), Mapping) for i, h in
                           enumerate(_typed(d[REPLAY_HOSTS_KEY], at(REPLAY_HOSTS_KEY), list))),
        updated=items("updated", Updated) if "updated" in d else None,
        declared_targets=_declared(d.get(DECLARED_TARGETS_KEY), at(DECLARED_TARGETS_KEY)),
        release_windows=_windows(d.get(RELEASE_WINDOWS_KEY), at(RELEASE_WINDOWS_KEY)),
        extra={k: v for k, v in d.items() if k not in _TOP_KEYS and k not in _OPTIONAL_KEYS},
        source=source)

  def to_json(self) -> dict[str, Any]:
    """The report as the harness writes it (``json.dump`` with sorted keys gives its bytes)."""
    return {**self.extra, "format": REPORT_FORMAT, "mode": self.mode, "platform": self.platform,
            "today": self.today.isoformat(), "compat_window_days": self.compat_window_days,
            "strict": self.strict, "readers": list(self.readers), "producer": self.producer,
            "versions": dict(self.versions), "entries": [e.to_json() for e in self.entries],
            "targets": self.targets.to_json(), "skips": [s.to_json() for s in self.skips],
            "drift": [x.to_json() for x in self.drift],
            "recorded": [r.to_json() for r in self.recorded],
            "session_failures": list(self.session_failures),
            "session_warnings": list(self.session_warnings), "summary": self.summary.to_json(),
            "shard": None if self.shard is None else self.shard.to_json(),
            LOWERING_ONLY_TARGETS_KEY: {p: c.to_json()
                                        for p, c in self.lowering_only_targets.items()},
            "jax_corpus": None if self.jax_corpus is None else self.jax_corpus.to_json(),
            REPLAY_HOSTS_KEY: [dict(h) for h in self.replay_hosts],
            **({} if self.updated is None else {"updated": [u.to_json() for u in self.updated]}),
            **({} if self.declared_targets is None else {DECLARED_TARGETS_KEY: {
                p: list(ts) for p, ts in self.declared_targets.items()}}),
            **({} if self.release_windows is None else {RELEASE_WINDOWS_KEY: {
                p: w.to_json() for p, w in self.release_windows.items()}})}


# Top-level keys read into typed fields when present (older reports lack them).
_OPTIONAL_KEYS = ("format", "updated", DECLARED_TARGETS_KEY, RELEASE_WINDOWS_KEY)


def _declared(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  _typed(value, where, Mapping)
  return {_typed(p, where, str): _strs(ts, f"{where}.{p}") for p, ts in value.items()}


def _windows(value: Any, where: str) -> Mapping[str, Window] | None:
  if value is None:
    return None
  _typed(value, where, Mapping)
  return {p: Window.from_json(w, f"{where}.{p}") for p, w in value.items()}


def load_report(path: str | os.PathLike) -> RunReport:
  """Read and validate the report at ``path``; a :class:`ReportError` names the file and the problem."""
  path = Path(path)
  if not os.path.lexists(path):
    raise ReportError(f"{path}: no such report. Write one with `pytest "
                      f"--compat-report={path}`.")
  data = _json.load_file(path, str(path), ReportError, "Pass a report the harness wrote "
                         "(--compat-report); one cut short by a killed job is the usual cause "
                         "of invalid JSON, and running the harness again writes it whole.",
                         bytes_limit="MAX_REPORT_BYTES")
  return RunReport.from_json(data, source=str(path))


def write_report(report: RunReport, path: str | os.PathLike) -> None:
  """Write ``report`` as the harness does (indented, sorted keys), atomically."""
  write_text_atomically(path, json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
