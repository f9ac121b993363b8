"""The serial harness replay of a store against the floor, cold and warm, measured in the same run.

Run by hand: ``python benchmarks/bench_replay.py [--root compat_data] [--reps N] [--no-cache-too]``.

  floor    every entry of the platform that jax.export runs, deserialized and called once
           with ``jax.export`` alone, in one fresh process (the time of the loop): each in
           the form jax.export runs, as recorded, after ``jaxport.upgrade_envelope`` (an
           envelope the installed jax refuses as expired) or after ``jaxport.upgrade``
           (custom calls jaxlib no longer registers), found beforehand, untimed, in
           another process; entries that run in none of these forms but read count the
           time until they fail (old producers' expected failures); entries no form of
           which reads, and lowering-only entries, count nothing
  cold     ``pytest harness/ --platform=cpu -n 0 -k "not fuzz"`` on the whole store, wall
           clock: verification, both readers, today's export, checkers, worker and pytest;
           its compile cache a new empty folder, with Python's bytecode written beforehand,
           as an installed package has it (``--no-bytecode-cache`` honours
           ``PYTHONDONTWRITEBYTECODE`` instead)
  warm     the same run again at once, on the cache folder the cold run filled: the same
           readers and exports, only XLA's compilation and the module reads (``_kept_reads``)
           loaded from the cache
  alike    where the floor runs fewer entries than the store holds: the cold run on a copy
           of the store holding only the entries the floor ran, so that both sides do the
           same entries
  least    part of what every warm run does, and nothing else, in one fresh process without
           pytest: both readers (jax.export and jaxport) deserializing and calling each entry
           the floor runs, in the form the floor runs, side by side on two threads as the
           worker runs them (not the entries that fail to run: the harness keeps their
           compile errors for a warm run, jax's cache does not), and today's export of each
           case the store holds, once per case; with the worker's jax configuration (each
           distinct module compiled once in the process, the compile cache), cold on a new
           empty compile cache, then warm on it. Its warm run over the harness's cold run
           bounds the harness's warm over cold from below: a harness run also upgrades
           records at run time, runs today's exports, verifies, checks and reports

Goals: the whole store's cold run at most 1.3x the floor; the warm run at most 0.5x the cold
one. Under the warm-over-cold ratio comes the same ratio in CPU seconds (user and system) of
pytest and its workers: the work each run does, which spreading it over more processes or
cores would not change, so the wall-clock ratio of runs that kept every core busy would come
to it. The workers' preloading parent outlives pytest unwaited for; the benchmark adopts such
orphans (``_tree_cpu``) and waits for them, so that their CPU seconds count. Below the ratios come the worker's seconds of the entries alone, and where the time
goes: the worker's per-part seconds (``--compat-timings``) summed over entries, and the rest
(pytest, worker start-up, IPC) as wall clock minus the worker's time. The worker runs an
entry's readers on two threads, so its parts overlap and can add up to more than the wall
clock. ``--no-cache-too`` adds a cold run with executable sharing off. With ``--reps N`` the
measurements alternate N times and the minimum of each is reported, with each repetition's
ratios (against its own floor, and warm over its own cold run) and their medians.
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
import tomllib
from pathlib import Path

from _stopping import unwind_on_terminate
from _tree_cpu import adopt_orphans, children_cpu_seconds, reap_orphans

ROOT = Path(__file__).resolve().parent.parent
# The goals the module docstring states: cold over the floor, warm over cold, at most.
COLD_OVER_FLOOR_GOAL = 1.30
WARM_OVER_COLD_GOAL = 0.50
# The project's case modules, as its pytest configuration names them (today's exports).
_CASE_MODULES = ",".join(tomllib.loads((ROOT / "pyproject.toml").read_text())
                         ["tool"]["pytest"]["ini_options"]["jaxport_cases"])

# Prepended to each child script: one call of an Exported on an entry's stored inputs (typed
# keys wrapped), waited for.
_CALL_ONCE = r"""
import jax

