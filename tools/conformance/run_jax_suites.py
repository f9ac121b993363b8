"""Run JAX's own export test suites through jax and through jaxport, and judge the difference.

Usage (from the repository root, in the venv where jaxport and jax are installed)::

    git clone --depth 1 --branch jax-v$(python -c 'import jax; print(jax.__version__)') \\
        https://github.com/jax-ml/jax /tmp/jax-src
    python -m tools.conformance.run_jax_suites --jax-src /tmp/jax-src

Requirements beyond jaxport's ``test`` extra: the ``conformance`` extra
(``pip install -e ".[test,conformance]"``: ``absl-py``, which JAX's tests import).

For each suite (``--suite``, default all four) and each mode (jax, then
jaxport) it copies the suite from ``--jax-src/tests`` and the back-compat util
from the installed jax into a temporary directory, and runs pytest there with
``tools/conformance/_plugin.py``. In jaxport mode the plugin rebinds
``jax.export``, the util's ``_export`` and ``shape_poly``, and those names in
the test modules, to jaxport (``_shims.py``), and counts calls into jaxport.
Nothing from JAX's repository is written into this one.

It prints a suite x passed/failed/skipped table for both modes and exits 1 if
a jaxport failure is not in ``deviations.json`` (or fails with another message
than its row says), a test jax passes is skipped only under jaxport, a suite
never called jaxport, or a run produced no results. Logs and per-test JSON go to
``--out`` (default: a folder in the temporary directory, printed at the end).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jax

from harness._environment import CONFORMANCE_MODE_ENV, CONFORMANCE_OUT_ENV, CONFORMANCE_UTIL_ENV
from tools.conformance import _report

logger = logging.getLogger("run_jax_suites")

SUITES = ("export_test", "shape_poly_test", "export_back_compat_test",
          "export_serialization_back_compat_test")
REPO_ROOT = Path(__file__).resolve().parents[2]
DEVIATIONS = Path(__file__).with_name("deviations.json")
_UTIL = Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_util.py"
_PYTEST_INI = """[pytest]
markers =
    multiaccelerator: a test that can use several accelerators
    SlurmMultiNodeGpuTest: a multi-node GPU test
