"""Merging the reports of a sharded harness run, then running the session-level checks on the whole.

Each shard (``pytest harness/ --platform=cpu --compat-shard=I/N --compat-report=SHARD.json``)
replays its part of the store and defers the coverage, tripwire and
missing-case checks, which only the whole run can judge. This command merges
the shard reports with ``jaxport report merge``'s merge, checks that the shards
are exactly 1/N..N/N of one run, and runs those checks on the merged report
against the store and the case registry, with the session's own code; the
result equals the report an unsharded run writes::

  python -m harness.tools.shards merge SHARD.json... -o RUN.json [--golden-root DIR]

Exit status: 0, 1 when the merged run fails (a session-level check or an
entry), 2 on bad input (unreadable reports, missing or repeated shards).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from jaxport.harness import _coverage as coverage
from jaxport.harness import _devices
from jaxport.harness._shard import Shard, ShardError
from jaxport.harness._verdicts import Outcome
from harness.cases import cases_for
from jaxport.errors import JaxportError
from jaxport.golden._store import GoldenStore
from jaxport.report import RunReport, Skip, Status, Targets, load_report, merge_reports, write_report

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKS = "coverage, tripwire and missing-case checks"
_SHARD_WHY = "shard "


def _shard_of(report: RunReport) -> Shard | None:
  """The shard a report says it is (its deferred-checks line), or None for an unsharded run."""
  for skip in report.skips:
    if skip.what == CHECKS and skip.why.startswith(_SHARD_WHY):
      return Shard.parse(skip.why[len(_SHARD_WHY):].split(" ", 1)[0])
  return None


def _check_complete(reports: Sequence[RunReport]) -> None:
  shards = [_shard_of(r) for r in reports]
  if any(s is None for s in shards):
    unsharded = [r.source for r, s in zip(reports, shards) if s is None]
    raise ShardError(f"{', '.join(unsharded)} did not run with --compat-shard=I/N, so it is not "
                     "a shard; merge the reports of one sharded run.")
  counts = {s.count for s in shards}
  if len(counts) != 1:
    raise ShardError(f"the reports come from splits into {sorted(counts)} shards; merge the "
                     "shards of one run (one N).")
  count = counts.pop()
  given = sorted(s.index for s in shards)
  missing = sorted(set(range(1, count + 1)) - set(given))
  repeated = sorted({i for i in given if given.count(i) > 1})
  if missing or repeated:
    raise ShardError(f"shards of {count}: missing {[f'{i}/{count}' for i in missing]}, repeated "
                     f"{[f'{i}/{count}' for i in repeated]}; pass each shard's report once.")


def merge_and_check(reports: Sequence[RunReport], golden_root: Path) -> RunReport:
  """The report of the whole run: merged, deferred checks run on it."""
  _check_complete(reports)
  merged = merge_reports(reports)
  platform = merged.platform
  checked = _devices.checked_platforms(platform)
  present = [e.entry_id for e in GoldenStore(golden_root).entries(
      platform=checked[0] if len(checked) == 1 else None) if e.entry_id.split("/")[0] in checked]
  if len(present) != merged.summary.present:
    raise ShardError(f"the shards saw {merged.summary.present} {platform} entries but "
                     f"{golden_root} holds {len(present)}; merge against the store the shards "
                     "replayed (--golden-root).")
  outcomes = [Outcome.from_report_entry(e) for e in merged.entries]
  targets = coverage.target_coverage(outcomes, merged.targets.required)
  other_targets = merged.extra.get("lowering_only_targets") or {}
  failures = coverage.session_failures(platform, targets, present, outcomes,
                                       [c.case_id for c in cases_for(platform)],
                                       other_targets)
  skips = (*(s for s in merged.skips if not (s.what == CHECKS and s.why.startswith(_SHARD_WHY))),
           *(Skip(**s) for s in coverage.unreachable_skips(platform, other_targets)),
           *(Skip(**s) for s in coverage.device_store_skips(platform, present)))
  return dataclasses.replace(merged, skips=skips, targets=Targets.from_json(targets, "targets"),
                             session_failures=(*merged.session_failures, *failures))


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(prog="python -m harness.tools.shards",
                                   description=__doc__.splitlines()[0])
  actions = parser.add_subparsers(dest="action", required=True)
  m = actions.add_parser("merge", help="merge shard reports and run the session-level checks")
  m.add_argument("shards", nargs="+", metavar="SHARD.json")
  m.add_argument("-o", "--output", required=True, metavar="RUN.json")
  m.add_argument("--golden-root", default=str(REPO_ROOT / "compat_data"), metavar="DIR")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
  out = Path(args.output)
  if any(out.resolve() == Path(s).resolve() for s in args.shards):
    logger.error("-o %s is one of the shard reports; write the merged report to a new file.", out)
    return 2
  try:
    run = merge_and_check([load_report(p) for p in args.shards], Path(args.golden_root))
  except JaxportError as e:
    logger.error("%s", e)
    return 2
  write_report(run, out)
  failed = run.summary.counts[Status.FAIL]
  logger.info("merged %d shard reports into %s: %d entries replayed of %d present, %d failed, "
              "%d session failures", len(args.shards), out, run.summary.replayed,
              run.summary.present, failed, len(run.session_failures))
  for f in run.session_failures:
    logger.info("SESSION FAIL %s", f)
  return 1 if failed or run.session_failures else 0


if __name__ == "__main__":
  sys.exit(main())
