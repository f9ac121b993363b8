"""``jaxport report``: merge the reports of a run's shards; render a run (and its history) as pages.

``merge SHARD.json... -o RUN.json`` writes the report of the whole run;
``render RUN.json [EARLIER.json...] --html OUT.html --markdown OUT.md`` writes
the page and the job summary (Markdown to stdout when no output is named).
Registration is self-contained: ``_main`` calls :func:`add_parser` and
dispatches to :func:`run`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from jaxport import report
from jaxport._progress import track
from jaxport.errors import ReportError
from jaxport.report._files import write_text_atomically

logger = logging.getLogger(__name__)

COMMAND = "report"
STDOUT = "-"


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
  """Register ``report`` and its two actions on the ``jaxport`` parser."""
  # -v/-q belong to the actions (``jaxport report render -q``), so only they take ``common``.
  p = sub.add_parser(COMMAND, help="merge shard reports; render reports as HTML and Markdown",
                     description="Work with the harness's JSON compatibility reports "
                                 "(pytest harness/ --compat-report=RUN.json).")
  actions = p.add_subparsers(dest="report_action", required=True, metavar="ACTION")
  m = actions.add_parser("merge", parents=[common], help="combine the reports of a run's shards",
                         description="Combine the reports of disjoint shards of one harness run "
                                     "into the report of the whole run.")
  m.add_argument("shards", nargs="+", metavar="SHARD.json")
  m.add_argument("-o", "--output", required=True, metavar="RUN.json", help="the merged report")
  r = actions.add_parser("render", parents=[common], help="write the page and the job summary",
                         description="Render a run's report as one self-contained HTML page and as "
                                     "Markdown; earlier runs' reports add the history. Without "
                                     "--html or --markdown the Markdown goes to stdout.")
  r.add_argument("run", metavar="RUN.json", help="the current run's report")
  r.add_argument("earlier", nargs="*", metavar="EARLIER.json", help="earlier runs' reports (any order)")
  r.add_argument("--html", metavar="OUT.html", help="write the HTML page here")
  r.add_argument("--markdown", metavar="OUT.md", help=f"write the Markdown here ({STDOUT}: stdout)")


def _load_all(paths: list[str], verb: str) -> list[report.RunReport]:
  return [report.load_report(p) for p in track(paths, verb)]


def _merge(args: argparse.Namespace) -> int:
  out = Path(args.output)
  if any(out.resolve() == Path(s).resolve() for s in args.shards):
    raise ReportError(f"-o {out} is one of the shard reports; write the merged report to a new "
                      "file so no shard is overwritten.")
  merged = report.merge_reports(_load_all(args.shards, "reading shard"))
  report.write_report(merged, out)
  s = merged.summary
  logger.info("merged %d shard reports into %s: %d entries replayed of %d present",
              len(args.shards), out, s.replayed, s.present)
  return 0


def _render(args: argparse.Namespace) -> int:
  runs = _load_all([args.run, *args.earlier], "reading report")
  current, earlier = runs[0], runs[1:]
  outputs = []
  if args.html:
    outputs.append((args.html, report.render_html))
  if args.markdown or not args.html:
    outputs.append((args.markdown or STDOUT, report.render_markdown))
  for path, render in track(outputs, "rendering", lambda o: o[0]):
    text = render(current, earlier)
    if path == STDOUT:
      sys.stdout.write(text)
    else:
      write_text_atomically(path, text)
  return 0


def run(args: argparse.Namespace, extra: list[str]) -> int:
  """Run ``jaxport report ACTION``; 0 when done (a failing run still renders)."""
  return {"merge": _merge, "render": _render}[args.report_action](args)
