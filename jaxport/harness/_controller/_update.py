"""``--compat-update``: which cases changed, and what changed, for the snapshot workflow.

The run replays as usual. A case *changed* when the replay of its newest entry
(the store's order: record date, revision, producer release) finds that
today's function is called, lowers or computes something else (``signature_change``,
``lowering_drift``, ``numerics_change``), or is exported for more platforms
(``platforms_added``) or donates fewer inputs (``donation_removed``), or that its checker
raised (``checker_error``) while the case's checker today accepts the entry's own recorded
outputs (the checker was fixed); a registered case without any entry is new. At the end
of the run the session records one new entry of each changed or new case
(the worker's record op, into staging, then the store's atomic append-only
write; a second entry of the same day gets the next revision) and reports what
changed: targets added and removed, signature differences, the numerics
verdict. The old entry stays until ``jaxport prune --superseded`` removes it;
being older than the case's newest entry, its differences from today's
function no longer fail the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from jaxport.golden._entry_id import EntryId
from jaxport._vocabulary import RecordAction, Subject
from jaxport.golden._manifest import Manifest
from jaxport.golden._entry import entry_sort_key
from jaxport._vocabulary import UPDATE_KINDS
from jaxport.report._entries import EntryResult
from jaxport.report import FindingKind, PlatformTargets, Skip, Targets, Updated

# The flag that records a new entry for each changed case.
UPDATE_FLAG = "--compat-update"


@dataclasses.dataclass(frozen=True)
class CaseChange:
  """What the replay found changed in one case since ``since`` (None: the case had no entry)."""

  case_id: str
  since: EntryId | None
  targets_added: tuple[str, ...] = ()
  targets_removed: tuple[str, ...] = ()
  signature_changes: tuple[str, ...] = ()
  numerics: tuple[str, ...] = ()

  @classmethod
  def from_outcome(cls, outcome: EntryResult) -> CaseChange:
    """The change an entry's replay outcome shows against today's lowering of its case."""
    recorded = set(outcome.targets)
    today = set(outcome.current_targets or ())
    return cls(case_id=outcome.case_id, since=outcome.entry_id,
               targets_added=tuple(sorted(today - recorded)),
               targets_removed=tuple(sorted(recorded - today)),
               signature_changes=(*_findings(outcome, FindingKind.SIGNATURE_CHANGE),
                                  *_findings(outcome, FindingKind.PLATFORMS_ADDED),
                                  *_findings(outcome, FindingKind.DONATION_REMOVED),
                                  *_findings(outcome, FindingKind.LOWERING_DRIFT)),
               numerics=(*_findings(outcome, FindingKind.NUMERICS_CHANGE),
                         *(f"the entry's {error}; the case's checker today accepts its "
                           "recorded outputs"
                           for error in (_findings(outcome, FindingKind.CHECKER_ERROR)
                                         if outcome.checker_fixed else ()))))

  def summary(self) -> list[str]:
    """Lines saying what changed, for the terminal and for messages."""
    if self.since is None:
      return ["a new case: it had no entry"]
    out = []
    if self.targets_added or self.targets_removed:
      out.append(f"targets added {list(self.targets_added)}, removed {list(self.targets_removed)}")
    out += [f"signature: {s}" for s in self.signature_changes]
    out += [f"numerics: {s}" for s in self.numerics]
    return out or ["today's function differs from the entry"]


@dataclasses.dataclass(frozen=True)
class Update:
  """The update of one case: its change, what was done, and the new entry."""

  change: CaseChange
  action: RecordAction  # written, unchanged or error (a session failure says why)
  entry_id: EntryId | None = None
  message: str = ""
  # The custom-call targets of the case's entry now in the store (not reported: the
  # change says what differs).
  targets: tuple[str, ...] = ()

  def report_item(self) -> Updated:
    """The update as the report's ``updated`` section lists it."""
    c = self.change
    return Updated(case_id=c.case_id, since=c.since, entry_id=self.entry_id,
                   action=str(self.action), message=self.message,
                   targets_added=c.targets_added, targets_removed=c.targets_removed,
                   signature_changes=c.signature_changes, numerics=c.numerics)


def targets_of(manifest: Manifest) -> tuple[str, ...]:
  """The custom-call targets an entry's manifest records, sorted."""
  return tuple(sorted({s.target for s in manifest.custom_call_targets}))


