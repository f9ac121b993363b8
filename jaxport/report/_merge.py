"""Merging the reports of shards of one harness run into the report of the whole run.

Shards replay disjoint parts of one store with one build on one date, so their
reports agree on everything but the entries. The merge keeps what they share,
unites the entries (sorted by id, as the harness sorts them), and recomputes
what depends on all entries (summary counts, target coverage, the order of the
skip ledger and drift list), so that merging the reports of disjoint parts
gives the report an unsharded run of all of them writes. Coverage is recomputed by
``jaxport.report._coverage``, the code the harness session judges a run with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jaxport.errors import ReportError
from jaxport.report import _coverage as coverage
from jaxport._vocabulary import FindingKind, Status
from jaxport.report._entries import EntryResult
from jaxport.report._model import RunReport, Summary, other_host_passes
from jaxport.report._sections import (RECORD_ACTIONS, PlatformTargets, Recorded, ShardRef, Skip,
                                      Window)

# What the shards of one run must agree on, with how to read it off a report.
_SHARED = {
    "mode": lambda r: r.mode,
    "platform": lambda r: r.platform,
    "today (the run date)": lambda r: r.today,
    "compat_window_days": lambda r: r.compat_window_days,
    "strict": lambda r: r.strict,
    "readers": lambda r: r.readers,
    "producer": lambda r: r.producer,
    "versions": lambda r: dict(r.versions),
    "targets.required": lambda r: r.targets.required,
    "declared_targets": lambda r: r.declared_targets,
    "summary.present (entries in the store)": lambda r: r.summary.present,
    # Of the other platforms' lowering-only coverage, shards agree on the required and the
    # unreachable targets; what is covered and missing depends on all entries, recomputed.
    "lowering_only_targets (required, unreachable)": lambda r: {
        p: (c.required, dict(c.unreachable)) for p, c in r.lowering_only_targets.items()},
    "jax_corpus": lambda r: r.jax_corpus,
    "extra top-level fields": lambda r: r.extra,
}


def merge_reports(reports: Sequence[RunReport]) -> RunReport:
  """The report of the whole run from the reports of its shards (disjoint parts of one run)."""
  if not reports:
    raise ReportError("nothing to merge: pass the report of every shard of the run.")
  first = reports[0]
  for other in reports[1:]:
    for what, get in _SHARED.items():
      if get(other) != get(first):
        raise ReportError(
            f"{first.source} and {other.source} are not shards of one run: their {what} differ "
            f"({get(first)!r} vs {get(other)!r}). Merge only the shard reports of a single "
            "harness run (same build, store, platform, date and options).")
  splits = sorted({r.shard.count for r in reports if r.shard is not None})
  if len(splits) > 1:
    raise ReportError(f"the reports come from splits into {splits} shards; merge the shards of "
                      "one run (one N).")
  entries = _disjoint(reports, lambda r: r.entries, lambda e: e.entry_id, "entry")
  recorded = _disjoint(reports, lambda r: r.recorded, lambda x: x.case_id, "recorded case")
  if first.mode == "replay" and len(entries) > first.summary.present:
    raise ReportError(f"the reports replay {len(entries)} entries of a store that holds "
                      f"{first.summary.present}: they are not shards of one run of one store "
                      "(or one was edited). Merge the reports of one run, and pass --project to "
                      "check each entry against the store.")
  entries = sorted(entries, key=lambda e: e.entry_id)
  order = {e.entry_id: i for i, e in enumerate(entries)}
  return dataclasses.replace(
      first,
      entries=tuple(entries),
      recorded=tuple(sorted(recorded, key=lambda x: x.case_id)),
      targets=coverage.target_coverage(entries, first.targets.required),
      skips=_skips(reports, {str(k): i for k, i in order.items()}),
      drift=tuple(sorted((d for r in reports for d in r.drift), key=lambda d: order[d.entry_id])),
      session_failures=_union(r.session_failures for r in reports),
      session_warnings=_union(r.session_warnings for r in reports),
      summary=dataclasses.replace(
          _summary(entries, recorded, first.summary.present),
          from_cache=_cached([r.summary.from_cache for r in reports]),
          **{name: _counted([getattr(r.summary, name) for r in reports])
             for name in ("reader_runs", "exports_today")}),
      release_windows=_release_windows(reports),
      shard=None,
      lowering_only_targets=_lowering_only(first.lowering_only_targets, entries),
      replay_hosts=_replay_hosts(reports),
      source=" + ".join(r.source for r in reports))


def check_complete(reports: Sequence[RunReport]) -> int:
  """The shard count N of ``reports`` when they are exactly shards 1/N..N/N of one run, each
  once; else a :class:`ReportError` naming what is missing, repeated or not a shard."""
  if not reports:
    raise ReportError("nothing to merge: pass the report of every shard of the run.")
  unsharded = [r.source for r in reports if r.shard is None]
  if unsharded:
    raise ReportError(f"{', '.join(unsharded)} did not run with --compat-shard=I/N, so it is not "
                      "a shard; merge the reports of one sharded run.")
  shards: list[ShardRef] = [r.shard for r in reports if r.shard is not None]
  counts = sorted({s.count for s in shards})
  if len(counts) != 1:
    raise ReportError(f"the reports come from splits into {counts} shards; merge the shards of "
                      "one run (one N).")
  count = counts[0]
  given = sorted(s.index for s in shards)
  missing = sorted(set(range(1, count + 1)) - set(given))
  repeated = sorted({i for i in given if given.count(i) > 1})
  if missing or repeated:
    raise ReportError(f"shards of {count}: missing {[f'{i}/{count}' for i in missing]}, "
                      f"repeated {[f'{i}/{count}' for i in repeated]}; pass each shard's report "
                      "once.")
  return count


def _disjoint(reports: Sequence[RunReport], items, key, what: str) -> list[Any]:
  seen: dict[str, str] = {}
  out = []
  for r in reports:
    for x in items(r):
      k = key(x)
      if k in seen:
        raise ReportError(f"{what} {k} is in both {seen[k]} and {r.source}: shards must be "
                          "disjoint parts of the run. Pass each shard's report once.")
      seen[k] = r.source
      out.append(x)
  return out


def _release_windows(reports: Sequence[RunReport]) -> Mapping[str, Window] | None:
  """The window positions of every shard's producer releases (None when no shard kept any)."""
  if all(r.release_windows is None for r in reports):
    return None
  out: dict[str, tuple[Window, str]] = {}
  for r in reports:
    for producer, w in (r.release_windows or {}).items():
      kept, source = out.setdefault(producer, (w, r.source))
      if kept != w:
        raise ReportError(f"{source} and {r.source} place jax {producer} differently in the "
                          "compat window; merge only the shard reports of a single run.")
  return {p: w for p, (w, _) in sorted(out.items())}


