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
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

from jaxport import _json
from jaxport.errors import JaxportError

COSTS_FORMAT = 1


class ShardError(JaxportError, ValueError):
  """A shard specification or a costs file the harness cannot use."""


@dataclasses.dataclass(frozen=True)
class Shard:
  """Shard ``index`` (1-based) of ``count``."""

  index: int
  count: int

  @classmethod
  def parse(cls, text: str) -> Shard:
    """``"I/N"`` with 1 <= I <= N."""
    index, sep, count = text.partition("/")
    try:
      shard = cls(int(index), int(count)) if sep else None
    except ValueError:
      shard = None
    if shard is None or not 1 <= shard.index <= shard.count:
      raise ShardError(f"shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4 for the second "
                       "of four shards.")
    return shard

  def __str__(self) -> str:
    return f"{self.index}/{self.count}"

  def select(self, entry_ids: Iterable[str], costs: Mapping[str, float] | None = None) -> list[str]:
    """The entry ids of this shard, sorted."""
    return sorted(split(entry_ids, self.count, costs)[self.index - 1])


def _case_key(entry_id: str) -> str:
  """``platform/family/case_id`` of an entry id (its date and release folder dropped)."""
  return entry_id.rsplit("/", 1)[0]


def split(entry_ids: Iterable[str], count: int,
          costs: Mapping[str, float] | None = None) -> list[list[str]]:
  """All ``count`` shards' entry ids: cases dealt largest first to the least-loaded shard."""
  costs = dict(costs or {})
  ids = sorted(set(entry_ids))
  known = [costs[i] for i in ids if i in costs]
  default = statistics.median(known) if known else 1.0
  cases: dict[str, list[str]] = {}
  for entry_id in ids:
    cases.setdefault(_case_key(entry_id), []).append(entry_id)
  cost = {k: sum(costs.get(i, default) for i in members) for k, members in cases.items()}
  shards: list[list[str]] = [[] for _ in range(count)]
  loads = [0.0] * count
  for key in sorted(cases, key=lambda k: (-cost[k], k)):
    target = min(range(count), key=lambda s: (loads[s], s))
    shards[target].extend(cases[key])
    loads[target] += cost[key]
  return shards


def read_costs(path: str | Path) -> dict[str, float]:
  """Per-entry replay seconds from a ``--compat-timings`` file."""
  path = Path(path)
  try:
    data = _json.parse(path.read_bytes())
    seconds = data["seconds"] if data.get("format") == COSTS_FORMAT else None
  except (OSError, ValueError, AttributeError, KeyError) as e:
    raise ShardError(f"costs file {path}: cannot read it ({type(e).__name__}: {e}). Pass a file "
                     "written by --compat-timings, or leave --compat-costs out to split by "
                     "entry count.") from None
  if not isinstance(seconds, dict) or not all(
      isinstance(k, str) and isinstance(v, (int, float)) and v >= 0 for k, v in seconds.items()):
    raise ShardError(f"costs file {path}: expected {{\"format\": {COSTS_FORMAT}, \"seconds\": "
                     "{entry_id: seconds >= 0}}, as --compat-timings writes it.")
  return {k: float(v) for k, v in seconds.items()}


def costs_json(seconds: Mapping[str, float], parts: Mapping[str, Mapping[str, float]]) -> dict:
  """The ``--compat-timings`` file: seconds per entry, and per part of each entry's replay."""
  return {"format": COSTS_FORMAT,
          "seconds": {k: round(seconds[k], 4) for k in sorted(seconds)},
          "parts": {k: {p: round(v, 4) for p, v in parts[k].items()} for k in sorted(parts)}}
