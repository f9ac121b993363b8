"""Run a jaxport checkout's test suite and its CPU harness replay under each supported jax release.

The checkout's ``tools/release_suites/suites_with_jax.py`` is the command:

    python tools/release_suites/suites_with_jax.py --supported --out reports/releases
    python tools/release_suites/suites_with_jax.py --jax 0.9.2 --jax 0.10.1 --out reports/releases
    python tools/release_suites/suites_with_jax.py --jax 0.10.0 --suite tests -- -k vmap
    python tools/release_suites/suites_with_jax.py --supported --list   # each release's Python, no run

Each release runs in its test venv ``.jax-venvs/test-jax-<version>`` (the
release venv's jax plus the ``test`` extra, see :mod:`._test_venvs`) with the
checkout first on ``PYTHONPATH``; ``--current`` adds this interpreter's jax.
For each release it runs ``pytest tests/`` and ``pytest harness/
--platform=cpu`` and writes ``releases.json`` and ``releases.md`` to ``--out``:
a table of release x passed/failed/skipped per suite. The exit status is 1 if
any suite failed under any release.

Each release's venvs are built on the Python it installs on (``_envs.python_need``):
3.11 for jax 0.10.2 and older, 3.12 or newer for 0.11.0 and newer, so one run
covers every release jaxport serves when both are installed. A release
whose venv cannot be built (its Python missing, say) is a failed row naming the
cause, and the other releases still run. ``--list`` prints each release's
Python and venv state without building anything.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version
from jaxport.multirelease import _envs, _test_venvs
from jaxport.releases import served_releases

logger = logging.getLogger(__name__)

SUITES = {
    "tests": ["tests"],
    "harness": ["harness", "--platform=cpu"],
}


def supported_releases() -> tuple[str, ...]:
  """The releases jaxport serves, oldest first (``jaxport.releases.served_releases``)."""
  return served_releases()


@dataclasses.dataclass(frozen=True)
class SuiteResult:
  """Counts from one pytest run's JUnit XML; ``returncode`` is pytest's exit status."""
  suite: str
  passed: int
  failed: int
  errors: int
  skipped: int
  returncode: int
  failures: tuple[str, ...] = ()

  @property
  def ok(self) -> bool:
    return self.returncode == 0 and not self.failed and not self.errors


def read_junit(path: Path, suite: str, returncode: int) -> SuiteResult:
  """Counts and failing test ids from a JUnit XML file (an unreadable file counts as an error)."""
  try:
    root = ET.parse(path).getroot()
  except (OSError, ET.ParseError) as e:
    return SuiteResult(suite, 0, 0, 1, 0, returncode or 1, (f"no JUnit report: {e}",))
  counts = {"failed": 0, "errors": 0, "skipped": 0, "passed": 0}
  failures = []
  for case in root.iter("testcase"):
    name = f"{case.get('classname', '')}::{case.get('name', '')}"
    if case.find("failure") is not None:
      counts["failed"] += 1
      failures.append(name)
    elif case.find("error") is not None:
      counts["errors"] += 1
      failures.append(name)
    elif case.find("skipped") is not None:
      counts["skipped"] += 1
    else:
      counts["passed"] += 1
  return SuiteResult(suite, returncode=returncode, failures=tuple(failures), **counts)


def suite_env(checkout: Path) -> dict[str, str]:
  """The environment for a release's pytest: the checkout first on PYTHONPATH, CPU only."""
  env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
  env["PYTHONPATH"] = os.pathsep.join([str(checkout)] + (
      [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
  env["JAX_PLATFORMS"] = "cpu"
  return env


def setup_failure(suite: str, error: Exception) -> SuiteResult:
  """The result of a suite that could not run because its release's venv was not built."""
  return SuiteResult(suite, 0, 0, 1, 0, 1, (f"no venv: {str(error).splitlines()[0]}",))


def describe(version: str, checkout: Path, root: str | os.PathLike | None = None
             ) -> tuple[bool, str]:
  """One ``--list`` line for jax ``version``: its Python and what is built; False if it cannot build."""
  need = _envs.python_need(version)
  test_dir = _test_venvs.test_venv_dir(version, checkout, root)
  if _envs.is_ready(version):
    built = f"venv ready (Python {_envs.base_version(_envs.venv_dir(version)) or '?'})"
    built += ", test venv built" if (test_dir / "bin" / "python").exists() else ""
    return True, f"{version:<10} {str(need):<22} {built}"
  try:
    python = _envs.find_python(version)
  except _envs.VenvError as e:
    return False, f"{version:<10} {str(need):<22} MISSING: {e}"
  return True, f"{version:<10} {str(need):<22} venv to build with {python}"


def run_suite(python: str, suite: str, out: Path, label: str, workers: str,
              extra: list[str], checkout: Path) -> SuiteResult:
  """Run ``suite`` of the checkout with ``python`` (a test venv's), counted from its JUnit XML."""
  junit = out / f"junit-{suite}-jax-{label}.xml"
  log = out / f"log-{suite}-jax-{label}.txt"
  cmd = [python, "-m", "pytest", *SUITES[suite], "-n", workers, "-q", "-p", "no:cacheprovider",
         f"--junitxml={junit}", *extra]
  logger.info("jax %s, %s: %s", label, suite, " ".join(cmd))
  with log.open("w") as f:
    proc = subprocess.run(cmd, cwd=checkout, env=suite_env(checkout), stdout=f,
                          stderr=subprocess.STDOUT)
  result = read_junit(junit, suite, proc.returncode)
  logger.info("jax %s, %s: %d passed, %d failed, %d errors, %d skipped (log %s)", label, suite,
              result.passed, result.failed, result.errors, result.skipped, log)
  return result


def table(results: dict[str, list[SuiteResult]]) -> str:
  """The Markdown summary: one row per release, passed/failed/skipped per suite."""
  suites = sorted({r.suite for rows in results.values() for r in rows}, key=list(SUITES).index)
  head = "| jax | " + " | ".join(f"{s} passed | {s} failed | {s} skipped" for s in suites) + " | result |"
  lines = [head, "|" + "---|" * (2 + 3 * len(suites))]
  for release, rows in results.items():
    by_suite = {r.suite: r for r in rows}
    cells = []
    for s in suites:
      r = by_suite.get(s)
      cells += ["-", "-", "-"] if r is None else [str(r.passed), str(r.failed + r.errors),
                                                  str(r.skipped)]
    verdict = "pass" if all(r.ok for r in rows) else "FAIL"
    lines.append(f"| {release} | " + " | ".join(cells) + f" | {verdict} |")
  failing = [f"- jax {release}: {name}" for release, rows in results.items()
             for r in rows for name in r.failures]
  if failing:
    lines += ["", "Failing tests:", *failing]
  return "\n".join(lines) + "\n"


def main(argv: list[str] | None, checkout: Path) -> int:
  """The command: run the suites of the jaxport ``checkout`` under the releases ``argv`` names."""
  parser = argparse.ArgumentParser(
      description="Run tests/ and the CPU harness replay under each supported jax release.")
  parser.add_argument("--jax", action="append", default=[], help="release to test (repeatable)")
  parser.add_argument("--supported", action="store_true",
                      help="every release jaxport serves (jaxport.releases.served_releases)")
  parser.add_argument("--current", action="store_true", help="also this interpreter's jax")
  parser.add_argument("--suite", choices=[*SUITES, "all"], default="all")
  parser.add_argument("-n", "--workers", default="2", help="pytest-xdist workers per run")
  parser.add_argument("--venvs", default=None, help="folder of the test venvs (default: this checkout's .jax-venvs)")
  parser.add_argument("--out", help="folder for releases.json, releases.md and logs")
  parser.add_argument("--list", action="store_true",
                      help="print each release's Python and venv state, run nothing "
                           "(every tested release unless --jax names some)")
  parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  releases = list(args.jax)
  if args.supported:
    releases += [v for v in supported_releases() if v not in releases]
  if args.list:
    lines = [describe(v, checkout, args.venvs) for v in releases or supported_releases()]
    print("\n".join(line for _, line in lines))
    return 0 if all(ok for ok, _ in lines) else 1
  if not releases and not args.current:
    parser.error("name at least one release: --jax VERSION, --supported or --current")
  if args.out is None:
    parser.error("--out is required to run the suites")
  out = Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  suites = list(SUITES) if args.suite == "all" else [args.suite]
  results: dict[str, list[SuiteResult]] = {}
  pythons: dict[str, str] = {}
  for v in releases:
    try:
      pythons[v] = str(_test_venvs.ensure_test_venv(v, checkout, args.venvs))
    except _envs.VenvError as e:
      logger.error("jax %s: %s", v, e)
      results[v] = [setup_failure(s, e) for s in suites]
  if args.current:
    pythons[installed_jax_version()] = sys.executable
  for release, python in pythons.items():
    results[release] = [run_suite(python, s, out, release, args.workers, args.pytest_args,
                                  checkout) for s in suites]
  results = {r: results[r] for r in [*releases, *pythons] if r in results}
  (out / "releases.json").write_text(json.dumps(
      {release: [dataclasses.asdict(r) for r in rows] for release, rows in results.items()},
      indent=1) + "\n")
  text = table(results)
  (out / "releases.md").write_text(text)
  print(text)
  return 0 if all(r.ok for rows in results.values() for r in rows) else 1

