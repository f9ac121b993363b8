"""Replay golden entries under other jax releases and write the producer x consumer matrix.

    python harness/tools/replay_with_jax.py --jax 0.9.2 --jax 0.10.0 --current \\
        --out compat-matrix/

``--table-releases`` adds every release of ``harness/expected_status.json``.
Each ``--jax`` release gets (or reuses) its venv ``.jax-venvs/jax-<version>``
and replays there with ``_replayer.py``, which uses only that release's
``jax.export.deserialize`` and ``Exported.call``; ``--current`` adds the jax of
this interpreter. ``--current-build-only`` keeps the entries the current
jaxport build recorded: the forward check (do older releases read what we
write?). The result is ``matrix.json`` and ``matrix.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _venvs, expected_status, matrix  # noqa: E402
from harness.tools.record_with_jax import release_env  # noqa: E402

REPLAYER = Path(__file__).resolve().parent / "_replayer.py"
logger = logging.getLogger(__name__)


def select_entries(root: Path, platform: str, current_build_only: bool) -> list[str]:
  """Entry ids under ``root/platform``, read from the directory layout and manifests only."""
  ids = []
  for manifest in sorted((root / platform).glob("*/*/*/manifest.json")):
    if current_build_only:
      producer = json.loads(manifest.read_text()).get("producer", {})
      if not producer.get("jaxport"):
        continue
    ids.append("/".join(manifest.parent.parts[-4:]))
  return ids


def _read_results(path: Path) -> dict[str, dict]:
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
    finished.setdefault(entry_id, {"entry_id": entry_id, "outcome": "crash", "stage": "process",
                                   "error": "the replaying process died on this entry"})
  return finished


def replay_with(python: str, root: Path, entry_ids: list[str], work: Path,
                timeout_s: float = 900) -> list[dict]:
  """Replay ``entry_ids`` with ``python``; a crash costs only the entry that caused it."""
  results_path = work / "results.jsonl"
  pending = list(entry_ids)
  while pending:
    ids_file = work / "entries.txt"
    ids_file.write_text("\n".join(pending) + "\n")
    cmd = [python, str(REPLAYER), "--root", str(root), "--entries", str(ids_file),
           "--out", str(results_path)]
    try:
      proc = subprocess.run(cmd, env=release_env(), capture_output=True, text=True,
                            timeout=timeout_s)
      tail = proc.stderr[-1500:]
    except subprocess.TimeoutExpired:
      tail = f"timed out after {timeout_s} s"
    done = _read_results(results_path)
    remaining = [e for e in pending if e not in done]
    if len(remaining) == len(pending):
      raise RuntimeError(f"the replayer made no progress: {' '.join(cmd)}\n{tail}")
    if remaining:
      logger.warning("replayer stopped early (%d left): %s", len(remaining), tail.splitlines()[-1:])
    pending = remaining
  results = _read_results(results_path)
  by_id = {}
  for entry_id in entry_ids:
    row = results[entry_id]
    if "producer" not in row:
      try:
        row["producer"] = json.loads((root / entry_id / "manifest.json").read_text())["producer"]
      except (OSError, ValueError, KeyError):
        row["producer"] = None  # The entry vanished or is unreadable: counted as "unknown".
    by_id[entry_id] = row
  return [by_id[e] for e in entry_ids]


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description="Replay golden entries under other jax releases.")
  parser.add_argument("--jax", action="append", default=[], help="consumer release (repeatable)")
  parser.add_argument("--table-releases", action="store_true",
                      help="every producer release listed in harness/expected_status.json")
  parser.add_argument("--current", action="store_true",
                      help="also replay with this interpreter's jax (the pinned one)")
  parser.add_argument("--current-build-only", action="store_true",
                      help="only entries recorded by the current jaxport build (forward check)")
  parser.add_argument("--platform", default="cpu", choices=["cpu"],
                      help="release venvs hold the CPU jaxlib only")
  parser.add_argument("--store", default=str(_venvs.REPO_ROOT / "compat_data"))
  parser.add_argument("--venvs", default=None)
  parser.add_argument("--out", required=True, help="folder for matrix.json and matrix.md")
  parser.add_argument("--today", default=None, help="date for window ages (YYYY-MM-DD)")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  if args.table_releases:
    args.jax += [v for v in expected_status.load_table().releases if v not in args.jax]
  if not args.jax and not args.current:
    parser.error("name at least one consumer: --jax VERSION, --table-releases or --current")
  today = datetime.date.fromisoformat(args.today) if args.today else datetime.date.today()
  root = Path(args.store).resolve()
  entry_ids = select_entries(root, args.platform, args.current_build_only)
  if not entry_ids:
    parser.error(f"no entries under {root / args.platform}")
  consumers: dict[str, str] = {}
  for version in args.jax:
    consumers[version] = str(_venvs.ensure_venv(version, args.venvs))
  if args.current:
    import importlib.metadata as md
    consumers[md.version("jax")] = sys.executable
  results = {}
  for version, python in consumers.items():
    logger.info("replaying %d entries with jax %s", len(entry_ids), version)
    with tempfile.TemporaryDirectory(prefix=f"jaxport-replay-{version}-") as tmp:
      results[version] = replay_with(python, root, entry_ids, Path(tmp))
  m = matrix.build_matrix(results, today)
  json_path, text_path = matrix.write(m, args.out)
  print(text_path.read_text())
  print(f"wrote {json_path} and {text_path}")
  violations = [(p, c) for p in m["producers"] for c, cell in m["cells"][p].items()
                if not cell["policy_ok"]]
  return 1 if violations else 0


if __name__ == "__main__":
  sys.exit(main())
