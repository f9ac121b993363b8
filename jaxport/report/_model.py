"""The harness's JSON compatibility report as typed records: one loader, one writer.

The harness (``pytest harness/ --compat-report=RUN.json``) writes the report;
everything in this package reads it through :func:`load_report` and works on
the records below, never on the raw dictionaries. ``RunReport.to_json`` gives
back exactly the dictionary that was read (for the keys this module knows,
plus any unknown top-level and entry keys, kept as they were), so a merged
report is written in the harness's own format.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport.errors import ReportError
from jaxport.report._files import write_text_atomically

# The report format this package reads and writes (the harness writes it too).
REPORT_FORMAT = 1
# An update run replays, then records the cases that changed (``--compat-update``).
MODES = ("replay", "record", "update")
UNKNOWN_PRODUCER = "unknown"
_PRODUCER_RE = re.compile(r"_jax-(.+)$")
_FINDING_RE = re.compile(r"\[([a-z_]+)\] (.*)", re.DOTALL)


class Status(enum.StrEnum):
  """The verdict on one entry in one run, as the harness reports it."""
  PASS = "pass"
  DRIFT = "drift"    # results within tolerance but not bitwise equal
  WARN = "warn"      # drift or staleness that fails only under --compat-strict
  XFAIL = "xfail"    # an expected failure of an old producer release
  FAIL = "fail"


class FindingKind(enum.StrEnum):
  """What one finding of an entry says; the harness's finding vocabulary, worst first.

  The meaning and the status each leads to are in ``jaxport/harness/_classify.py``.
  """
  # The entry's own files are damaged (a hash, the manifest, an array file): always fails.
  GOLDEN_DATA_ERROR = "golden_data_error"
  COMPATIBILITY_BREAK = "compatibility_break"
  EXPORT_ERROR = "export_error"
  # The releases the entry runs on (computed from the release table) leave out its case's
  # min_consumer, or a release between that and the producer: always fails.
  BELOW_MIN_CONSUMER = "below_min_consumer"
  LOWERING_DRIFT = "lowering_drift"
  NUMERICS_CHANGE = "numerics_change"
  NUMERICS_DRIFT = "numerics_drift"
  # Within tolerance, not bitwise, on a host of another class than the recording one: a pass.
  NUMERICS_OTHER_HOST = "numerics_other_host"
  PRODUCER_DRIFT = "producer_drift"   # drift of an older release's entry: the release difference
  EXPIRED = "expired"
  FUTURE_DATE = "future_date"
  STALE_TARGET = "stale_target"
  UNEXPECTED_PASS = "unexpected_pass"
  UPGRADED = "upgraded"


def other_host_passes(entries: Iterable[Any]) -> int:
  """How many passing entries (outcomes or report entries) matched the recorded outputs within
  tolerance but not bitwise on a host of another class than the recording one: counted
  apart from the bitwise passes."""
  return sum(1 for e in entries
             if e.status == Status.PASS and FindingKind.NUMERICS_OTHER_HOST in e.kinds)


# The kinds the report's ``drift`` section lists: differences between an entry and today's
# lowering or readers that are not breaks.
DRIFT_KINDS = frozenset({FindingKind.LOWERING_DRIFT, FindingKind.NUMERICS_CHANGE,
                         FindingKind.NUMERICS_DRIFT, FindingKind.PRODUCER_DRIFT})


# --- reading helpers: each names the file and the key path of what is wrong ----------------------

def _bad(where: str, what: str) -> ReportError:
  return ReportError(f"{where}: {what}. Is this a report written by `pytest harness/ "
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


def producer_of(entry_id: str) -> str:
  """The jax release an entry id names (``..._jax-0.10.2``), or ``unknown``."""
  m = _PRODUCER_RE.search(entry_id)
  return m.group(1) if m else UNKNOWN_PRODUCER


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


@dataclasses.dataclass(frozen=True)
class Finding:
  """One finding of an entry: its kind (``compatibility_break``, ``lowering_drift``, ...) and text."""
  kind: str
  text: str

  @property
  def about_current_lowering(self) -> bool:
    """Whether it compares the entry with today's lowering (signature or target differences)."""
    return self.text.startswith("current lowering:")