def call_once(exp, inputs):
  args = [jax.random.wrap_key_data(x, impl=a.dtype._impl)
          if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key) else x
          for x, a in zip(inputs, exp.in_avals)]
  args, kwargs = exp.in_tree.unflatten(args)
  jax.block_until_ready(exp.call(*args, **kwargs))
"""

# Untimed: the form of each entry that jax.export runs, as recorded, after
# jaxport.upgrade_envelope (an expired envelope), or after jaxport.upgrade (custom calls jaxlib
# no longer registers); written to a folder for the timed floor, which runs in a fresh process
# so that none of these trial runs' executables are kept for it.
_PREPARE = _CALL_ONCE + r"""
import json, sys
from pathlib import Path
import jax
import jax.export
jax.config.update("jax_enable_x64", True)
import jaxport
from jaxport.golden._store import GoldenStore
store, out = GoldenStore(sys.argv[1]), Path(sys.argv[3])

def runs(blob, inputs):
  try:
    exp = jax.export.deserialize(bytearray(blob))
  except Exception:
    return None
  try:
    call_once(exp, inputs)
    return True
  except Exception:
    return False

def forms(blob):
  yield "recorded", blob
  try:
    enveloped = bytes(jaxport.upgrade_envelope(blob))
  except Exception:
    return
  yield "upgrade_envelope", enveloped
  try:
    yield "upgrade", bytes(jaxport.upgrade(jaxport.deserialize(enveloped)).serialize())
  except Exception:
    return

kinds, index, failing = {}, {}, []
for e in store.entries(sys.argv[2]):
  if e.manifest.lowering_only:
    continue
  blob, inputs = e.blob(), e.inputs()
  chosen = None
  for kind, form in forms(blob):
    ran = runs(form, inputs)
    if ran:
      chosen = (kind, form)
      break
    if ran is False and chosen is None:
      chosen = ("fails to run", form)  # read, then fails: timed until it fails
  if chosen is None:
    continue
  name = f"{len(index)}.blob"
  (out / name).write_bytes(chosen[1])
  index[name] = str(e.entry_id)
  kinds[chosen[0]] = kinds.get(chosen[0], 0) + 1
  if chosen[0] == "fails to run":
    failing.append(name)
(out / "index.json").write_text(json.dumps(index))
(out / "failing.json").write_text(json.dumps(failing))
print(json.dumps({"kinds": kinds}))
"""

_FLOOR = _CALL_ONCE + r"""
import json, sys, time
from pathlib import Path
import jax
import jax.export
import numpy as np
jax.config.update("jax_enable_x64", True)
from jaxport.golden._store import GoldenStore
store, prepared = GoldenStore(sys.argv[1]), Path(sys.argv[3])
index = json.loads((prepared / "index.json").read_text())
by_id = {str(e.entry_id): e for e in store.entries(sys.argv[2])}
loaded = [(entry_id, (prepared / name).read_bytes(), by_id[entry_id].inputs())
          for name, entry_id in index.items()]
seconds, failed = 0.0, 0
for entry_id, blob, inputs in loaded:
  start = time.perf_counter()
  try:
    call_once(jax.export.deserialize(bytearray(blob)), inputs)
  except Exception:
    failed += 1
  finally:
    seconds += time.perf_counter() - start
runnable = sum(1 for e in by_id.values() if not e.manifest.lowering_only)
print(json.dumps({"seconds": seconds, "entries": runnable, "read": len(loaded),
                  "read_ids": [entry_id for entry_id, _, _ in loaded], "failed": failed}))
"""


# The least a warm run does (see the module's docstring), timed by the caller over the whole
# process: start-up and imports included, as in the harness's runs.
_LEAST = _CALL_ONCE + r"""
import concurrent.futures, json, sys
from pathlib import Path
import jax
import jax.export
jax.config.update("jax_enable_x64", True)
import jaxport
from jaxport.golden._store import GoldenStore
from jaxport.harness._worker._case_runs import export_case
from jaxport.harness._worker._jax_setup import configure_jax
configure_jax(sys.argv[4], share_executables=True, own_process=True)  # as a worker does
from jaxport.harness._registry import CaseRegistry
store, prepared = GoldenStore(sys.argv[1]), Path(sys.argv[3])
failing = set(json.loads((prepared / "failing.json").read_text()))
index = {name: entry_id
         for name, entry_id in json.loads((prepared / "index.json").read_text()).items()
         if name not in failing}
