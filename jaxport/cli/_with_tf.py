"""``jaxport replay --with-tf VERSION`` in a project: its entries served by a TensorFlow release.

The ``tf`` reader alone (the jax readers are a plain replay's): each CPU entry of the project's
store is called with that release's ``XlaCallModule``, the way TF Serving runs a jax artifact,
in an environment jaxport builds and caches (:mod:`jaxport.multirelease._tf_envs`), and its
outputs compared with the recorded ones with the entry's own comparison. An entry TensorFlow
refuses (the reason named: ``jaxport.harness._judge._tf_runs``) or computes differently fails
the run (exit 1). What it measured of each entry is kept in the project's measurements
(:mod:`jaxport.multirelease._tf_measured`), which ``audit`` and ``inspect`` show.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from jaxport.cli import _harness_run
from jaxport.errors import JaxportError
from jaxport.golden import GoldenStore
from jaxport.harness._judge._tf_runs import TfRun, judge_tf_row
from jaxport._platforms import HOST_PLATFORM, is_host
from jaxport.multirelease._tf_envs import not_buildable
from jaxport.multirelease._tf_measured import remember_served
from jaxport.multirelease._tf_replay import replay_store_with_tf, row_json
from jaxport.releases._tf_table import TfRelease, TfReleaseError, tf_release

# How a row the reader could not call there is shown (it has no status).
NOT_CALLED = "not called"


def usage_error(args) -> str | None:
  """What is wrong with ``--with-tf`` on this command line, None when nothing is."""
  if getattr(args, "with_tf", None) is None:
    return None
  if args.command != "replay":
    return f"{args.command} --with-tf: the tf reader replays; record with jax, then replay --with-tf"
  if args.with_jax is not None:
    return ("--with-tf and --with-jax name two consumers; run the tf reader (--with-tf) and "
            "another jax release (--with-jax) as two replays")
  return not_buildable(tf_release(args.with_tf))


def run_project(version: str, *, platform: str, report: str | None, extra: list[str],
                project: str | None) -> int:
  """``replay --with-tf version`` in the project the command line names (default: the working
  directory); 1 when TensorFlow refuses an entry or computes it differently."""
  release = tf_release(version)
  if not is_host(platform):
    raise JaxportError(f"--with-tf {version} --platform {platform}: tensorflow-cpu serves the "
                       "CPU only; use --platform cpu")
  rest = [a for a in extra if a != "--"]
  if rest:
    raise JaxportError(f"replay --with-tf {version}: {' '.join(rest)}: the tf reader runs no "
                       "pytest and takes no arguments after the command")
  root = _harness_run.project_dir(project)
  config = _harness_run.read_project(root, "replay --with-tf")
  store = config.store
  ids = [e.entry_id for e in GoldenStore(store).entries(HOST_PLATFORM)]
  if not ids:
    raise JaxportError(f"replay --with-tf {version}: the project's store {store} has no cpu "
                       "entries; record some first (jaxport record)")
  rows = replay_store_with_tf(store, ids, release)
  runs = [judge_tf_row(row, release) for row in rows]
  remember_served(root, store, release.version, rows, runs)
  sys.stdout.write(summary(runs, release))
  if report is not None:
    entries = [{**row_json(row), "status": None if r.status is None else str(r.status),
                "reason": None if r.refusal is None else str(r.refusal.reason),
                "detail": r.detail} for row, r in zip(rows, runs)]
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps({"tf": release.version, "entries": entries},
                                       indent=2) + "\n")
  return 1 if any(r.failed for r in runs) else 0


def summary(runs: list[TfRun], release: TfRelease) -> str:
  """One line per entry (its status, and why where it did not pass), then the counts, by
  status and by refusal reason."""
  who = f"tf {release.version}"
  lines, counts, reasons = [], collections.Counter(), collections.Counter()
  for r in runs:
    shown = NOT_CALLED if r.status is None else str(r.status)
    counts[shown] += 1
    if r.refusal is not None:
      reasons[str(r.refusal.reason)] += 1
    lines.append(f"{who}: {shown:<5} {r.entry_id}" + ("" if r.passed else f": {r.detail}"))
  total = f"{who}: {len(runs)} entries: " + ", ".join(
      f"{n} {shown}" for shown, n in sorted(counts.items()))
  if reasons:
    total += "; refused for " + ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items()))
  return "\n".join([*lines, total]) + "\n"


def served_release(text: str) -> str:
  """``--with-tf``'s value, when the TensorFlow table serves it; anything else is refused
  naming the served releases, before any environment is built (a usage error)."""
  try:
    tf_release(text)
  except TfReleaseError as e:
    raise argparse.ArgumentTypeError(str(e)) from None
  return text
