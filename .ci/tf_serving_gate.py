"""The nightly ``tf-serving`` job's verdict on ``jaxport replay --with-tf`` reports.

    python3 .ci/tf_serving_gate.py REPORT.json...

TensorFlow refuses many of a store's entries for reasons jaxport names and expects (jaxlib's
LAPACK kernels, platforms tensorflow-cpu does not serve, a StableHLO newer than it reads), so a
refused entry does not turn the night red. What does: an entry TensorFlow computed differently
or failed for no named reason, a report that does not read, or one that holds no entry. Each
report's counts, by status and by reason, and its unexplained failures go to the job summary
(``GITHUB_STEP_SUMMARY``; stdout without it). Exit 1 when a report fails so.
"""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path

from jaxport.errors import JaxportError
from jaxport.report import load_served


def verdict(path: Path) -> tuple[list[str], list[str]]:
  """The summary lines of one report (read by jaxport's own reader of the tf reader's reports),
  and its problems (none: the night passes)."""
  try:
    served = load_served(path)
  except JaxportError as e:
    return [f"- {path.name}: does not read ({e})"], [f"{path}: does not read ({e})"]
  if not served.entries:
    return [f"- {served.reader}, {path.name}: no entries"], [f"{path}: no entries"]
  entries = served.entries.items()
  statuses = collections.Counter(s.status or "not called" for _, s in entries)
  reasons = collections.Counter(s.reason for _, s in entries if s.reason)
  unexplained = [(e, s) for e, s in entries if s.status == "fail" and not s.reason]
  lines = [f"- {served.reader}, {path.name}: {len(served.entries)} entries: "
           + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
           + ("; refused for " + ", ".join(f"{r} {n}" for r, n in sorted(reasons.items()))
              if reasons else "")]
  lines += [f"  - unexplained: `{e}`: {s.detail}" for e, s in unexplained]
  return lines, [f"{path}: {e}: {s.detail}" for e, s in unexplained]


def main(argv: list[str]) -> int:
  if not argv:
    sys.stderr.write("usage: tf_serving_gate.py REPORT.json...\n")
    return 2
  lines, problems = ["### Served by TensorFlow (the tf reader)", ""], []
  for name in argv:
    shown, bad = verdict(Path(name))
    lines += shown
    problems += bad
  text = "\n".join(lines) + "\n"
  summary = os.environ.get("GITHUB_STEP_SUMMARY")
  if summary:
    with open(summary, "a") as f:
      f.write(text)
  else:
    sys.stdout.write(text)
  for p in problems:
    sys.stderr.write(f"tf-serving: {p}\n")
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
