"""Run-level coverage, computed once: target coverage, lowering-only coverage, the tripwire,
missing and orphaned cases, and the session failures they lead to.

The harness session, the shard merge and ``jaxport report merge --project`` all call these
functions, on the run's outcomes or on a report's entries alike (both have the attributes of
:class:`Covering`), so a merged run is judged by the same code as an unsharded one. Only
entries replayed in the run count; an entry skipped or deselected covers nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.report._sections import PlatformTargets, Skip, Targets


class Covering(Protocol):
  """What coverage reads of one replayed entry (an outcome or a report entry)."""
  entry_id: EntryId
  targets: tuple[str, ...]
  current_targets: tuple[str, ...] | None
  lowering_only: bool | None
  platforms: tuple[str, ...] | None


def target_coverage(entries: Iterable[Covering], required: Iterable[str]) -> Targets:
  """Required and reachable targets against those covered by replayed entries.

  Reachable targets are those today's lowering of a registered case emits; a reachable target
  without a replayed entry means a case changed its lowering and nobody recorded it yet.
  """
  entries = list(entries)
  covered = sorted({t for e in entries for t in e.targets})
  reachable = sorted({t for e in entries for t in (e.current_targets or ())})
  required = sorted(set(required))
  return Targets(required=tuple(required), reachable=tuple(reachable), covered=tuple(covered),
                 missing_required=tuple(sorted(set(required) - set(covered))),
                 missing_reachable=tuple(sorted(set(reachable) - set(covered))))


def lowering_only_coverage(entries: Iterable[Covering], required: Mapping[str, Iterable[str]],
                           unreachable: Mapping[str, str]) -> dict[str, PlatformTargets]:
  """Per platform of ``required`` (those the host lowers for without running): its stable
  targets against replayed lowering-only entries.

  A target is covered when a replayed lowering-only entry exported for that platform calls it;
  ``unreachable`` names the targets the host cannot lower, with the reason, so they are listed
  rather than missing.
  """
  entries = [e for e in entries if e.lowering_only]
  out = {}
  for platform in sorted(required):
    needed = sorted(set(required[platform]))
    covered = sorted({t for e in entries if platform in (e.platforms or ()) for t in e.targets}
                     & set(needed))
    away = {t: why for t, why in sorted(unreachable.items()) if t in needed}
    out[platform] = PlatformTargets(
        required=tuple(needed), covered=tuple(covered), unreachable=away,
        missing=tuple(sorted(set(needed) - set(covered) - set(away))))
  return out


def _ids(entry_ids: Iterable[EntryId], where: str) -> list[EntryId]:
  """``entry_ids`` as a list, each checked to be an :class:`EntryId`."""
  return [require_entry_id(e, where) for e in entry_ids]


def tripwire(present: Iterable[EntryId], entries: Iterable[Covering]) -> list[EntryId]:
  """Entries present in the store for the run's platforms that the run did not replay."""
  return sorted(set(_ids(present, "tripwire")) - {e.entry_id for e in entries})


def cases_without_entries(case_ids: Iterable[str], present: Iterable[EntryId]) -> list[str]:
  """Registered cases with no golden entry at all: their targets are unguarded."""
  return sorted(set(case_ids) - {e.case_id for e in _ids(present, "cases_without_entries")})


def orphaned_entries(case_ids: Iterable[str], present: Iterable[EntryId]) -> list[EntryId]:
  """Entries in the store whose case no case module registers any more."""
  registered = set(case_ids)
  return sorted(e for e in _ids(present, "orphaned_entries") if e.case_id not in registered)


def orphan_message(orphans: list[EntryId]) -> str:
  """The session warning (a failure with --compat-strict) for entries of removed cases."""
  cases = sorted({e.case_id for e in _ids(orphans, "orphan_message")})
  return (f"{len(orphans)} entries belong to cases no case module registers any more "
          f"({abbreviate(cases)}): their replay compares no current lowering. Put the cases "
          "back in cases(), or remove the entries (jaxport prune) once nothing needs them")


