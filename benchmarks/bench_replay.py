"""The serial harness replay of a store against the floor, measured in the same run.

Run by hand: ``python benchmarks/bench_replay.py [--root compat_data] [--reps N] [--no-cache-too]``.

  floor    deserializing and calling every runnable entry of the platform once
           with ``jax.export`` alone, in one fresh process (the time of the loop;
           entries that fail to run, such as old producers' expected failures, count
           the time until they fail; entries the installed jax refuses to deserialize,
           those older than its compatibility window, are not entries it runs and
           count nothing)
  harness  ``pytest harness/ --platform=cpu -n 0 -k "not fuzz"`` on the same store,
           wall clock: verification, both readers, today's lowering, checkers,
           worker and pytest; cold, no compile cache kept from an earlier run, but
           with Python's bytecode written beforehand, as an installed package has it
           (``--no-bytecode-cache`` honours ``PYTHONDONTWRITEBYTECODE`` instead, so
           that every start compiles jaxport's and the project's modules again)
  alike    where the floor read fewer entries than the store holds (a jax that refuses
           old envelopes, or lowering-only entries): the same harness run on a copy of
           the store holding only the entries the floor read, so that both sides do
           the same entries; the goal (at most 1.3x) is this ratio, and the whole
           store's ratio is printed beside it

Below the goal's ratio comes the part of that run the floor's definition matches: the
worker's seconds of the entries alone, without pytest's start-up and collection or the
workers' start-up (jax and the project's cases imported), which the floor leaves out.

It prints the harness's ratios to the floor, with
``--no-cache-too`` the ratio with executable sharing off, and where the harness's
time goes: the worker's per-part seconds (``--compat-timings``) summed over entries,
and the rest (pytest, worker start-up, IPC) as wall clock minus the worker's time. The
worker runs an entry's readers on two threads, so its parts overlap and can add up to
more than the wall clock.
With ``--reps N`` the measurements alternate N times and the minimum is reported, with the
goal's ratio of each repetition (its harness run against its own floor) and their median.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FLOOR = r"""
import json, sys, time
import jax
import jax.export
import numpy as np
jax.config.update("jax_enable_x64", True)
from jaxport.golden._store import GoldenStore
store = GoldenStore(sys.argv[1])
entries = [e for e in store.entries(sys.argv[2]) if not e.manifest.lowering_only]
loaded = [(e.entry_id, e.blob(), e.inputs()) for e in entries]
seconds, read, failed = 0.0, [], 0
for entry_id, blob, inputs in loaded:
  start = time.perf_counter()
  try:
    exp = jax.export.deserialize(bytearray(blob))
  except Exception:
    continue  # refused (older than this jax's window): not an entry jax.export runs
  read.append(entry_id)
  try:
    args = [jax.random.wrap_key_data(x, impl=a.dtype._impl)
            if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key) else x
            for x, a in zip(inputs, exp.in_avals)]
    args, kwargs = exp.in_tree.unflatten(args)
    jax.block_until_ready(exp.call(*args, **kwargs))
  except Exception:
    failed += 1
  finally:
    seconds += time.perf_counter() - start
print(json.dumps({"seconds": seconds, "entries": len(loaded), "read": len(read), "read_ids": read,
                  "failed": failed}))
