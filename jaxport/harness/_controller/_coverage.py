"""Session-level checks of a whole run against its project: coverage, tripwire, missing cases.

The computations live in ``jaxport.report._coverage``; this module supplies what only the
project knows (its required targets, its registered cases) and runs the checks in one call,
:func:`session_checks`, that both the harness session and ``jaxport report merge --project``
make, so a sharded run is judged exactly as an unsharded one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from jaxport.custom_calls import _registry
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import is_imported_artifact
from jaxport.golden._store import GoldenStore
from jaxport.harness._project import Project
from jaxport.report import _coverage as coverage
from jaxport.report._coverage import Covering
from jaxport.report._sections import PlatformTargets, Skip, Targets

# The skip-ledger subject of the checks a run defers (a shard, a narrowed selection).
CHECKS = "coverage, tripwire and missing-case checks"
# How a sharded run's checks are run: on the shards' reports merged against the project.
MERGE_HINT = "jaxport report merge --project DIR SHARD.json... -o RUN.json"


def shard_skip(shard: object) -> Skip:
  """The skip-ledger line of a shard's run (``shard`` prints as ``I/N``): it defers the checks
  to the merge of all shards' reports, which removes exactly this line."""
  return Skip(CHECKS, f"shard {shard} replays part of the store; they run on the report "
                      f"merged from all shards ({MERGE_HINT})")


# The skip-ledger subject of the checks that export today's function, which an imported
# artifact has none of.
TODAYS_EXPORT_CHECKS = "drift and coverage by today's lowering"


def imported_artifacts(store: GoldenStore, present: Iterable[EntryId]) -> tuple[EntryId, ...]:
  """The entries of ``present`` that ``jaxport import-artifacts`` brought in: shipped blobs
  with no case by design (an entry whose manifest does not read is not one; its replay says
  why it fails)."""
  found = []
  for entry_id in present:
    try:
      if is_imported_artifact(store.entry(entry_id).manifest):
        found.append(entry_id)
    except GoldenDataError:
      continue
  return tuple(found)


def imported_skip(imported: Sequence[EntryId]) -> Skip:
  """The one skip-ledger line of a run's imported artifacts."""
  one = len(imported) == 1
  return Skip(TODAYS_EXPORT_CHECKS,
              f"{len(imported)} imported artifact{'' if one else 's'} (jaxport "
              f"import-artifacts) {'has' if one else 'have'} no case function to export "
              f"today, so these checks do not apply to {'it' if one else 'them'}; "
              f"{'it replays its' if one else 'they replay their'} shipped bytes against "
              f"{'its' if one else 'their'} inputs and outputs")


def required_targets(platform: str, project: Project) -> list[str]:
  """Targets that need a replayed entry on ``platform``: those the project declares stable,
  and jaxport's whole table for a project that requires it (jaxport's own repository)."""
  required = set(project.targets.stable(platform))
  if project.require_builtin_targets:
    required |= _registry.stable_targets(platform)
  return sorted(required)


def target_coverage(entries: Iterable[Covering], platform: str, project: Project) -> Targets:
  """The run's coverage of ``platform``'s required targets."""
  return coverage.target_coverage(entries, required_targets(platform, project))


def lowering_only_coverage(entries: Iterable[Covering], platforms: Iterable[str],
                           unreachable: Mapping[str, str], project: Project
                           ) -> dict[str, PlatformTargets]:
  """The run's coverage of the stable targets of ``platforms`` (those the host lowers for
  without running) by lowering-only entries."""
  return coverage.lowering_only_coverage(
      entries, {p: required_targets(p, project) for p in platforms}, unreachable)


@dataclasses.dataclass(frozen=True)
class Checks:
  """What the session-level checks found: failures, warnings and skip-ledger lines."""
  failures: tuple[str, ...]
  warnings: tuple[str, ...]
  skips: tuple[Skip, ...]


def session_checks(platform: str, project: Project, *, targets: Targets,
                   other: Mapping[str, PlatformTargets], entries: Sequence[Covering],
                   present: Sequence[str], case_ids: Sequence[str],
                   checked_case_ids: Sequence[str], strict: bool,
                   imported: Sequence[EntryId] = ()) -> Checks:
  """The checks of a whole run: coverage, tripwire, missing cases (failures), orphaned entries
  (a warning, a failure with ``strict``), and the ledger lines for what a ``platform`` host
  leaves to other machines.

  ``present``: the store's entries the run checks; ``case_ids``: the cases registered for
  ``platform``; ``checked_case_ids``: those of every platform whose entries the run checks;
  ``imported``: the entries of ``present`` that are imported artifacts, which have no case by
  design, so they are never orphans, and the checks of today's export are said once not to
  apply to them.
  """
  failures = coverage.session_failures(
      platform, targets, list(present), list(entries), list(case_ids), other,
      declared=project.targets.stable(platform),
      targets_file=None if project.targets_file is None else str(project.targets_file))
  warns: list[str] = []
  shipped = set(imported)
  orphans = coverage.orphaned_entries(checked_case_ids,
                                      [e for e in present if e not in shipped])
  if orphans:
    (failures if strict else warns).append(coverage.orphan_message(orphans))
  skips = (*coverage.unreachable_skips(platform, other),
           *coverage.device_store_skips(platform, present),
           *([imported_skip(imported)] if imported else []))
  return Checks(tuple(failures), tuple(warns), skips)