by_id = {str(e.entry_id): e for e in store.entries(sys.argv[2])}
cases = CaseRegistry(sys.argv[5].split(","))

def call(deserialize, blob, inputs):
  try:
    call_once(deserialize(blob), inputs)
  except Exception:
    pass  # the other reader's failure, where only one of them runs the form

exported, failed = set(), 0
with concurrent.futures.ThreadPoolExecutor(1) as beside:
  for name, entry_id in index.items():
    entry = by_id[entry_id]
    blob, inputs = (prepared / name).read_bytes(), entry.inputs()
    other = beside.submit(call, jaxport.deserialize, blob, inputs)
    call(lambda b: jax.export.deserialize(bytearray(b)), blob, inputs)
    other.result()
    case = cases.case(entry.manifest.case_id)
    if case is not None and case.case_id not in exported:
      exported.add(case.case_id)
      try:
        export_case(case).serialize()
      except Exception:
        failed += 1
print(json.dumps({"entries": len(index), "exports": len(exported), "failed_exports": failed}))
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


def _child(script: str, *argv: str, bytecode_cache: bool = True) -> dict:
  out = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True,
                       env=_env(bytecode_cache), cwd=ROOT)
  if out.returncode:
    raise SystemExit(f"the floor's child failed:\n{out.stderr[-3000:]}")
  return json.loads(out.stdout.strip().splitlines()[-1])


def prepare_floor(root: Path, platform: str, into: Path) -> dict:
  """Write into ``into`` the form of each entry jax.export runs (untimed); how many of each."""
  return _child(_PREPARE, str(root), platform, str(into))


def _floor(root: Path, platform: str, prepared: Path, bytecode_cache: bool = True) -> dict:
  return _child(_FLOOR, str(root), platform, str(prepared), bytecode_cache=bytecode_cache)


def least(root: Path, platform: str, prepared: Path, cache: Path,
          bytecode_cache: bool = True) -> dict:
  """Wall seconds of the least a warm run does (``_LEAST``) on the compile cache ``cache``,
  the whole process timed; and what it did."""
  start = time.perf_counter()
  done = _child(_LEAST, str(root), platform, str(prepared), str(cache), _CASE_MODULES,
                bytecode_cache=bytecode_cache)
  return {**done, "seconds": time.perf_counter() - start}


def floor_store(root: Path, entry_ids: list[str], into: Path) -> Path:
  """A store of just the entries the floor read, copied from ``root`` into ``into``."""
  for entry_id in entry_ids:
    shutil.copytree(root / entry_id, into / entry_id)
  return into


def _harness(root: Path, platform: str, *extra: str, cache: Path | None = None,
             bytecode_cache: bool = True) -> dict:
  """Wall seconds of the serial harness replay, the CPU seconds of its processes, its timings
  file and its report's summary;
  ``cache``: the compile cache folder it uses (None: ``extra`` says)."""
  with tempfile.TemporaryDirectory() as tmp:
    timings, report = Path(tmp) / "timings.json", Path(tmp) / "report.json"
    cached = [f"--compat-cache-dir={cache}"] if cache is not None else []
    cmd = [sys.executable, "-m", "pytest", "harness/", f"--platform={platform}", "-n", "0",
           "-k", "not fuzz", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           f"--compat-store={root}", f"--compat-timings={timings}",
           f"--compat-report={report}", *cached, *extra]
    cpu_before = children_cpu_seconds()
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(bytecode_cache),
                         cwd=ROOT)
    seconds = time.perf_counter() - start
    reap_orphans()
    cpu = children_cpu_seconds() - cpu_before
    if not timings.exists() or not report.exists():
      raise SystemExit(f"the harness run wrote no timings or report (exit {out.returncode}):\n"
                       f"{out.stdout[-3000:]}{out.stderr[-2000:]}")
    entries = json.loads(report.read_text())["entries"]
    statuses: dict[str, int] = {}
    for e in entries:
      statuses[e["status"]] = statuses.get(e["status"], 0) + 1
    return {"seconds": seconds, "cpu": cpu, "timings": json.loads(timings.read_text()),
            "summary": json.loads(report.read_text())["summary"], "statuses": statuses}


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