def unreachable_skips(platform: str, other: Mapping[str, PlatformTargets]) -> list[Skip]:
  """Skip-ledger lines for the other platforms' targets a ``platform`` host cannot lower."""
  return [Skip(f"{p} target {t}", f"not reachable from a {platform} host: {why}")
          for p, cov in other.items() for t, why in cov.unreachable.items()]


def device_store_skips(platform: str, present: Iterable[EntryId]) -> list[Skip]:
  """Skip-ledger lines for the accelerators' entries a ``platform`` run checks without running
  them (a CPU run): their coverage of the platform's stable targets is judged by a run on it."""
  counts: dict[str, int] = {}
  for entry_id in _ids(present, "device_store_skips"):
    other = entry_id.platform
    if other != platform:
      counts[other] = counts.get(other, 0) + 1
  return [Skip(f"coverage of the {other} entries",
               f"judged by a run on a {other} machine (--compat-platform={other}) against "
               f"the stable {other} targets; this {platform} run checked its {n} entries "
               "without running them")
          for other, n in sorted(counts.items())]


def session_failures(platform: str, targets: Targets, present: list[EntryId],
                     entries: list[Covering], case_ids: list[str],
                     other: Mapping[str, PlatformTargets] | None = None, *,
                     declared: Iterable[str] = (), targets_file: str | None = None) -> list[str]:
  """The session-level failures of a whole run: coverage, tripwire, missing cases.

  ``targets`` is :func:`target_coverage` of the run's entries and ``other`` its
  :func:`lowering_only_coverage`. The project's ``declared`` stable targets, when missing, get a
  failure of their own naming ``targets_file``.
  """
  present = _ids(present, "session_failures")
  failures = []
  record = f"pytest --compat-platform={platform} --compat-record"
  declared = set(declared)
  missing_declared = [t for t in targets.missing_required if t in declared]
  missing_builtin = [t for t in targets.missing_required if t not in declared]
  if missing_declared:
    where = targets_file or "the project's stable-target declarations"
    failures.append(
        f"coverage: {len(missing_declared)} {platform} targets that the project declares "
        f"stable in {where} have no replayed entry: {missing_declared}. Add a case whose "
        f"function calls each to a case module and record it ({record}), or remove the "
        f"target from {where}")
  if missing_builtin:
    failures.append(
        f"coverage: {len(missing_builtin)} stable {platform} targets have no "
        f"replayed entry: {missing_builtin}. Add a case to a case module and "
        f"record it: {record}")
  if targets.missing_reachable:
    failures.append(
        f"coverage: today's lowering of registered cases emits {list(targets.missing_reachable)}, "
        f"which no replayed entry covers; record new entries: {record}")
  for p, cov in (other or {}).items():
    if cov.missing:
      failures.append(
          f"coverage: {len(cov.missing)} stable {p} targets have no replayed "
          f"lowering-only entry: {list(cov.missing)}. Add a lowering-only case (or list the "
          f"target in its case module's UNREACHABLE with the reason) and record it: {record}")
  unreplayed = tripwire(present, entries)
  if unreplayed:
    failures.append(
        f"tripwire: {len(entries)} entries replayed but {len(present)} are present for "
        f"{platform}; not replayed: {abbreviate(unreplayed)}")
  missing_cases = cases_without_entries(case_ids, present)
  if missing_cases:
    failures.append(
        f"{len(missing_cases)} registered cases have no golden entry: {missing_cases}; "
        f"record them: {record}")
  return failures


def abbreviate(ids: Sequence[object], limit: int = 10) -> str:
  """At most ``limit`` ids (entry ids or names), then how many more, so a summary line stays
  readable."""
  more = len(ids) - limit
  return ", ".join(map(str, ids[:limit])) + (f" and {more} more" if more > 0 else "")
