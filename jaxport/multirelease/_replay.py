"""Replaying golden entries with another jax release's own ``jax.export``, in its environment.

The replaying script (``jaxport_in_release/replayer.py``, shipped beside jaxport) runs in the
release's environment without jaxport (which may not support that jax): it reads each entry's
files and checks their digests, deserializes with the release's ``jax.export``, calls and
compares. It writes one
JSON line per entry, flushed before the next starts, so a native crash costs only the entry
that caused it: the driver here starts it again on what is left.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId, require_entry_id
from jaxport.harness._protocol._release_rows import PROCESS

logger = logging.getLogger(__name__)

# A package of its own beside jaxport: it drives the release's jax.export, which jaxport (a
# reimplementation of it) never imports.
# The scripts that run inside a release's environment, without jaxport.
IN_RELEASE = Path(__file__).resolve().parents[2] / "jaxport_in_release"
REPLAYER = IN_RELEASE / "replayer.py"
# The replayer's rows are results only (``jaxport.harness._protocol._release_rows``); the judge
# (``jaxport.harness._judge._release_runs``) makes each entry's status.
# The seconds one entry may take in the replaying process (deserialize, compile, call).
ENTRY_TIMEOUT_S = 300


class ReplayError(JaxportError, RuntimeError):
  """The release's replaying process could not replay the entries it was given."""


def release_env() -> dict[str, str]:
  """This process's environment minus what would leak its packages into another environment.

  Release environments hold the CPU jaxlib only, so jax is told to use the CPU.
  """
  env = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
  env["JAX_PLATFORMS"] = "cpu"
  return env


def read_results(path: Path) -> dict[str, dict]:
  """Finished results by entry id; an entry only ``started`` is one that crashed the process."""
  started, finished = [], {}
  if path.exists():
    for line in path.read_text().splitlines():
      row = json.loads(line)
      if row.get("started"):
        started.append(row["entry_id"])
      else:
        finished[row["entry_id"]] = row
  for entry_id in started:
    finished.setdefault(entry_id, {"entry_id": entry_id, "stage": PROCESS,
                                   "error": "the replaying process died on this entry"})
  return finished


def replay_with(python: str, root: Path, entry_ids: Sequence[EntryId], work: Path, *,
                effects: Mapping[str, str] | None = None,
                timeout_s: float = ENTRY_TIMEOUT_S) -> list[dict]:
  """Replay ``entry_ids`` of the store ``root`` with ``python``, one result row per entry.

  ``effects`` maps module names to files of effect types the entries use, imported first.
  Each start of the replaying process has ``timeout_s`` per entry it is given (and one more
  for its start-up); the entry it is on when stopped is a ``crash`` row.
  """
  results_path = work / "results.jsonl"
  # The replayer runs without jaxport: it takes and writes the ids' text.
  texts = [str(require_entry_id(e, "replay_with")) for e in entry_ids]
  pending = list(texts)
  while pending:
    ids_file = work / "entries.txt"
    ids_file.write_text("\n".join(pending) + "\n")
    cmd = [python, str(REPLAYER), "--root", str(root), "--entries", str(ids_file),
           "--out", str(results_path)]
    for name, path in (effects or {}).items():
      cmd += ["--effects", f"{name}={path}"]
    try:
      limit = timeout_s * (len(pending) + 1)
      proc = subprocess.run(cmd, env=release_env(), capture_output=True, text=True, timeout=limit)
      tail = proc.stderr[-1500:]
    except subprocess.TimeoutExpired:
      tail = f"timed out after {limit} s"
    done = read_results(results_path)
    remaining = [e for e in pending if e not in done]
    if len(remaining) == len(pending):
      raise ReplayError(f"the release's replayer made no progress ({python}):\n{tail}")
    if remaining:
      logger.warning("replayer stopped early (%d left): %s", len(remaining), tail.splitlines()[-1:])
    pending = remaining
  results = read_results(results_path)
  by_id = {}
  for entry_id in texts:
    row = results[entry_id]
    if "producer" not in row:
      try:
        row["producer"] = json.loads((root / entry_id / "manifest.json").read_text())["producer"]
      except (OSError, ValueError, KeyError):
        row["producer"] = None  # The entry vanished or is unreadable: counted as "unknown".
    by_id[entry_id] = row
  return [by_id[e] for e in texts]
