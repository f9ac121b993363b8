"""Per-entry cost of the compat harness above a bare deserialize + compile + run.

Run by hand: ``python benchmarks/bench_replay.py [--limit N] [--root compat_data]``.
It measures, for the same golden entries:
  bare jax      ``jax.export.deserialize(blob).call(*inputs)`` (one compile + run)
  bare jaxport  ``jaxport.deserialize(blob).call(*inputs)``
  harness       one replay request to the isolated worker: sha256 verification,
                both readers (two compiles + runs), today's lowering of the case,
                signature comparison and checkers
and prints per-entry means and the ratios to bare jax measured in this run.
Each measurement runs in its own fresh process, so no compile is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_BARE = r"""
import json, sys, time
import jax
jax.config.update("jax_enable_x64", True)
from harness import _api, _engine
from jaxport.golden._store import GoldenStore
store = GoldenStore(sys.argv[1])
reader = sys.argv[2]
times = []
for entry_id in json.loads(sys.argv[3]):
  e = store.entry(entry_id)
  blob, inputs = e.blob(), e.inputs()
  t = time.perf_counter()
  _engine.run_exported(_api.deserialize(blob, reader=reader), inputs)
  times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def _bare(root: Path, reader: str, ids: list[str]) -> list[float]:
  env = dict(os.environ, PYTHONPATH=str(ROOT))
  out = subprocess.run([sys.executable, "-c", _BARE, str(root), reader, json.dumps(ids)],
                       capture_output=True, text=True, env=env, cwd=ROOT)
  if out.returncode:
    raise SystemExit(f"bare {reader} replay failed:\n{out.stderr[-3000:]}")
  return json.loads(out.stdout.strip().splitlines()[-1])


def _harness(root: Path, ids: list[str]) -> list[float]:
  from harness._worker import WorkerClient
  client = WorkerClient()
  try:
    client.request({"op": "nope"})  # start the worker outside the timed loop
    times = []
    for entry_id in ids:
      t = time.perf_counter()
      answer = client.request({"op": "replay", "root": str(root), "entry_id": entry_id})
      times.append(time.perf_counter() - t)
      if "readers" not in answer:
        raise SystemExit(f"{entry_id}: {answer}")
    return times
  finally:
    client.close()


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", default=str(ROOT / "compat_data"))
  parser.add_argument("--limit", type=int, default=20)
  args = parser.parse_args()
  from jaxport.golden._store import GoldenStore
  root = Path(args.root).resolve()
  import jax
  # Entries of today's jax that run here (older producers may be expected failures).
  entries = [e for e in GoldenStore(root).entries("cpu")
             if not e.manifest.lowering_only and e.manifest.producer.jax == jax.__version__]
  step = max(1, len(entries) // args.limit)
  ids = [e.entry_id for e in entries[::step]][:args.limit]
  # Warm-up entry, excluded: the first compile of a process pays one-off costs.
  ids = [ids[0]] + ids
  bare_jax = _bare(root, "jax", ids)[1:]
  bare_jaxport = _bare(root, "jaxport", ids)[1:]
  harness = _harness(root, ids)[1:]
  n = len(harness)
  mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
  print(f"{n} entries (cpu, runnable), per-entry means:")
  print(f"  bare jax.export deserialize+compile+run  {mean(bare_jax) * 1e3:8.1f} ms  1.00x")
  print(f"  bare jaxport deserialize+compile+run     {mean(bare_jaxport) * 1e3:8.1f} ms  "
        f"{mean(bare_jaxport) / mean(bare_jax):.2f}x")
  print(f"  harness replay (2 readers + current)     {mean(harness) * 1e3:8.1f} ms  "
        f"{mean(harness) / mean(bare_jax):.2f}x")
  overhead = mean(harness) - mean(bare_jax) - mean(bare_jaxport)
  print(f"  overhead above the two bare replays      {overhead * 1e3:8.1f} ms per entry "
        "(verification, today's lowering, signatures, checkers, IPC)")


if __name__ == "__main__":
  main()