def _ratio_line(label: str, seconds: float, base: float, most: float | None = None) -> str:
  """``label``, ``seconds`` and their ratio to ``base``; against the goal ``most`` where given."""
  ratio = f"{seconds / base:.2f}x" if most is None else _against(seconds / base, most)
  return f"{label:78s} {seconds:7.1f} s  {ratio}"


def _against(ratio: float, most: float) -> str:
  """A goal's ratio to three places and whether it holds, judged on the unrounded ratio (a
  ratio printed as the goal itself may be above it)."""
  return f"{ratio:.3f}x  (goal: at most {most:.2f}x, {'met' if ratio <= most else 'missed'})"


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--root", default=str(ROOT / "compat_data"))
  parser.add_argument("--platform", default="cpu")
  parser.add_argument("--reps", type=int, default=1)
  parser.add_argument("--no-cache-too", action="store_true",
                      help="also time a cold harness run with --compat-no-cache")
  parser.add_argument("--no-bytecode-cache", action="store_true",
                      help="keep PYTHONDONTWRITEBYTECODE as set: every harness start compiles "
                           "jaxport's and the project's modules")
  args = parser.parse_args()
  unwind_on_terminate()
  if not adopt_orphans():
    print("this system cannot hand a run's orphans to the benchmark: the CPU seconds below "
          "leave out the harness workers' own")
  root = Path(args.root).resolve()
  bytecode = not args.no_bytecode_cache
  if bytecode:
    write_bytecode(args.platform)
  harness = functools.partial(_harness, bytecode_cache=bytecode)
  floors, colds, warms, uncached, alike = [], [], [], [], []
  least_colds, least_warms = [], []
  with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    prepared = tmp / "prepared"
    prepared.mkdir()
    kinds = prepare_floor(root, args.platform, prepared)["kinds"]
    floor = functools.partial(_floor, root, args.platform, prepared, bytecode_cache=bytecode)
    floors.append(floor())
    subset = None
    if floors[0]["read"] < floors[0]["entries"]:
      subset = floor_store(root, floors[0]["read_ids"], tmp / "store")

    def cold_then_warm(rep: int) -> None:
      cache = tmp / f"cache-{rep}"  # new and empty: the cold run fills it, the warm one reads it
      colds.append(harness(root, args.platform, cache=cache))
      warms.append(harness(root, args.platform, cache=cache))

    def least_cold_then_warm(rep: int) -> None:
      cache = tmp / f"least-{rep}"
      run = functools.partial(least, root, args.platform, prepared, cache,
                              bytecode_cache=bytecode)
      least_colds.append(run())
      least_warms.append(run())

    for rep in range(args.reps):
      steps = [functools.partial(cold_then_warm, rep),
               functools.partial(least_cold_then_warm, rep)]
      if rep:
        steps.insert(0, lambda: floors.append(floor()))
      if subset is not None:
        steps.append(lambda: alike.append(
            harness(subset, args.platform, cache=tmp / f"alike-{len(alike)}")))
      if args.no_cache_too:
        steps.append(lambda: uncached.append(harness(root, args.platform, "--compat-no-cache")))
      for step in (steps if rep % 2 == 0 else steps[::-1]):
        step()
  low = min(floors, key=lambda f: f["seconds"])
  cold = min(colds, key=lambda r: r["seconds"])
  warm = min(warms, key=lambda r: r["seconds"])
  forms = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
  print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.reps} rep(s), "
        f"minimum of each; bytecode {'cached' if bytecode else 'compiled at each start'}")
  print(_ratio_line(f"floor: {low['read']} of {low['entries']} runnable {args.platform} "
                    f"entries run by jax.export ({forms})", low["seconds"], low["seconds"]))
  print(_ratio_line(f"cold: pytest harness/ --platform={args.platform} -n 0 -k 'not fuzz', "
                    f"whole store", cold["seconds"], low["seconds"], COLD_OVER_FLOOR_GOAL))
  if alike:
    goal = min(alike, key=lambda r: r["seconds"])
    print(_ratio_line(f"cold on the floor's {low['read']} entries only (like for like)",
                      goal["seconds"], low["seconds"]))
  print(_ratio_line("warm: the same run again on the cold run's compile cache",
                    warm["seconds"], low["seconds"]))
  print(f"{'warm over cold':78s} {_against(warm['seconds'] / cold['seconds'], WARM_OVER_COLD_GOAL)}")
  cpu = f"  in CPU seconds of pytest and its workers ({warm['cpu']:.1f} s over {cold['cpu']:.1f} s)"
  print(f"{cpu:78s} {warm['cpu'] / cold['cpu']:.2f}x")
  for name, run in (("cold", cold), ("warm", warm)):
    summary = run["summary"]
    print(f"  {name}: {summary['replayed']} entries replayed, statuses {run['statuses']}, "
          f"{summary.get('from_cache', 0)} executables loaded from the compile cache")
  least_cold = min(least_colds, key=lambda r: r["seconds"])
  least_warm = min(least_warms, key=lambda r: r["seconds"])
  failed = least_warm["failed_exports"]
  print(f"least a warm run does: both readers on {least_warm['entries']} entries, side by side, "
        f"and {least_warm['exports']} of today's exports ({failed} failed), no pytest")
  print(_ratio_line("  warm, on its own cold run's compile cache", least_warm["seconds"],
                    low["seconds"]))
  print(_ratio_line("  cold, on a new compile cache", least_cold["seconds"], low["seconds"]))
  for label, ratio in (
      ("  its warm run over its cold run (work added to both runs alike raises it)",
       least_warm["seconds"] / least_cold["seconds"]),
      ("  its warm run over the harness's cold run (a bound on warm over cold)",
       least_warm["seconds"] / cold["seconds"]),
      ("  the harness's warm run over its warm run", warm["seconds"] / least_warm["seconds"])):
    print(f"{label:78s} {ratio:.2f}x")
  entries = sum(cold["timings"]["seconds"].values())
  print(_ratio_line("  of the cold run, the entries' replay in the worker (no start-up, pytest)",
                    entries, low["seconds"]))
  if args.reps > 1:
    # Each repetition's ratios, its runs minutes apart at most: steadier than ratios of
    # minima where the machine's speed drifts between repetitions.
    paired = [r["seconds"] / f["seconds"] for r, f in zip(colds, floors)]
    warm_cold = [w["seconds"] / c["seconds"] for w, c in zip(warms, colds)]
    warm_cold_cpu = [w["cpu"] / c["cpu"] for w, c in zip(warms, colds)]
    lowest = [w["seconds"] / c["seconds"] for w, c in zip(least_warms, colds)]
    own = [w["seconds"] / c["seconds"] for w, c in zip(least_warms, least_colds)]
    for label, ratios in (("cold over floor", paired), ("warm over cold", warm_cold),
                          ("warm over cold in CPU seconds", warm_cold_cpu),
                          ("least warm over harness cold", lowest),
                          ("least warm over least cold", own)):
      print(f"  {label} in each repetition: {', '.join(f'{x:.2f}x' for x in ratios)}; "
            f"median {statistics.median(ratios):.2f}x")
  if uncached:
    slow = min(uncached, key=lambda r: r["seconds"])
    print(_ratio_line("cold with --compat-no-cache (every module compiled)", slow["seconds"],
                      low["seconds"]))
  for name, shown in (("cold", cold), ("warm", warm)):
    print(f"where the {name} run's {shown['seconds']:.1f} s go "
          f"({len(shown['timings']['seconds'])} entries replayed):")
    for part, seconds in breakdown(shown):
      print(f"  {part:55s} {seconds:7.1f} s  {seconds / shown['seconds']:5.1%}")


if __name__ == "__main__":
  main()
