"""The parts of a report besides its entries: compat windows, release verdicts, target
coverage, shards, corpus imports, skips, drift, and what a record or update run wrote."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport._vocabulary import RecordAction
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.golden._host import Host
from jaxport.report._fields import STRICT

# The report's sections ignore keys a newer report may add.
_report_record = json_record(STRICT, unknown_keys=True)


def _shard_in_range(shard: ShardRef, d: Mapping[str, Any], strict: Strict, where: str) -> None:
  if not 1 <= shard.index <= shard.count:
    raise strict.fail(where, f"expected 1 <= index <= count, got {shard.index}/{shard.count}")


@_report_record
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


@json_record(STRICT)
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
  upgrade_rules: tuple[str, ...] = key(default=(), omit_default=True)


@_report_record
@dataclasses.dataclass(frozen=True)
class Targets:
  """Target coverage of the run: required by the stable table, reached today, covered by entries."""
  required: tuple[str, ...]
  reachable: tuple[str, ...]
  covered: tuple[str, ...]
  missing_required: tuple[str, ...]
  missing_reachable: tuple[str, ...]


@_report_record
@dataclasses.dataclass(frozen=True)
class PlatformTargets:
  """Coverage of one other platform's stable targets by the run's lowering-only entries:
  required, covered, unreachable from this host (target -> why) and missing."""
  required: tuple[str, ...]
  covered: tuple[str, ...]
  unreachable: Mapping[str, str]
  missing: tuple[str, ...]


@json_record(STRICT, unknown_keys=True, check=_shard_in_range)
@dataclasses.dataclass(frozen=True, order=True)
class ShardRef:
  """Which part of a sharded run a report is: shard ``index`` (1-based) of ``count``."""
  index: int
  count: int

  def __str__(self) -> str:
    return f"{self.index}/{self.count}"


@_report_record
@dataclasses.dataclass(frozen=True)
class CorpusImport:
  """What importing jax's own back-compat corpus into the run's store did (a corpus run)."""
  source: str
  jax: str | None
  imported: int
  duplicates: tuple[str, ...]
  skipped: tuple[str, ...]
  failed: tuple[str, ...]


@_report_record
@dataclasses.dataclass(frozen=True)
class Skip:
  """One line of the skip ledger: what was not done, and why."""
  what: str
  why: str


@_report_record
@dataclasses.dataclass(frozen=True)
class DriftItem:
  """A drift finding (a kind of :data:`DRIFT_KINDS`) of one entry, listed run-wide."""
  entry_id: EntryId
  kind: str
  detail: str

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "DriftItem")


@_report_record
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


# The record actions the report's summary counts, in the order it writes them.
RECORD_ACTIONS = tuple(str(a) for a in RecordAction)


# The fields of :class:`Updated` that hold entry ids.
_UPDATED_IDS = ("since", "entry_id")


@_report_record
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
    return Host.from_json(record, "report: host").describe()
  except GoldenDataError:
    return "unreadable host record"
