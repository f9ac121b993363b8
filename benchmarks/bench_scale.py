"""How record, replay, audit and report rendering grow with the size of a store.

Run by hand: ``python benchmarks/bench_scale.py [--sizes 100,1000,10000] [--workdir DIR]``.

For each N it writes a synthetic downstream project of N cases (elementwise
functions, one in five a Cholesky that calls LAPACK, one in seven
shape-polymorphic) and measures, in that project:

  record   ``pytest --compat-record -n 0``: wall and CPU seconds per entry, and
           CPU over wall (how much of the time goes waiting on the disk)
  replay   ``pytest -n 0 --compat-report=...``: wall seconds per entry
  rss      the largest resident size among the replay's processes (the worker or
           pytest, ``ru_maxrss`` of the children) and of ``jaxport audit`` with its
           children
  render   ``jaxport report render --html`` of the replay's report: seconds, page size
  audit    ``jaxport audit STORE``: seconds

and prints each figure's ratio to the same figure at the smallest N of 1,000 or more
(or the smallest N). The project lives in ``--workdir`` (default: a folder beside
this repository, on its disk rather than a tmpfs, so that recording's syncs are
real). A run of 1,000 and 10,000 entries takes about 20 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _stopping import stop_child, unwind_on_terminate

ROOT = Path(__file__).resolve().parent.parent
# The page of a 10,000-entry run stays under 4 MB.
PAGE_GOAL_KB = 4096

_CASES = '''
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

N = {n}


def _elementwise(k):
  return lambda x: jnp.sin(x) * (k + 1) + jnp.cos(x * (k % 13 + 1))


def _cholesky(k):
  return lambda x: jnp.linalg.cholesky(x @ x.T + (k + 4) * jnp.eye(x.shape[0], dtype=x.dtype))


def cases():
  out = []
  for k in range(N):
    if k % 5 == 0:
      out.append(Case(f"chol_{{k:05d}}", f"linalg_{{k % 40:02d}}", _cholesky(k),
                      lambda k=k: ((random_matrix(k, (4, 4), np.float32),), {{}}),
                      targets=("lapack_spotrf_ffi",)))
    elif k % 7 == 0:
      out.append(Case(f"poly_{{k:05d}}", f"poly_{{k % 40:02d}}", _elementwise(k),
                      lambda k=k: ((random_matrix(k, (6, 3), np.float32),), {{}}),
                      polymorphic_shapes=("b, 3",)))
    else:
      out.append(Case(f"ew_{{k:05d}}", f"elementwise_{{k % 40:02d}}", _elementwise(k),
                      lambda k=k: ((random_matrix(k, (3, 5), np.float32),), {{}})))
  return out
'''

_PYPROJECT = '''
[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
jaxport_cases = ["scalecases"]
jaxport_store = "golden"
jaxport_stable_targets = "stable_targets.json"
jaxport_tests = ["tests/test_golden.py"]
'''

_JAXPORT = [sys.executable, "-c", "import sys; from jaxport.cli import main; sys.exit(main())"]
_TESTS = "from jaxport.harness.testing import test_record, test_replay  # noqa: F401\n"


def write_project(where: Path, n: int) -> Path:
  """A downstream project of ``n`` cases in ``where/project-N``, with an empty store."""
  project = where / f"project-{n}"
  shutil.rmtree(project, ignore_errors=True)
  (project / "tests").mkdir(parents=True)
  (project / "pyproject.toml").write_text(textwrap.dedent(_PYPROJECT))
  (project / "tests" / "test_golden.py").write_text(_TESTS)
  (project / "scalecases.py").write_text(_CASES.format(n=n))
  (project / "stable_targets.json").write_text(
      json.dumps({"cpu": ["lapack_spotrf_ffi"], "unreachable": {}}))
  return project


def _run(cmd: list[str], cwd: Path) -> dict:
  """Wall and CPU seconds of one command, and the largest RSS (MB) of its process tree."""
  with tempfile.TemporaryFile("w+") as log:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, text=True)
    # wait4 gives this command's own usage, its waited-for descendants included: ru_maxrss
    # is the peak of the largest process among them (kB), not a sum.
    try:
      _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
      stop_child(proc)
      raise
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
      log.seek(0)
      raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{log.read()[-4000:]}")
  return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
          "rc": proc.returncode}


def _step(n: int, what: str, cmd: list[str], cwd: Path) -> dict:
  """:func:`_run`, saying on stderr what runs and how long it took (a size of 10,000 runs
  for minutes)."""
  print(f"N={n}: {what}...", file=sys.stderr, end="", flush=True)
  done = _run(cmd, cwd)
  print(f" {done['wall']:.1f} s", file=sys.stderr, flush=True)
  return done


def measure(where: Path, n: int) -> dict:
  """Every figure for one store size."""
  project = write_project(where, n)
  pytest = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
            "-p", "no:randomly"]
  record = _step(n, "record", [*pytest, "--compat-record"], project)
  entries = sum(1 for _ in (project / "golden").glob("*/*/*/*/manifest.json"))
  replay = _step(n, "replay", [*pytest, "--compat-report=report.json"], project)
  audit = _step(n, "audit", [*_JAXPORT, "audit", "golden", "--no-drift"], project)
  render = _step(n, "render", [*_JAXPORT, "report", "render", "report.json", "--html",
                               "report.html"], project)
  return {"n": n, "entries": entries, "replay_rc": replay["rc"], "audit_rc": audit["rc"],
          "record_s_per_entry": record["wall"] / entries,
          "record_cpu_over_wall": record["cpu"] / record["wall"],
          "replay_s_per_entry": replay["wall"] / entries,
          "replay_rss_mb": replay["rss_mb"], "audit_rss_mb": audit["rss_mb"],
          "audit_s": audit["wall"], "render_s": render["wall"],
          "page_kb": (project / "report.html").stat().st_size / 1024}


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--sizes", default="100,1000,10000")
  ap.add_argument("--workdir", type=Path, default=None)
  ap.add_argument("--keep", action="store_true", help="keep the generated projects")
  args = ap.parse_args()
  unwind_on_terminate()
  where = args.workdir or Path(tempfile.mkdtemp(prefix="bench-scale-", dir=ROOT.parent))
  where.mkdir(parents=True, exist_ok=True)
  sizes = sorted(int(s) for s in args.sizes.split(","))
  rows = []
  try:
    for n in sizes:
      rows.append(measure(where, n))
      print(json.dumps(rows[-1]), flush=True)
  finally:
    if not args.keep:
      shutil.rmtree(where, ignore_errors=True)
  base = next((r for r in rows if r["n"] >= 1000), rows[0])
  keys = ("record_s_per_entry", "record_cpu_over_wall", "replay_s_per_entry", "replay_rss_mb",
          "audit_rss_mb", "audit_s", "render_s", "page_kb")
  print(f"\n{'figure':<22}" + "".join(f"{'N=' + str(r['n']):>12}" for r in rows)
        + f"{'ratio to N=' + str(base['n']):>22}")
  for k in keys:
    ratio = "  ".join(f"{r[k] / base[k]:.2f}x" if base[k] else "-" for r in rows)
    print(f"{k:<22}" + "".join(f"{r[k]:>12.3f}" for r in rows) + f"{ratio:>22}")
  print("\ngoals at 10,000: replay per entry no higher than at 1,000; replay and audit RSS under "
        f"1024 MB; render under 5 s and at most 12x its time at 1,000; record CPU/wall >= 0.8; "
        f"page under {PAGE_GOAL_KB:,} KB (the page is one self-contained file, no assets)")
  for r in rows:
    verdict = "meets" if r["page_kb"] < PAGE_GOAL_KB else "MISSES"
    print(f"page at N={r['n']}: {r['page_kb']:,.0f} KB, {verdict} the {PAGE_GOAL_KB:,} KB goal"
          + (" (the goal is set for 10,000 entries)" if r["n"] != 10_000 else ""))


if __name__ == "__main__":
  main()
