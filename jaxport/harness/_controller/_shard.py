"""Splitting a store's entries into N deterministic, balanced shards (``--compat-shard=I/N``).

A CI matrix of N jobs, each running shard I of N, replays every entry exactly
once. Entries of one case stay together (the case is exported once, in one
shard), and cases are dealt out by cost, largest first, each to the shard with
the least cost so far. An entry's cost is its replay seconds recorded by an
earlier run (``--compat-timings``, read back with ``--compat-costs``) where
known, else the median of the known costs, else 1. Every shard computes the
same split from the same entry ids and costs, so the shards are disjoint and
their union is the whole store.
"""

from __future__ import annotations

import dataclasses
import heapq
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

from jaxport.golden._entry_id import EntryId
from jaxport import _json, _limits
from jaxport._records import Strict, quote
from jaxport.errors import ShardError as ShardError  # raised here, defined with the others

COSTS_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Shard:
  """Shard ``index`` (1-based) of ``count``."""

  index: int
  count: int

  @classmethod
  def parse(cls, text: str) -> Shard:
    """``"I/N"`` with 1 <= I <= N <= ``MAX_SHARDS``."""
    index, sep, count = text.partition("/")
    try:
      shard = cls(int(index), int(count)) if sep and len(text) <= 64 else None
    except ValueError:
      shard = None
    if shard is None or not 1 <= shard.index <= shard.count:
      raise ShardError(f"shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4 for the second "
                       "of four shards.")
    if shard.count > _limits.MAX_SHARDS:
      raise ShardError(f"shard {text!r}: {shard.count} shards is more than "
                       f"{_limits.name('MAX_SHARDS')}; split the run into at most "
                       f"{_limits.MAX_SHARDS} shards (a CI matrix has tens).")
    return shard

  def __str__(self) -> str:
    return f"{self.index}/{self.count}"

  def select(self, entry_ids: Iterable[EntryId],
             costs: Mapping[str, float] | None = None) -> list[EntryId]:
    """The entry ids of this shard, sorted (``costs``: seconds by an id's text)."""
    return sorted(_deal(entry_ids, self.count, costs).get(self.index - 1, []))


def split(entry_ids: Iterable[EntryId], count: int,
          costs: Mapping[str, float] | None = None) -> list[list[EntryId]]:
  """All ``count`` shards' entry ids: cases dealt largest first to the least-loaded shard."""
  if not 1 <= count <= _limits.MAX_SHARDS:
    raise ShardError(f"{count} shards: expected 1 to {_limits.name('MAX_SHARDS')}.")
  dealt = _deal(entry_ids, count, costs)
  return [dealt.get(s, []) for s in range(count)]


def _deal(entry_ids: Iterable[EntryId], count: int,
          costs: Mapping[str, float] | None) -> dict[int, list[EntryId]]:
  """The non-empty shards of :func:`split` by 0-based index, in time and memory independent of
  ``count``.

  Ties go to the lowest index, so the shards in use are always the first k for k
  <= the number of cases: only ``min(count, cases)`` shards take part.
  """
  costs = dict(costs or {})
  ids = sorted(set(entry_ids))
  known = [costs[str(i)] for i in ids if str(i) in costs]
  default = statistics.median(known) if known else 1.0
  cases: dict[str, list[EntryId]] = {}
  for entry_id in ids:
    cases.setdefault(entry_id.case_key, []).append(entry_id)
  cost = {k: sum(costs.get(str(i), default) for i in members) for k, members in cases.items()}
  shards: dict[int, list[EntryId]] = {}
  loads = [(0.0, s) for s in range(min(count, len(cases)))]  # a heap: least load, lowest index
  for key in sorted(cases, key=lambda k: (-cost[k], k)):
    load, target = loads[0]
    shards.setdefault(target, []).extend(cases[key])
    heapq.heapreplace(loads, (load + cost[key], target))
  return shards


def read_costs(path: str | Path) -> dict[str, float]:
  """Per-entry replay seconds from a ``--compat-timings`` file."""
  path = Path(path)
  data = _json.load_file(path, f"costs file {path}", ShardError, "Pass a file written by "
                         "--compat-timings, or leave --compat-costs out to split by entry count.")
  strict = Strict(lambda at, what: ShardError(
      f"costs file {path}: {at}: {what}. Pass a file written by --compat-timings "
      f'({{"format": {COSTS_FORMAT}, "seconds": {{entry_id: seconds >= 0}}}}).'))
  data = strict.obj(data, "the file", ("format", "seconds"))
  if strict.count(data["format"], "format") != COSTS_FORMAT:
    raise strict.fail("format", f"expected {COSTS_FORMAT}, got {quote(data['format'])}")
  seconds = {k: strict.number(v, f"seconds.{k}")
             for k, v in strict.of(data["seconds"], Mapping, "seconds").items()}
  negative = sorted(k for k, v in seconds.items() if v < 0)
  if negative:
    at = negative[0]
    raise strict.fail(f"seconds.{at}", f"expected seconds >= 0, got {seconds[at]}")
  return seconds


def costs_json(seconds: Mapping[EntryId, float],
               parts: Mapping[EntryId, Mapping[str, float]]) -> dict:
  """The ``--compat-timings`` file: seconds per entry, and per part of each entry's replay."""
  return {"format": COSTS_FORMAT,
          "seconds": {str(k): round(seconds[k], 4) for k in sorted(seconds)},
          "parts": {str(k): {p: round(v, 4) for p, v in parts[k].items()} for k in sorted(parts)}}
