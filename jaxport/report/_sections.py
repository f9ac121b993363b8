"""The parts of a report besides its entries: compat windows, release verdicts, target
coverage, shards, corpus imports, skips, drift, and what a record or update run wrote."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._vocabulary import RecordAction
from jaxport.report._fields import bad, date_field, iso, obj, str_map, strs, typed


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
    obj(d, where, tuple(f.name for f in dataclasses.fields(cls)))
    return cls(producer=typed(d["producer"], f"{where}.producer", str),
               producer_date=date_field(d["producer_date"], f"{where}.producer_date"),
               consumer=typed(d["consumer"], f"{where}.consumer", str),
               consumer_date=date_field(d["consumer_date"], f"{where}.consumer_date"),
               age_days=typed(d["age_days"], f"{where}.age_days", int),
               gap_days=typed(d["gap_days"], f"{where}.gap_days", int),
               direction=typed(d["direction"], f"{where}.direction", str),
               inside_window=typed(d["inside_window"], f"{where}.inside_window", bool))

  def to_json(self) -> dict[str, Any]:
    d = dataclasses.asdict(self)
    d["producer_date"], d["consumer_date"] = iso(self.producer_date), iso(self.consumer_date)
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
    obj(d, where, tuple(f.name for f in dataclasses.fields(cls) if f.name != "upgrade_rules"))
    return cls(producer=typed(d["producer"], f"{where}.producer", str, nullable=True),
               consumer=typed(d["consumer"], f"{where}.consumer", str, nullable=True),
               window=None if d["window"] is None else Window.from_json(d["window"], f"{where}.window"),
               expected=typed(d["expected"], f"{where}.expected", str),
               reason=typed(d["reason"], f"{where}.reason", str, nullable=True),
               verdict=typed(d["verdict"], f"{where}.verdict", str),
               policy_ok=typed(d["policy_ok"], f"{where}.policy_ok", bool),
               upgrade_rules=strs(d.get("upgrade_rules", []), f"{where}.upgrade_rules"))

  def to_json(self) -> dict[str, Any]:
    d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
    d["window"] = None if self.window is None else self.window.to_json()
    d["upgrade_rules"] = list(self.upgrade_rules)
    if not self.upgrade_rules:
      del d["upgrade_rules"]
    return d


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
    obj(d, where, names)
    return cls(**{n: strs(d[n], f"{where}.{n}") for n in names})

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
    obj(d, where, ("required", "covered", "unreachable", "missing"))
    return cls(required=strs(d["required"], f"{where}.required"),
               covered=strs(d["covered"], f"{where}.covered"),
               unreachable=str_map(d["unreachable"], f"{where}.unreachable") or {},
               missing=strs(d["missing"], f"{where}.missing"))

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
    obj(d, where, ("index", "count"))
    index = typed(d["index"], f"{where}.index", int)
    count = typed(d["count"], f"{where}.count", int)
    if not 1 <= index <= count:
      raise bad(where, f"expected 1 <= index <= count, got {index}/{count}")
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
    obj(d, where, names)
    return cls(source=typed(d["source"], f"{where}.source", str),
               jax=typed(d["jax"], f"{where}.jax", str, nullable=True),
               imported=typed(d["imported"], f"{where}.imported", int),
               **{n: strs(d[n], f"{where}.{n}") for n in ("duplicates", "skipped", "failed")})

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
    obj(d, where, ("what", "why"))
    return cls(typed(d["what"], f"{where}.what", str), typed(d["why"], f"{where}.why", str))

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
    obj(d, where, ("entry_id", "kind", "detail"))
    return cls(*(typed(d[k], f"{where}.{k}", str) for k in ("entry_id", "kind", "detail")))

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
    obj(d, where, ("case_id", "entry_id", "action", "message"))
    action = typed(d["action"], f"{where}.action", str)
    if action not in {str(a) for a in RecordAction}:
      raise bad(f"{where}.action", f"expected one of {', '.join(RecordAction)}, got {action!r}")
    return cls(typed(d["case_id"], f"{where}.case_id", str),
               typed(d["entry_id"], f"{where}.entry_id", str, nullable=True),
               RecordAction(action),
               typed(d["message"], f"{where}.message", str))

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
    obj(d, where, names)
    lists = ("targets_added", "targets_removed", "signature_changes", "numerics")
    return cls(**{n: strs(d[n], f"{where}.{n}") if n in lists else
                  typed(d[n], f"{where}.{n}", str, nullable=n in ("since", "entry_id"))
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
