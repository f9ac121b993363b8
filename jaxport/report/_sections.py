"""The parts of a report besides its entries: compat windows, release verdicts, target
coverage, shards, corpus imports, skips, drift, and what a record or update run wrote."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._vocabulary import RecordAction
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.golden._host import Host
from jaxport.report._fields import STRICT, bad, id_text, iso, read_entry_id, str_map


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
    STRICT.obj(d, where, tuple(f.name for f in dataclasses.fields(cls)))
    return cls(producer=STRICT.of(d["producer"], str, f"{where}.producer"),
               producer_date=STRICT.date(d["producer_date"], f"{where}.producer_date"),
               consumer=STRICT.of(d["consumer"], str, f"{where}.consumer"),
               consumer_date=STRICT.date(d["consumer_date"], f"{where}.consumer_date"),
               age_days=STRICT.of(d["age_days"], int, f"{where}.age_days"),
               gap_days=STRICT.of(d["gap_days"], int, f"{where}.gap_days"),
               direction=STRICT.of(d["direction"], str, f"{where}.direction"),
               inside_window=STRICT.of(d["inside_window"], bool, f"{where}.inside_window"))

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
  # The rules jaxport.upgrade applied before the entry ran (verdict "upgraded");
  # written only when there are some.
  upgrade_rules: tuple[str, ...] = ()

  @classmethod
  def from_json(cls, d: Any, where: str) -> Release:
    STRICT.obj(d, where,
               tuple(f.name for f in dataclasses.fields(cls) if f.name != "upgrade_rules"),
               ("upgrade_rules",))
    return cls(producer=STRICT.of(d["producer"], str, f"{where}.producer", nullable=True),
               consumer=STRICT.of(d["consumer"], str, f"{where}.consumer", nullable=True),
               window=None if d["window"] is None else Window.from_json(d["window"], f"{where}.window"),
               expected=STRICT.of(d["expected"], str, f"{where}.expected"),
               reason=STRICT.of(d["reason"], str, f"{where}.reason", nullable=True),
               verdict=STRICT.of(d["verdict"], str, f"{where}.verdict"),
               upgrade_rules=STRICT.strs(d.get("upgrade_rules", []), f"{where}.upgrade_rules"))

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
    STRICT.obj(d, where, names)
    return cls(**{n: STRICT.strs(d[n], f"{where}.{n}") for n in names})

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
    STRICT.obj(d, where, ("required", "covered", "unreachable", "missing"))
    return cls(required=STRICT.strs(d["required"], f"{where}.required"),
               covered=STRICT.strs(d["covered"], f"{where}.covered"),
               unreachable=str_map(d["unreachable"], f"{where}.unreachable") or {},
               missing=STRICT.strs(d["missing"], f"{where}.missing"))

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
    STRICT.obj(d, where, ("index", "count"))
    index = STRICT.of(d["index"], int, f"{where}.index")
    count = STRICT.of(d["count"], int, f"{where}.count")
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
    STRICT.obj(d, where, names)
    return cls(source=STRICT.of(d["source"], str, f"{where}.source"),
               jax=STRICT.of(d["jax"], str, f"{where}.jax", nullable=True),
               imported=STRICT.of(d["imported"], int, f"{where}.imported"),
               **{n: STRICT.strs(d[n], f"{where}.{n}") for n in ("duplicates", "skipped",
                                                                 "failed")})

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
    STRICT.obj(d, where, ("what", "why"))
    return cls(STRICT.of(d["what"], str, f"{where}.what"), STRICT.of(d["why"], str, f"{where}.why"))

  def to_json(self) -> dict[str, Any]:
    return {"what": self.what, "why": self.why}


@dataclasses.dataclass(frozen=True)
class DriftItem:
  """A drift finding (a kind of :data:`DRIFT_KINDS`) of one entry, listed run-wide."""
  entry_id: EntryId
  kind: str
  detail: str

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "DriftItem")

  @classmethod
  def from_json(cls, d: Any, where: str) -> DriftItem:
    STRICT.obj(d, where, ("entry_id", "kind", "detail"))
    return cls(read_entry_id(d["entry_id"], f"{where}.entry_id"),
               *(STRICT.of(d[k], str, f"{where}.{k}") for k in ("kind", "detail")))

  def to_json(self) -> dict[str, Any]:
    return {"entry_id": str(self.entry_id), "kind": self.kind, "detail": self.detail}


@dataclasses.dataclass(frozen=True)
class Recorded:
  """What recording one case did (record mode): written, unchanged, conflict or error."""
  case_id: str
  entry_id: EntryId | None
  action: RecordAction
  message: str

  def __post_init__(self) -> None:
    if self.entry_id is not None:
      require_entry_id(self.entry_id, "Recorded")

  @classmethod
  def from_json(cls, d: Any, where: str) -> Recorded:
    STRICT.obj(d, where, ("case_id", "entry_id", "action", "message"))
    action = STRICT.of(d["action"], str, f"{where}.action")
    if action not in {str(a) for a in RecordAction}:
      raise bad(f"{where}.action", f"expected one of {', '.join(RecordAction)}, got {action!r}")
    return cls(STRICT.of(d["case_id"], str, f"{where}.case_id"),
               read_entry_id(d["entry_id"], f"{where}.entry_id", nullable=True),
               RecordAction(action),
               STRICT.of(d["message"], str, f"{where}.message"))

  def to_json(self) -> dict[str, Any]:
    return {"case_id": self.case_id, "entry_id": id_text(self.entry_id), "action": str(self.action),
            "message": self.message}


# The record actions the report's summary counts, in the order it writes them.
RECORD_ACTIONS = tuple(str(a) for a in RecordAction)


# The fields of :class:`Updated` that hold entry ids.
_UPDATED_IDS = ("since", "entry_id")


@dataclasses.dataclass(frozen=True)
class Updated:
  """What an update run did for one changed case: the entry it differed from (``since``, None
  for a case without entries), the new entry, and what changed."""
  case_id: str
  since: EntryId | None
  entry_id: EntryId | None
  action: str
  message: str
  targets_added: tuple[str, ...]
  targets_removed: tuple[str, ...]
  signature_changes: tuple[str, ...]
  numerics: tuple[str, ...]

  def __post_init__(self) -> None:
    for name in _UPDATED_IDS:
      if getattr(self, name) is not None:
        require_entry_id(getattr(self, name), f"Updated.{name}")

  @classmethod
  def from_json(cls, d: Any, where: str) -> Updated:
    names = tuple(f.name for f in dataclasses.fields(cls))
    STRICT.obj(d, where, names)
    lists = ("targets_added", "targets_removed", "signature_changes", "numerics")
    return cls(**{n: STRICT.strs(d[n], f"{where}.{n}") if n in lists else
                  read_entry_id(d[n], f"{where}.{n}", nullable=True) if n in _UPDATED_IDS else
                  STRICT.of(d[n], str, f"{where}.{n}")
                  for n in names})

  def to_json(self) -> dict[str, Any]:
    return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else
            id_text(v) if f.name in _UPDATED_IDS else v
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
  if record is None:
    return "unknown"
  try:
    return Host.from_json(record, "report").describe()
  except GoldenDataError:
    return "unreadable host record"
