"""The end-of-run report's other writings: the timings file as JSON, and the run summarized as
text for the terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jaxport._files import write_replacing
from jaxport.harness._controller import _update
from jaxport.harness._judge._entry import superseded_warning
from jaxport.report import RunReport, Status
from jaxport.report._visible import visible


def write_json(report: dict[str, Any], path: str | os.PathLike) -> None:
  """Write the report atomically (sorted keys, so serial and parallel runs compare equal)."""
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  text = json.dumps(report, indent=2, sort_keys=True) + "\n"
  write_replacing(path, text.encode(), private=True)


def summary_line(message: str) -> str:
  """A finding's first line, as the terminal summary shows it; a message of several lines (a
  reader's whole error) points to where the rest is kept."""
  lines = message.splitlines() or [""]
  if len(lines) == 1:
    return lines[0]
  return (f"{lines[0]} [{len(lines) - 1} more lines of this error in the JSON report "
          "(--compat-report) and its page (jaxport report render)]")


def text_lines(run: RunReport) -> list[str]:
  """A short human summary: counts, then every failure, warning, drift and skip (read off the
  typed report the run writes)."""
  s = run.summary
  lines = [f"jaxport compat harness, platform {run.platform}, readers "
           f"{', '.join(run.readers)}, jax {run.versions.get('jax')}"]
  if run.mode == "record":
    for r in run.recorded:
      lines.append(f"  {str(r.action):9s} {r.entry_id or 'case ' + r.case_id}")
      if r.action in ("written", "unchanged"):
        lines.extend(f"      {m}" for m in r.message.splitlines())
    lines.append(f"recorded {s.actions.get('written', 0)} new, {s.actions.get('unchanged', 0)} "
                 f"unchanged, {s.actions.get('conflict', 0)} conflicting entries")
  else:
    n = s.counts
    lines.append(
        f"{s.replayed} entries replayed of {s.present} present: {n[Status.PASS]} pass, "
        f"{n[Status.DRIFT]} drift within tolerance, {n[Status.WARN]} warn, "
        f"{n[Status.XFAIL]} expected failures, {n[Status.FAIL]} fail"
        + (f"; {s.upgraded} ran after jaxport.upgrade" if s.upgraded else "")
        + (f"; {s.other_host} of the passes matched within tolerance, not bitwise, on "
           "another host class, or with other software (jaxlib, XLA_FLAGS), than the recording one"
           if s.other_host else "")
        + s.work_line())
    t = run.targets
    covered = set(t.covered)
    missing = [x for x in t.required if x not in covered]
    lines.append(f"targets: {len(t.required) - len(missing)} of {len(t.required)} required "
                 "covered" + (f" (missing {', '.join(missing)})" if missing else "")
                 + f", {len(t.covered)} covered in all, {len(t.reachable)} reached by "
                 "today's lowering")
    for e in run.entries:
      if e.status in (Status.FAIL, Status.WARN):
        lines.append(f"  {str(e.status).upper()} {e.entry_id}")
        lines.extend(f"      {summary_line(m)}" for m in e.messages)
    for e in run.entries:
      if e.status is Status.XFAIL:
        lines.append(f"  XFAIL {e.entry_id}: {e.expected_failure}")
    expiring = [e for e in run.entries
                if e.days_to_expiry is not None and 0 <= e.days_to_expiry <= 30]
    for e in expiring:
      lines.append(f"  expires in {e.days_to_expiry} days: {e.entry_id}")
    if run.mode == "update":
      lines.extend(_update.text_lines(run.updated or ()))
  for f in run.session_failures:
    lines.append(f"SESSION FAIL {f}")
  if run.mode == "replay" and s.counts[Status.WARN]:
    # Derived from the counts, not stored, so that merged shard reports stay exact.
    # Under --compat-strict only the findings strictness does not reach still warn.
    warned = s.counts[Status.WARN]
    superseded = sum(1 for e in run.entries if superseded_warning(e))
    if run.strict:
      lines.append(f"session warning: {warned} entries have findings that stay warnings under "
                   "--compat-strict (a changed function whose case has a newer entry, or a "
                   "change --compat-update records anew)")
    elif warned > superseded:
      lines.append(f"session warning: {warned - superseded} entries have drift or staleness "
                   "findings; they fail with --compat-strict")
    if superseded and not run.strict:
      lines.append(f"session warning: {superseded} superseded entries differ from today's "
                   "function (their case has a newer entry, which judges it); they warn, also "
                   "with --compat-strict; `jaxport prune --superseded` removes those a newer "
                   "entry of the same jax release replaced")
  for w in run.session_warnings:
    lines.append(f"session warning: {w}")
  if run.skips:
    lines.append("skip ledger:")
    lines.extend(f"  {k.what}: {k.why}" for k in run.skips)
  # Case code's messages are shown, never obeyed: control and bidirectional characters escaped.
  return [visible(line) for line in lines]
