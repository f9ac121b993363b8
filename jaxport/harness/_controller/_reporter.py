"""The end-of-run report's other writings: the timings file as JSON, and the run summarized as
text for the terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jaxport._files import write_replacing
from jaxport.harness._controller import _update
from jaxport.report import RunReport
from jaxport.report._model import OTHER_HOST_KEY
from jaxport.report._visible import visible


def write_json(report: dict[str, Any], path: str | os.PathLike) -> None:
  """Write the report atomically (sorted keys, so serial and parallel runs compare equal)."""
  path = Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  text = json.dumps(report, indent=2, sort_keys=True) + "\n"
  write_replacing(path, text.encode(), private=True)


def text_lines(run: RunReport) -> list[str]:
  """A short human summary: counts, then every failure, warning, drift and skip (read off the
  report's JSON form, the one the run writes)."""
  report = run.to_json()
  s = report["summary"]
  lines = [f"jaxport compat harness, platform {report['platform']}, readers "
           f"{', '.join(report['readers'])}, jax {report['versions'].get('jax')}"]
  if report["mode"] == "record":
    for r in report["recorded"]:
      lines.append(f"  {r['action']:9s} {r['entry_id'] or 'case ' + r['case_id']}")
      if r["action"] in ("written", "unchanged"):
        lines.extend(f"      {m}" for m in r["message"].splitlines())
    lines.append(f"recorded {s.get('written', 0)} new, {s.get('unchanged', 0)} unchanged, "
                 f"{s.get('conflict', 0)} conflicting entries")
  else:
    lines.append(
        f"{s['replayed']} entries replayed of {s['present']} present: {s['pass']} pass, "
        f"{s['drift']} drift within tolerance, {s['warn']} warn, {s['xfail']} expected failures, "
        f"{s['fail']} fail" + (f"; {s['upgraded']} ran after jaxport.upgrade" if s.get("upgraded") else "")
        + (f"; {s[OTHER_HOST_KEY]} of the passes matched within tolerance, not bitwise, on "
           "another host class, or with other software (jaxlib, XLA_FLAGS), than the recording one"
           if s.get(OTHER_HOST_KEY) else "")
        + run.summary.work_line())
    t = report["targets"]
    covered = set(t["covered"])
    missing = [x for x in t["required"] if x not in covered]
    lines.append(f"targets: {len(t['required']) - len(missing)} of {len(t['required'])} required "
                 "covered" + (f" (missing {', '.join(missing)})" if missing else "")
                 + f", {len(t['covered'])} covered in all, {len(t['reachable'])} reached by "
                 "today's lowering")
    for e in report["entries"]:
      if e["status"] in ("fail", "warn"):
        lines.append(f"  {e['status'].upper()} {e['entry_id']}")
        lines.extend(f"      {m.splitlines()[0]}" for m in e["messages"])
    for e in report["entries"]:
      if e["status"] == "xfail":
        lines.append(f"  XFAIL {e['entry_id']}: {e['expected_failure']}")
    expiring = [e for e in report["entries"]
                if e["days_to_expiry"] is not None and 0 <= e["days_to_expiry"] <= 30]
    for e in expiring:
      lines.append(f"  expires in {e['days_to_expiry']} days: {e['entry_id']}")
    if report["mode"] == "update":
      lines.extend(_update.text_lines(report["updated"]))
  for f in report["session_failures"]:
    lines.append(f"SESSION FAIL {f}")
  if report["mode"] == "replay" and s["warn"]:
    # Derived from the counts, not stored, so that merged shard reports stay exact.
    # Under --compat-strict only the findings strictness does not reach still warn.
    lines.append(f"session warning: {s['warn']} entries have findings that stay warnings under "
                 "--compat-strict (a changed function whose case has a newer entry, or a change "
                 "--compat-update records anew)" if report["strict"] else
                 f"session warning: {s['warn']} entries have drift or staleness findings; "
                 "they fail with --compat-strict")
  for w in report["session_warnings"]:
    lines.append(f"session warning: {w}")
  if report["skips"]:
    lines.append("skip ledger:")
    lines.extend(f"  {k['what']}: {k['why']}" for k in report["skips"])
  # Case code's messages are shown, never obeyed: control and bidirectional characters escaped.
  return [visible(line) for line in lines]