def settled(targets: Targets, other_targets: Mapping[str, PlatformTargets], case_ids: list[str],
            updates: Iterable[Update]) -> tuple[Targets, dict[str, PlatformTargets], list[str],
                                                list[Skip]]:
  """The run's coverage and registered cases as the session checks them after an update: the
  targets and cases of entries recorded in this run are no longer missing (their entries are
  replayed from the next run, which the returned skip-ledger lines say)."""
  done = [u for u in updates if u.action is not RecordAction.ERROR]
  recorded = {t for u in done for t in u.targets}
  def left(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in names if t not in recorded)

  targets = dataclasses.replace(targets, missing_required=left(targets.missing_required),
                                missing_reachable=left(targets.missing_reachable))
  other = {p: dataclasses.replace(cov, missing=left(cov.missing))
           for p, cov in other_targets.items()}
  updated = {u.change.case_id for u in done}
  skips = [Skip(f"replay of {u.entry_id}",
                f"recorded by this run ({UPDATE_FLAG}); it is replayed from the next run")
           for u in done if u.action is RecordAction.WRITTEN]
  return targets, other, [c for c in case_ids if c not in updated], skips


def _findings(outcome: EntryResult, kind: FindingKind) -> tuple[str, ...]:
  """The differences an outcome's findings of ``kind`` name (their details; a message without
  one, whole)."""
  return tuple(f.detail if f.detail is not None else f.message for f in outcome.of_kind(kind))


def newest_entries(entry_ids: Iterable[EntryId]) -> dict[str, EntryId]:
  """The newest entry id of each case (by case id), in the store's order."""
  out: dict[str, EntryId] = {}
  for entry_id in sorted(entry_ids, key=entry_sort_key):
    out[entry_id.case_id] = entry_id
  return out


def changed_cases(outcomes: Mapping[EntryId, EntryResult], present: Iterable[EntryId],
                  case_ids: Iterable[str], include_new: bool) -> list[CaseChange]:
  """The registered cases to record again: those whose newest entry's replay shows a change,
  and, with ``include_new``, those without any entry; sorted by case id."""
  newest = newest_entries(present)
  out = []
  for case_id in sorted(set(case_ids)):
    entry_id = newest.get(case_id)
    if entry_id is None:
      if include_new:
        out.append(CaseChange(case_id, None))
      continue
    outcome = outcomes.get(entry_id)
    if outcome is not None and (set(outcome.kinds) & UPDATE_KINDS or outcome.checker_fixed):
      out.append(CaseChange.from_outcome(outcome))
  return out


def change_hint(outcome: EntryResult, updating: bool, newest: bool) -> str:
  """A line for a replay message whose entry shows a changed case: what it means and what to
  run if the change is intended (``newest``: the entry is its case's newest)."""
  case_id = outcome.case_id
  if any(f.kind is FindingKind.COMPATIBILITY_BREAK and f.subject is Subject.READER
         for f in outcome.findings):
    # The shipped artifact itself fails: recording a new entry would not make it run.
    return ("\nthe recorded artifact no longer reads, runs or computes its results with the jax "
            "installed here: artifacts already shipped break for consumers on this jax, and "
            f"recording a new entry of case {case_id} ({UPDATE_FLAG}) would not change that. "
            "Find what broke (the message above names the reader and the stage), then pin the "
            "jax your consumers run or ship new artifacts; a break the project accepts goes in "
            "its expectations table (jaxport_expectations) as an expected failure")
  if not set(outcome.kinds) & UPDATE_KINDS:
    return ""
  if not newest:
    return (f"\ncase {case_id} has a newer entry; this older one differs from today's function "
            "and stays, judged by its readers, until 'jaxport prune --superseded' removes it")
  if updating:
    return f"\ncase {case_id} changed: a new entry of it is recorded at the end of the run"
  return (f"\ncase {case_id} changed since this entry was recorded. If the change is intended, "
          f"record a new entry of it with pytest {UPDATE_FLAG} (the old entry stays until "
          "'jaxport prune --superseded' removes it); otherwise fix the function.")


def text_lines(updated: Iterable[Updated]) -> list[str]:
  """The terminal summary of an update run's ``updated`` section."""
  updated = list(updated)
  if not updated:
    return ["updated no case: no newest entry differs from today's function"]
  lines = [f"updated {len(updated)} case(s):"]
  for u in updated:
    change = CaseChange(u.case_id, u.since, u.targets_added, u.targets_removed,
                        u.signature_changes, u.numerics)
    lines.append(f"  {u.action:9s} {u.entry_id or u.case_id}"
                 + (f" (since {u.since})" if u.since else " (new case)"))
    lines += [f"      {line.splitlines()[0]}" for line in change.summary()]
    if u.message:
      lines.append(f"      {u.message.splitlines()[0]}")
  return lines
