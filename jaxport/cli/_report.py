"""``jaxport report``: merge the reports of a run's shards; render a run (and its history) as pages.

``merge SHARD.json... -o RUN.json`` writes the report of the whole run; with
``--project DIR`` it also runs the session-level checks the shards deferred
(coverage, tripwire, missing and orphaned cases) against the project's store and
cases, with the code an unsharded run uses, checks each entry against the store (held, with
the blob the shard replayed), and fails as that run would; without it the merge checks
none of that, says so in its output and report, and still fails a run with a failing entry;
``render RUN.json [EARLIER.json...] --html OUT.html --markdown OUT.md`` writes
the page and the job summary (Markdown to stdout when no output is named).
Its arguments are defined with the other commands' (``_arguments``); ``_main`` dispatches to
:func:`run`.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jaxport import report
from jaxport._vocabulary import FindingKind
from jaxport._progress import track
from jaxport.cli._arguments import STDOUT
from jaxport.cli._harness_run import read_project
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller import _coverage as coverage
from jaxport.harness import _devices
from jaxport.golden._entry import sha256_hex
from jaxport.errors import JaxportError, ReportError
from jaxport.report._files import write_text_atomically
from jaxport.report._merge import check_complete

logger = logging.getLogger(__name__)

# What a merge without --project says of itself, in its output and in the merged report: it
# joined what the shards say, and checked none of it against a store.
NOT_CHECKED = ("merged without --project: the coverage, the tripwire, the missing cases and the "
               "entries themselves were not checked against a store; the merged report holds "
               "what the shards say. Merge with --project DIR to check them.")


def _load_all(paths: list[str], verb: str) -> list[report.RunReport]:
  return [report.load_report(p) for p in track(paths, verb)]


def _merge(args: argparse.Namespace) -> int:
  out = Path(args.output)
  if any(out.resolve() == Path(s).resolve() for s in args.shards):
    raise ReportError(f"-o {out} is one of the shard reports; write the merged report to a new "
                      "file so no shard is overwritten.")
  shards = _load_all(args.shards, "reading shard")
  if args.project is None:
    merged = report.merge_reports(shards)
    merged = dataclasses.replace(
        merged, session_warnings=(*merged.session_warnings, NOT_CHECKED))
    logger.warning("%s", NOT_CHECKED)
  else:
    merged = merge_and_check(shards, read_project(args.project, "report merge --project"),
                             None if args.store is None else Path(args.store))
  report.write_report(merged, out)
  s = merged.summary
  logger.info("merged %d shard reports into %s: %d entries replayed of %d present, %d failed, "
              "%d session failures", len(args.shards), out, s.replayed, s.present,
              s.counts[report.Status.FAIL], len(merged.session_failures))
  for failure in merged.session_failures:
    logger.info("SESSION FAIL %s", failure)
  return 0 if merged.ok else 1


def merge_and_check(shards: Sequence[report.RunReport], project: Any,
                    store: Path | None = None) -> report.RunReport:
  """The report of the whole run from its shards' reports, with the session-level checks
  the shards deferred run on it against ``project`` (a ``jaxport.harness.Project``) and its
  store (or ``store``), as the harness session runs them at the end of an unsharded run."""

  check_complete(shards)
  merged = report.merge_reports(shards)
  platform = merged.platform
  checked = _devices.checked_platforms(platform)
  store = project.store if store is None else store
  entries, _ = GoldenStore(store).listing(
      platform=checked[0] if len(checked) == 1 else None)
  present = [e.entry_id for e in entries if e.entry_id.platform in checked]
  if len(present) != merged.summary.present:
    raise ReportError(f"the shards saw {merged.summary.present} {platform} entries but the "
                      f"store {store} holds {len(present)}; merge against the "
                      "store the shards replayed (--store).")
  against_store = _entries_against_store(merged.entries, GoldenStore(store), set(present))
  # local: the project's case modules load jax, which a merge without --project never needs
  from jaxport.cli._relower import FROM_PROJECT, Relowerer
  cases = Relowerer(project.case_modules, project.paths, FROM_PROJECT)
  cases.load()  # the project's code: a module that fails to import is one error naming it
  registry = cases.registry
  registered = registry.cases_for(platform)
  lowered_for = {p for c in registered if c.lowering_only for p in c.export_platforms()}
  targets = coverage.target_coverage(merged.entries, platform, project)
  other = coverage.lowering_only_coverage(merged.entries, lowered_for, registry.unreachable(),
                                          project)
  checks = coverage.session_checks(
      platform, project, targets=targets, other=other, entries=merged.entries, present=present,
      case_ids=[c.case_id for c in registered],
      checked_case_ids=[c.case_id for p in checked for c in registry.cases_for(p)],
      strict=merged.strict, imported=coverage.imported_artifacts(GoldenStore(store), present))
  deferred = {coverage.shard_skip(r.shard) for r in shards}
  return dataclasses.replace(
      merged, targets=targets, lowering_only_targets=other,
      skips=(*(x for x in merged.skips if x not in deferred), *checks.skips),
      session_failures=(*merged.session_failures, *against_store, *checks.failures),
      session_warnings=(*sorted(merged.session_warnings), *checks.warnings))


def _entries_against_store(entries: Sequence[report.EntryResult], store: Any,
                           present: set[str]) -> list[str]:
  """A session failure for each entry of the merged run that the store does not hold, or whose
  blob in the store is not the one the shard replayed (where its report names that blob)."""
  failures = []
  for e in entries:
    if e.entry_id not in present:
      failures.append(f"entry {e.entry_id} is in the shards' reports but not in the store "
                      f"{store.root}: the reports are not of this store (or were edited)")
      continue
    if e.blob_sha256 is None:
      if FindingKind.GOLDEN_DATA_ERROR not in e.kinds:
        failures.append(f"entry {e.entry_id}: the shard's report names no blob_sha256, so the "
                        "blob it replayed cannot be checked against the store; merge reports "
                        "written by this jaxport (an older one's report lacks the field)")
      continue
    try:
      held = sha256_hex(store.entry(e.entry_id).blob())
    except (ReportError, ValueError, OSError, JaxportError) as err:
      failures.append(f"entry {e.entry_id}: its blob in the store does not read: {err}")
      continue
    if held != e.blob_sha256:
      failures.append(f"entry {e.entry_id}: the shard replayed the blob {e.blob_sha256}, the "
                      f"store holds {held}: the reports are not of this store (or were edited)")
  return failures


def _render(args: argparse.Namespace) -> int:
  runs = _load_all([args.run, *args.earlier], "reading report")
  current, earlier = runs[0], runs[1:]
  served = [report.load_served(path) for path in args.served_by]
  outputs = []
  if args.html:
    outputs.append((args.html, report.render_html))
  if args.markdown or not args.html:
    outputs.append((args.markdown or STDOUT, report.render_markdown))
  for path, render in track(outputs, "rendering", lambda o: o[0]):
    text = render(current, earlier, served)
    if path == STDOUT:
      sys.stdout.write(text)
    else:
      write_text_atomically(path, text)
  return 0


def run(args: argparse.Namespace, extra: list[str]) -> int:
  """Run ``jaxport report ACTION``; 0 when done (a failing run still renders)."""
  return {"merge": _merge, "render": _render}[args.report_action](args)