"""
_VERSION_RE = re.compile(r"""^_version\s*(?::\s*str)?\s*=\s*["']([^"']+)["']""", re.M)


class RunnerError(Exception):
  """The runner cannot run as asked (bad --jax-src, wrong jax version)."""


def source_version(jax_src: Path) -> str:
  """The jax version a source checkout declares in ``jax/version.py``."""
  path = jax_src / "jax" / "version.py"
  if not path.is_file():
    raise RunnerError(f"{jax_src}: no jax/version.py; --jax-src must be a checkout of jax")
  m = _VERSION_RE.search(path.read_text())
  if not m:
    raise RunnerError(f"{path}: no _version assignment found")
  return m.group(1)


def prepare(jax_src: Path, suites: list[str], work: Path) -> None:
  """Copy the suites and the installed back-compat util into ``work``, with a minimal ini."""
  for suite in suites:
    src = jax_src / "tests" / f"{suite}.py"
    if not src.is_file():
      raise RunnerError(f"{src}: no such file; is --jax-src a jax checkout with tests/?")
    shutil.copyfile(src, work / src.name)
  (work / "util").mkdir(exist_ok=True)
  shutil.copyfile(_UTIL, work / "util" / _UTIL.name)
  (work / "pytest.ini").write_text(_PYTEST_INI)


def run_one(work: Path, out: Path, suite: str, mode: str, pytest_args: list[str],
            timeout: float | None) -> _report.SuiteRun:
  """Run ``suite`` in ``mode`` in a child pytest; returns what it recorded."""
  results = out / f"{suite}.{mode}.json"
  log = out / f"{suite}.{mode}.log"
  results.unlink(missing_ok=True)
  _report.partial_path(results).unlink(missing_ok=True)
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
  env.update({CONFORMANCE_MODE_ENV: mode, CONFORMANCE_OUT_ENV: str(results),
              CONFORMANCE_UTIL_ENV: str(work / "util" / _UTIL.name)})
  cmd = [sys.executable, "-m", "pytest", f"{suite}.py", "-c", "pytest.ini", "--rootdir", ".",
         "-p", "tools.conformance._plugin", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-q", *pytest_args]
  logger.info("running %s under %s (log: %s)", suite, mode, log)
  with log.open("w") as f:
    try:
      status = subprocess.run(cmd, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
      return _report.SuiteRun.load(suite, mode, results, -1,
                                   why_incomplete=f"timed out after {timeout} s")
  return _report.SuiteRun.load(suite, mode, results, status)


def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--jax-src", required=True, type=Path, dest="jax_src",
                 help="a checkout of jax at the tag of the installed jax")
  p.add_argument("--suite", action="append", choices=SUITES, dest="suites",
                 help="run only this suite (repeatable; default: all)")
  p.add_argument("--mode", choices=("both", *_report.MODES), default="both", dest="mode")
  p.add_argument("--out", type=Path, default=None, dest="out",
                 help="folder for logs and per-test JSON (default: a new temporary folder)")
  p.add_argument("--deviations", type=Path, default=DEVIATIONS, dest="deviations")
  p.add_argument("--timeout", type=float, default=None, dest="timeout",
                 help="seconds allowed per suite and mode")
  p.add_argument("--allow-version-mismatch", action="store_true", dest="allow_mismatch",
                 help="run although --jax-src is not at the installed jax's version")
  p.add_argument("--judge-only", action="store_true", dest="judge_only",
                 help="run nothing: judge the per-test JSON already in --out (for example "
                      "after editing the deviation table, or runs of each mode made apart)")
  p.add_argument("pytest_args", nargs="*",
                 help="passed to pytest after '--' (for example -- -x -k basic)")
  args = p.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  if args.judge_only and args.out is None:
    p.error("--judge-only needs --out, the folder of an earlier run")
  try:
    version = source_version(args.jax_src)
    if version != jax.__version__ and not args.allow_mismatch:
      raise RunnerError(f"{args.jax_src} is jax {version} but jax {jax.__version__} is "
                        "installed; check out the tag jax-v" + jax.__version__)
    deviations = _report.load_deviations(args.deviations)
    suites = args.suites or list(SUITES)
    out = args.out or Path(tempfile.mkdtemp(prefix="jaxport-conformance-out-"))
    out.mkdir(parents=True, exist_ok=True)
    modes = _report.MODES if args.mode == "both" else (args.mode,)
    if args.judge_only:
      runs = [_report.SuiteRun.load(suite, mode, out / f"{suite}.{mode}.json", 0)
              for suite in suites for mode in modes]
    else:
      runs = []
      with tempfile.TemporaryDirectory(prefix="jaxport-conformance-") as tmp:
        work = Path(tmp)
        prepare(args.jax_src, suites, work)
        for suite in suites:
          for mode in modes:
            runs.append(run_one(work, out, suite, mode, args.pytest_args, args.timeout))
  except (RunnerError, ValueError, OSError) as e:
    logger.error("error: %s", e)
    return 2
  verdict = _report.judge(runs, deviations)
  sys.stdout.write(_report.table(runs) + "\n\n")
  for suite, tid, row in verdict.listed:
    sys.stdout.write(f"listed ({row.kind}): {suite}::{tid}: {row.reason}\n")
  for row in verdict.stale:
    sys.stdout.write(f"note: deviation row {row.suite}::{row.test} matched only passing tests; "
                     "remove it if the difference is gone\n")
  both = {r.suite for r in runs if r.mode == "jax" and r.results} & {
      r.suite for r in runs if r.mode == "jaxport" and r.results}
  for suite in sorted(both):
    n = sum(1 for d in verdict.differing if d[0] == suite)
    sys.stdout.write(f"{suite}: {n} test(s) with another outcome under jaxport than under jax"
                     " (among the tests both modes finished)\n")
  for suite, tid, theirs, ours in verdict.differing:
    sys.stdout.write(f"  {suite}::{tid}: jax {theirs and theirs.value}, "
                     f"jaxport {ours and ours.value}\n")
  for suite, tid, message in verdict.failing_under_jax:
    sys.stdout.write(f"fails under jax too, with the same message (not a jaxport deviation): "
                     f"{suite}::{tid}: {_report.first_line(message)}\n")
  for problem in verdict.problems:
    sys.stdout.write(f"PROBLEM {problem}\n")
  sys.stdout.write(f"logs and per-test results: {out}\n")
  return 0 if verdict.ok else 1


if __name__ == "__main__":
  sys.exit(main())
