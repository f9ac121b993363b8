"""The run's report, built from what a session collected: outcomes, recordings, checks.

The builder takes one :class:`RunFacts` (the session fills it at the end of the
run, after any xdist merge, with each entry's :class:`EntryRun`) and returns the
typed :class:`RunReport`; it runs the end-of-run checks (coverage, missing cases,
the corpus tripwire) that only the whole run can make. It is deterministic: entries and records are sorted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller import _coverage as coverage
from jaxport.harness import _devices
from jaxport.harness._controller import _jax_corpus, _update
from jaxport.harness._controller._entry_run import EntryRun
from jaxport.harness._controller._settings import Options
from jaxport.harness._judge import _expectations as expected_status
from jaxport.harness._protocol import _readers
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import ProjectCases
from jaxport.report._entries import EntryResult
from jaxport._jaxcompat._version import distribution_version, installed_jax_version
from jaxport.report import (
    DRIFT_KINDS, DriftItem, FindingKind, Recorded, RunReport, ShardRef,
    Skip, Status, Summary, Window)
from jaxport.report import _coverage as run_coverage
from jaxport.report._model import other_host_passes
from jaxport.report._sections import RECORD_ACTIONS


@dataclasses.dataclass(frozen=True)
class RunFacts:
  """What one run collected, as the report builder takes it."""
  options: Options
  project: Project
  # entry -> its replay: the outcome, and what the replay did (summed into the summary).
  runs: Mapping[EntryId, EntryRun]
  # The entries the run checks, present in the store.
  present: Sequence[EntryId]
  failures: Sequence[str]
  # What the workers said about themselves.
  notices: Sequence[str]
  # What the run went on without (a private cache reached through a link, a measurements file
  # that does not read): warnings, failures under --compat-strict.
  warnings: Sequence[str]
  # The project's cases, or why its case modules could not be loaded.
  cases: ProjectCases | GoldenDataError
  listing_failed: bool
  corpus: _jax_corpus.CorpusImport | None
  recorded: Mapping[str, Recorded]
  updates: Sequence[_update.Update]
  # Whether executables were kept in a cross-run compile cache.
  cache_used: bool

  def worked(self, what: str) -> int:
    """The run's total of one of the things a replay did (``_entry_run.WORK``)."""
    return sum(getattr(run, what) for run in self.runs.values())


