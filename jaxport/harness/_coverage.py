"""Session-level judgements: target coverage, the minimum-cases tripwire, missing cases.

All of them count only entries replayed in this run; an entry that was skipped
or deselected covers nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jaxport.harness._verdicts import Outcome
from jaxport.custom_calls import _registry
from jaxport.harness._project import Project


def required_targets(platform: str, project: Project) -> list[str]:
  """Targets that need a replayed entry on ``platform``: those the project declares stable,
  and jaxport's whole table for a project that requires it (jaxport's own repository)."""
  required = set(project.targets.stable(platform))
  if project.require_builtin_targets:
    required |= _registry.stable_targets(platform)
  return sorted(required)


def target_coverage(outcomes: Iterable[Outcome], required: Iterable[str]) -> dict[str, Any]:
  """Required and reachable targets against those covered by replayed entries.

  Reachable targets are those today's lowering of a registered case emits; a
  reachable target without a replayed entry means a case changed its lowering
  and nobody recorded the new one yet.
  """
  outcomes = [o for o in outcomes if o.replayed]
  covered = sorted({t for o in outcomes for t in o.targets})
  reachable = sorted({t for o in outcomes for t in (o.current_targets or ())})
  required = sorted(set(required))
  return {
      "required": required,
      "reachable": reachable,
      "covered": covered,
      "missing_required": sorted(set(required) - set(covered)),
      "missing_reachable": sorted(set(reachable) - set(covered)),
  }


def tripwire(present: Iterable[str], outcomes: Iterable[Outcome]) -> list[str]:
  """Entries present in the store for the platform that this run did not replay."""
  replayed = {o.entry_id for o in outcomes if o.replayed}
  return sorted(set(present) - replayed)


def cases_without_entries(case_ids: Iterable[str], present: Iterable[str]) -> list[str]:
  """Registered cases with no golden entry at all: their targets are unguarded."""
  have = {entry_id.split("/")[2] for entry_id in present}
  return sorted(set(case_ids) - have)


def orphaned_entries(case_ids: Iterable[str], present: Iterable[str]) -> list[str]:
  """Entries in the store whose case no case module registers any more."""
  registered = set(case_ids)
  return sorted(e for e in present if e.split("/")[2] not in registered)


def orphan_message(orphans: list[str]) -> str:
  """The session warning (a failure with --compat-strict) for entries of removed cases."""
  cases = sorted({e.split("/")[2] for e in orphans})
  return (f"{len(orphans)} entries belong to cases no case module registers any more "
          f"({abbreviate(cases)}): their replay compares no current lowering. Put the cases "
          "back in cases(), or remove the entries (jaxport prune) once nothing needs them")


def other_platform_coverage(outcomes: Iterable[Outcome], platforms: Iterable[str],
                            unreachable: Mapping[str, str], project: Project) -> dict[str, Any]:
  """Per platform of ``platforms`` (those the host lowers for without running): its stable
  targets against replayed lowering-only entries.

  A target is covered when a replayed lowering-only entry exported for that
  platform calls it; ``unreachable`` names the targets the host cannot lower,
  with the reason, so they are listed rather than missing.
  """
  outcomes = [o for o in outcomes if o.replayed and o.lowering_only]
  out = {}
  for platform in sorted(set(platforms)):
    required = required_targets(platform, project)
    covered = sorted({t for o in outcomes if platform in (o.platforms or ())
                      for t in o.targets} & set(required))
    out[platform] = {
        "required": required,
        "covered": covered,
        "unreachable": {t: why for t, why in sorted(unreachable.items()) if t in required},
        "missing": sorted(set(required) - set(covered) - set(unreachable)),
    }
  return out


def unreachable_skips(platform: str, other_targets: Mapping[str, Any]) -> list[dict[str, str]]:
  """Skip-ledger lines for the other platforms' targets a ``platform`` host cannot lower."""
  return [{"what": f"{other} target {t}", "why": f"not reachable from a {platform} host: {why}"}
          for other, cov in other_targets.items() for t, why in cov["unreachable"].items()]


def device_store_skips(platform: str, present: Iterable[str]) -> list[dict[str, str]]:
  """Skip-ledger lines for the accelerators' entries a ``platform`` run checks without running
  them (a CPU run): their coverage of the platform's stable targets is judged by a run on it."""
  counts: dict[str, int] = {}
  for entry_id in present:
    other = entry_id.split("/", 1)[0]
    if other != platform:
      counts[other] = counts.get(other, 0) + 1
  return [{"what": f"coverage of the {other} entries",
           "why": f"judged by a run on a {other} machine (--compat-platform={other}) against "
                  f"the stable {other} targets; this {platform} run checked its {n} entries "
                  "without running them"}
          for other, n in sorted(counts.items())]


# Turns shard reports into the report of the whole run and runs the checks above on it.
MERGE_COMMAND = "python -m harness.tools.shards merge SHARD.json... -o RUN.json"


def session_failures(platform: str, targets: dict[str, Any], present: list[str],
                     outcomes: list[Outcome], case_ids: list[str],
                     other_targets: Mapping[str, Any] | None = None,
                     project: Project | None = None) -> list[str]:
  """The session-level failures of a whole run: coverage, tripwire, missing cases.

  ``targets`` is ``target_coverage`` of the run's outcomes and
  ``other_targets`` its ``other_platform_coverage``; a sharded run calls this
  once, on the report merged from its shards. ``project``'s own declared
  targets, when missing, get a failure of their own naming its targets file.
  """
  failures = []
  record = f"pytest --compat-platform={platform} --compat-record"
  declared = set(project.targets.stable(platform)) if project is not None else set()
  missing_declared = [t for t in targets["missing_required"] if t in declared]
  missing_builtin = [t for t in targets["missing_required"] if t not in declared]
  if missing_declared:
    where = project.targets_file or "the project's stable-target declarations"
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
  if targets["missing_reachable"]:
    failures.append(
        f"coverage: today's lowering of registered cases emits {targets['missing_reachable']}, "
        f"which no replayed entry covers; record new entries: {record}")
  for other, cov in (other_targets or {}).items():
    if cov["missing"]:
      failures.append(
          f"coverage: {len(cov['missing'])} stable {other} targets have no replayed "
          f"lowering-only entry: {cov['missing']}. Add a lowering-only case (or list the "
          f"target in its case module's UNREACHABLE with the reason) and record it: {record}")
  unreplayed = tripwire(present, outcomes)
  if unreplayed:
    failures.append(
        f"tripwire: {len(outcomes)} entries replayed but {len(present)} are present for "
        f"{platform}; not replayed: {abbreviate(unreplayed)}")
  missing_cases = cases_without_entries(case_ids, present)
  if missing_cases:
    failures.append(
        f"{len(missing_cases)} registered cases have no golden entry: {missing_cases}; "
        f"record them: {record}")
  return failures


def abbreviate(ids: list[str], limit: int = 10) -> str:
  """At most ``limit`` ids, then how many more, so a summary line stays readable."""
  more = len(ids) - limit
  return ", ".join(ids[:limit]) + (f" and {more} more" if more > 0 else "")