_ENTRY_KEYS = ("entry_id", "case_id", "family", "record_date", "status", "kinds", "messages",
               "days_to_expiry", "lowering_only", "targets", "current_targets", "release",
               "expected_failure")


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
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  @property
  def platform(self) -> str:
    """The platform whose store holds the entry (the first part of its id)."""
    return self.entry_id.split("/", 1)[0]

  @property
  def producer(self) -> str:
    """The jax release that recorded the entry, or ``unknown``."""
    if self.release is not None and self.release.producer:
      return self.release.producer
    return producer_of(self.entry_id)

  @property
  def recorded_host(self) -> Mapping[str, Any] | None:
    """The manifest's record of the machine that recorded the entry; None when unknown."""
    host = self.extra.get("recorded_host")
    return host if isinstance(host, Mapping) else None

  @property
  def runs_on(self) -> Mapping[str, tuple[str, ...]] | None:
    """Platform -> the jax releases the entry runs on, as the run computed them from the release
    table (optional key ``runs_on``; None in reports without it)."""
    got = self.extra.get("runs_on")
    if not isinstance(got, Mapping):
      return None
    return {str(p): tuple(str(v) for v in vs) for p, vs in got.items()
            if isinstance(vs, (list, tuple))}

  @property
  def findings(self) -> tuple[Finding, ...]:
    """The messages split into kind and text (a message without a kind tag keeps kind ``""``)."""
    out = []
    for m in self.messages:
      hit = _FINDING_RE.fullmatch(m)
      out.append(Finding(hit.group(1), hit.group(2)) if hit else Finding("", m))
    return tuple(out)

  @classmethod
  def from_json(cls, d: Any, where: str) -> EntryResult:
    _obj(d, where, _ENTRY_KEYS)
    entry_id = _typed(d["entry_id"], f"{where}.entry_id", str)
    if entry_id.count("/") != 3:
      raise _bad(f"{where}.entry_id", f"expected platform/family/case/date_jax-version, got {entry_id!r}")
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
        days_to_expiry=_typed(d["days_to_expiry"], f"{where}.days_to_expiry", int, nullable=True),
        lowering_only=_typed(d["lowering_only"], f"{where}.lowering_only", bool, nullable=True),
        targets=_strs(d["targets"], f"{where}.targets"),
        current_targets=_strs(d["current_targets"], f"{where}.current_targets", nullable=True),
        release=None if d["release"] is None else Release.from_json(d["release"], f"{where}.release"),
        expected_failure=_typed(d["expected_failure"], f"{where}.expected_failure", str, nullable=True),
        extra={k: v for k, v in d.items() if k not in _ENTRY_KEYS})

  def to_json(self) -> dict[str, Any]:
    return {**self.extra, "entry_id": self.entry_id, "case_id": self.case_id, "family": self.family,
            "record_date": _iso(self.record_date), "status": str(self.status),
            "kinds": list(self.kinds), "messages": list(self.messages),
            "days_to_expiry": self.days_to_expiry, "lowering_only": self.lowering_only,
            "targets": list(self.targets),
            "current_targets": None if self.current_targets is None else list(self.current_targets),
            "release": None if self.release is None else self.release.to_json(),
            "expected_failure": self.expected_failure}


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
  action: str
  message: str

  @classmethod
  def from_json(cls, d: Any, where: str) -> Recorded:
    _obj(d, where, ("case_id", "entry_id", "action", "message"))
    return cls(_typed(d["case_id"], f"{where}.case_id", str),
               _typed(d["entry_id"], f"{where}.entry_id", str, nullable=True),
               _typed(d["action"], f"{where}.action", str),
               _typed(d["message"], f"{where}.message", str))

  def to_json(self) -> dict[str, Any]:
    return {"case_id": self.case_id, "entry_id": self.entry_id, "action": self.action,
            "message": self.message}


RECORD_ACTIONS = ("written", "unchanged", "conflict", "error")


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
# The summary key counting passes within tolerance on another host class.
OTHER_HOST_KEY = "pass_other_host"


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

  @classmethod
  def from_json(cls, d: Any, where: str) -> Summary:
    keys = (*Status, "present", "replayed", *RECORD_ACTIONS)
    _obj(d, where, tuple(str(k) for k in keys))
    def num(k: str) -> int:
      return _typed(d[k], f"{where}.{k}", int)
    return cls(counts={s: num(str(s)) for s in Status}, present=num("present"),
               replayed=num("replayed"), actions={a: num(a) for a in RECORD_ACTIONS},
               upgraded=num("upgraded") if "upgraded" in d else 0,
               other_host=num(OTHER_HOST_KEY) if OTHER_HOST_KEY in d else 0)

  def to_json(self) -> dict[str, Any]:
    upgraded = {"upgraded": self.upgraded} if self.upgraded else {}
    other = {OTHER_HOST_KEY: self.other_host} if self.other_host else {}
    return {**{str(s): n for s, n in self.counts.items()}, "present": self.present,
            "replayed": self.replayed, **self.actions, **upgraded, **other}


_TOP_KEYS = ("format", "mode", "platform", "today", "compat_window_days", "strict", "readers",
             "producer", "versions", "entries", "targets", "skips", "drift", "recorded",
             "session_failures", "session_warnings", "summary")


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
  def replay_hosts(self) -> tuple[Mapping[str, Any], ...]:
    """The host records (``jaxport.golden._host.Host.to_json``) of the machines that replayed
    the run; empty in a report written before hosts were kept."""
    hosts = self.extra.get(REPLAY_HOSTS_KEY) or ()
    return tuple(h for h in hosts if isinstance(h, Mapping))

  @property
  def ok(self) -> bool:
    """Whether the run passed: no failing entry and no session failure."""
    return not self.session_failures and not any(e.status == Status.FAIL for e in self.entries)

  @classmethod
  def from_json(cls, d: Any, source: str = "<report>") -> RunReport:
    """Validate and convert the decoded JSON of a report; errors name ``source`` and the key path."""
    _obj(d, source, ("format",))
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
  try:
    text = path.read_text(encoding="utf-8")
  except FileNotFoundError:
    raise ReportError(f"{path}: no such report. Write one with `pytest harness/ "
                      f"--compat-report={path}`.") from None
  except (OSError, UnicodeDecodeError) as e:
    raise ReportError(f"{path}: cannot read the report ({e}).") from None
  data = _json.load(text, str(path), ReportError, "Pass a report the harness wrote "
                    "(--compat-report); one cut short by a killed job is the usual cause of "
                    "invalid JSON, and running the harness again writes it whole.",
                    bytes_limit="MAX_REPORT_BYTES")
  return RunReport.from_json(data, source=str(path))


def write_report(report: RunReport, path: str | os.PathLike) -> None:
  """Write ``report`` as the harness does (indented, sorted keys), atomically."""
  write_text_atomically(path, json.dumps(report.to_json(), indent=2, sort_keys=True) + "\n")