def build_run_report(facts: RunFacts) -> RunReport:
  """The report of the run, from collected outcomes only (deterministic, sorted)."""
  o, project = facts.options, facts.project
  failures = list(facts.failures)
  warns: list[str] = sorted(facts.notices)
  (failures if o.settings.strict else warns).extend(facts.warnings)
  outcomes: list[EntryResult] = [facts.runs[k].outcome for k in sorted(facts.runs)]
  present = list(facts.present)
  skips = [Skip(str(out.entry_id), why) for out in outcomes for why in out.skips]
  if isinstance(facts.cases, GoldenDataError):
    # Every item failed on it already; the report says it once and skips what needs cases.
    cases, unreachable = None, {}
    failures.append(f"the project's case modules cannot be loaded: {facts.cases}")
  else:
    cases, unreachable = facts.cases.cases_for(o.settings.platform), dict(facts.cases.unreachable)
  targets = coverage.target_coverage(outcomes, o.settings.platform, project)
  lowered_for = {p for c in cases or () if c.lowering_only for p in c.export_platforms}
  other = coverage.lowering_only_coverage(outcomes, lowered_for, unreachable, project)
  if cases is None:
    skips.append(Skip(coverage.CHECKS, "the project's case modules could not be loaded"))
  elif o.settings.record:
    skips.append(Skip("replay, coverage and tripwire", "record mode writes entries only"))
  elif o.partial:
    skips.append(Skip(coverage.CHECKS,
                      "the selection was narrowed (-k, -m, --deselect, node ids or files)"))
  elif o.settings.jax_corpus:
    skips.append(Skip("coverage and missing-case checks",
                      "the run replays jax's own corpus, not this repository's golden store"))
    unreplayed = run_coverage.tripwire(present, outcomes)
    if unreplayed:
      failures.append(f"tripwire: {len(outcomes)} corpus entries replayed but {len(present)} "
                      f"were imported; not replayed: {run_coverage.abbreviate(unreplayed)}")
  elif facts.listing_failed:
    skips.append(Skip(coverage.CHECKS,
                      "the golden store could not be listed, so no entry was replayed"))
  elif o.settings.shard is not None:
    skips.append(coverage.shard_skip(o.settings.shard))
  else:
    checked_targets, checked_other = targets, other
    case_ids = [c.case_id for c in cases]
    if o.settings.update:
      # The cases updated in this run have their new entries; those are replayed next run.
      checked_targets, checked_other, case_ids, recorded_now = _update.settled(
          targets, other, case_ids, facts.updates)
      skips += recorded_now
    checks = coverage.session_checks(
        o.settings.platform, project, targets=checked_targets, other=checked_other,
        entries=outcomes, present=present, case_ids=case_ids,
        checked_case_ids=[c.case_id for p in _devices.checked_platforms(o.settings.platform)
                          for c in facts.cases.cases_for(p)],
        strict=o.settings.strict,
        imported=coverage.imported_artifacts(GoldenStore(o.golden_root), present))
    failures += checks.failures
    warns += checks.warnings
    skips += checks.skips
  if facts.corpus is not None:
    skips.extend(Skip("jax corpus import", why) for why in facts.corpus.skipped)
    failures.extend(f"jax corpus import failed: {why}" for why in facts.corpus.failed)
  recorded = tuple(sorted(facts.recorded.values(), key=lambda r: r.case_id))
  summary = Summary(
      counts={s: sum(1 for x in outcomes if x.status is s) for s in Status},
      present=len(present), replayed=len(outcomes),
      actions={a: sum(1 for r in recorded if r.action == a) for a in RECORD_ACTIONS},
      upgraded=sum(1 for x in outcomes if x.has(FindingKind.UPGRADED)),
      other_host=other_host_passes(outcomes),
      from_cache=facts.worked("from_cache") if facts.cache_used else None,
      reader_runs=None if o.settings.record else facts.worked("reader_runs"),
      exports_today=None if o.settings.record else facts.worked("exports_today"))
  return RunReport(
      mode="record" if o.settings.record else "update" if o.settings.update else "replay",
      platform=o.settings.platform,
      today=o.settings.today,
      compat_window_days=o.settings.window_days,
      strict=o.settings.strict,
      readers=tuple(_readers.readers()),
      producer=_readers.PRIMARY,
      versions={"jax": installed_jax_version(),
                **{d: distribution_version(d) for d in ("jaxlib", "jaxport", "numpy")}},
      entries=tuple(outcomes),
      targets=targets,
      skips=tuple(skips),
      drift=tuple(DriftItem(x.entry_id, str(f.kind), f.message)
                  for x in outcomes for f in x.findings if f.kind in DRIFT_KINDS),
      recorded=recorded,
      session_failures=tuple(failures),
      session_warnings=tuple(warns),
      summary=summary,
      shard=None if o.settings.shard is None else ShardRef(o.settings.shard.index, o.settings.shard.count),
      lowering_only_targets=other,
      jax_corpus=None if facts.corpus is None else facts.corpus.report_section(),
      replay_hosts=tuple(_distinct(x.replay_host for x in outcomes
                                   if x.replay_host is not None)),
      updated=(None if not o.settings.update else tuple(
          u.report_item() for u in sorted(facts.updates, key=lambda u: u.change.case_id))),
      declared_targets={k: tuple(v) for k, v in project.targets.by_platform.items()},
      release_windows={p: Window.from_json(w, p) for p, w in expected_status.release_windows(
          (x.entry_id.producer for x in outcomes), o.settings.today).items()})


def _distinct(items: Any) -> list[Any]:
  """``items`` in order, each once (for unhashable JSON records)."""
  out: list[Any] = []
  for x in items:
    if x not in out:
      out.append(dict(x))
  return out