def _replay_hosts(reports: Sequence[RunReport]) -> tuple[Mapping[str, Any], ...]:
  """The replay hosts of every shard, each once (shards may run on other machines)."""
  hosts: list[Mapping[str, Any]] = []
  for r in reports:
    hosts.extend(h for h in r.replay_hosts if h not in hosts)
  return tuple(hosts)


def _lowering_only(shared: Mapping[str, PlatformTargets], entries: Sequence[EntryResult]
                   ) -> dict[str, PlatformTargets]:
  """The other platforms' lowering-only coverage recomputed over all entries."""
  unreachable = {t: why for c in shared.values() for t, why in c.unreachable.items()}
  return coverage.lowering_only_coverage(
      entries, {p: c.required for p, c in shared.items()}, unreachable)


def _skips(reports: Sequence[RunReport], order: Mapping[str, int]) -> tuple[Skip, ...]:
  """The skip ledger: run-wide lines that come before the entries' lines, the entries' lines in
  entry order, then the run-wide lines that come after them (each run-wide line once)."""
  leading: list[Skip] = []
  trailing: list[Skip] = []
  per_entry: list[Skip] = []
  for r in reports:
    seen_entry = False
    for s in r.skips:
      if s.what in order:
        per_entry.append(s)
        seen_entry = True
      elif not seen_entry and s not in leading:
        leading.append(s)
      elif seen_entry and s not in trailing:
        trailing.append(s)
  # A line that is leading in a shard without entry lines may trail in another.
  leading = [s for s in leading if s not in trailing]
  per_entry.sort(key=lambda s: order[s.what])
  return tuple(leading + per_entry + trailing)


def _union(lists: Iterable[Iterable[str]]) -> tuple[str, ...]:
  out: list[str] = []
  for items in lists:
    out.extend(x for x in items if x not in out)
  return tuple(out)


def _cached(counts: Sequence[int | None]) -> int | None:
  """The shards' executables loaded from the compile cache, together (None: none kept one)."""
  kept = [n for n in counts if n is not None]
  return sum(kept) if kept else None


def _counted(counts: Sequence[int | None]) -> int | None:
  """A count of the shards' work, together; None unless every shard counted it."""
  return None if any(n is None for n in counts) else sum(counts)  # type: ignore[arg-type]


def _summary(entries: Sequence[EntryResult], recorded: Sequence[Recorded],
             present: int) -> Summary:
  return Summary(counts={s: sum(e.status == s for e in entries) for s in Status},
                 present=present, replayed=len(entries),
                 actions={a: sum(r.action == a for r in recorded) for a in RECORD_ACTIONS},
                 upgraded=sum(FindingKind.UPGRADED in e.kinds for e in entries),
                 other_host=other_host_passes(entries))