"""


def _env(bytecode_cache: bool = True) -> dict[str, str]:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
  if bytecode_cache:
    env.pop("PYTHONDONTWRITEBYTECODE", None)
  return env


def write_bytecode(platform: str) -> None:
  """Compile the project's modules and pytest's rewritten plugin modules once, untimed, as an
  installed package and a second pytest run have them (pip byte-compiles what it installs;
  pytest keeps the modules it rewrites): where ``PYTHONDONTWRITEBYTECODE`` is set, every
  start would otherwise compile jaxport and the cases again."""
  subprocess.run([sys.executable, "-m", "compileall", "-q", "jaxport", "harness"],
                 capture_output=True, env=_env(), cwd=ROOT, check=True)
  subprocess.run([sys.executable, "-m", "pytest", "harness/", f"--platform={platform}",
                  "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
                 capture_output=True, env=_env(), cwd=ROOT)


def _floor(root: Path, platform: str, bytecode_cache: bool = True) -> dict:
  out = subprocess.run([sys.executable, "-c", _FLOOR, str(root), platform],
                       capture_output=True, text=True, env=_env(bytecode_cache), cwd=ROOT)
  if out.returncode:
    raise SystemExit(f"the floor's replay failed:\n{out.stderr[-3000:]}")
  return json.loads(out.stdout.strip().splitlines()[-1])


def floor_store(root: Path, entry_ids: list[str], into: Path) -> Path:
  """A store of just the entries the floor read, copied from ``root`` into ``into``."""
  for entry_id in entry_ids:
    shutil.copytree(root / entry_id, into / entry_id)
  return into


def _harness(root: Path, platform: str, *extra: str, bytecode_cache: bool = True) -> dict:
  """Wall seconds of the serial harness replay, and its timings file."""
  with tempfile.TemporaryDirectory() as tmp:
    timings = Path(tmp) / "timings.json"
    cmd = [sys.executable, "-m", "pytest", "harness/", f"--platform={platform}", "-n", "0",
           "-k", "not fuzz", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--compat-store={root}", f"--compat-timings={timings}", *extra]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(bytecode_cache),
                         cwd=ROOT)
    seconds = time.perf_counter() - start
    if not timings.exists():
      raise SystemExit(f"the harness run wrote no timings (exit {out.returncode}):\n"
                       f"{out.stdout[-3000:]}{out.stderr[-2000:]}")
    return {"seconds": seconds, "timings": json.loads(timings.read_text())}


def breakdown(run: dict) -> list[tuple[str, float]]:
  """(part, seconds) of one harness run, the parts of the call and the rest broken out."""
  parts: dict[str, float] = {}
  for entry in run["timings"]["parts"].values():
    for name, seconds in entry.items():
      parts[name] = parts.get(name, 0.0) + seconds
  worker = sum(run["timings"]["seconds"].values())
  get = parts.get
  return [
      ("verification (sha256 of every file)", get("verify", 0.0)),
      ("deserialization (both readers)", get("deserialize", 0.0)),
      ("compilation or loading from the cache (readers)", get("compile", 0.0)),
      ("lowering (the readers' call wrappers)", get("lower", 0.0)),
      ("calls less compile and lowering (tracing, execution)",
       get("call", 0.0) - get("compile", 0.0) - get("lower", 0.0)),
      ("checking (checkers, shardings)", get("check", 0.0)),
      ("re-export and its run (today's lowering)", get("current", 0.0)),
      ("pytest, worker start-up and IPC (wall less worker)", run["seconds"] - worker),
  ]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", default=str(ROOT / "compat_data"))
  parser.add_argument("--platform", default="cpu")
  parser.add_argument("--reps", type=int, default=1)
  parser.add_argument("--no-cache-too", action="store_true",
                      help="also time the harness with --compat-no-cache")
  parser.add_argument("--no-bytecode-cache", action="store_true",
                      help="keep PYTHONDONTWRITEBYTECODE as set: every harness start compiles "
                           "jaxport's and the project's modules")
  args = parser.parse_args()
  root = Path(args.root).resolve()
  bytecode = not args.no_bytecode_cache
  if bytecode:
    write_bytecode(args.platform)
  floor = functools.partial(_floor, bytecode_cache=bytecode)
  harness = functools.partial(_harness, bytecode_cache=bytecode)
  # The first floor also says which entries it reads; it is the first repetition's floor.
  floors, runs, uncached, alike = [floor(root, args.platform)], [], [], []
  subset = None
  with tempfile.TemporaryDirectory() as tmp:
    if floors[0]["read"] < floors[0]["entries"]:
      subset = floor_store(root, floors[0]["read_ids"], Path(tmp) / "store")
    for rep in range(args.reps):
      steps = [lambda: runs.append(harness(root, args.platform))]
      if rep:
        steps.insert(0, lambda: floors.append(floor(root, args.platform)))
      if subset is not None:
        steps.append(lambda: alike.append(harness(subset, args.platform)))
      if args.no_cache_too:
        steps.append(lambda: uncached.append(harness(root, args.platform, "--compat-no-cache")))
      for step in (steps if rep % 2 == 0 else steps[::-1]):
        step()
  low = min(floors, key=lambda f: f["seconds"])
  run = min(runs, key=lambda r: r["seconds"])
  print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.reps} rep(s), "
        f"minimum of each; bytecode {'cached' if bytecode else 'compiled at each start'}")
  print(f"floor: {low['read']} of {low['entries']} runnable {args.platform} entries read by "
        f"jax.export, deserialize + call once each ({low['failed']} fail to run)"
        f"   {low['seconds']:7.1f} s  1.00x")
  print(f"harness: pytest harness/ --platform={args.platform} -n 0 -k 'not fuzz'"
        f"          {run['seconds']:7.1f} s  {run['seconds'] / low['seconds']:.2f}x")
  goal = run
  if alike:
    goal = min(alike, key=lambda r: r["seconds"])
    print(f"harness on the floor's {low['read']} entries only (the goal's like-for-like ratio)"
          f"  {goal['seconds']:7.1f} s  {goal['seconds'] / low['seconds']:.2f}x")
  entries = sum(goal["timings"]["seconds"].values())
  print(f"  of which the entries' replay in the worker (no start-up, pytest or collection)"
        f"  {entries:7.1f} s  {entries / low['seconds']:.2f}x")
  if args.reps > 1:
    # Each repetition's ratio to its own floor, measured minutes apart at most: steadier than
    # the ratio of minima where the machine's speed drifts between repetitions.
    paired = [r["seconds"] / f["seconds"] for r, f in zip(alike or runs, floors)]
    print(f"  the goal's ratio in each repetition: "
          f"{', '.join(f'{x:.2f}x' for x in paired)}; median {statistics.median(paired):.2f}x")
  if uncached:
    slow = min(uncached, key=lambda r: r["seconds"])
    print(f"harness with --compat-no-cache (every module compiled)"
          f"          {slow['seconds']:7.1f} s  {slow['seconds'] / low['seconds']:.2f}x")
  for shown in ((run, goal) if goal is not run else (run,)):
    print(f"where the harness's {shown['seconds']:.1f} s go "
          f"({len(shown['timings']['seconds'])} entries replayed):")
    for name, seconds in breakdown(shown):
      print(f"  {name:55s} {seconds:7.1f} s  {seconds / shown['seconds']:5.1%}")


if __name__ == "__main__":
  main()
