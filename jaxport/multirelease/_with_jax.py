"""``jaxport record/replay --with-jax VERSION`` in a project: its golden items under another jax.

The command line reads the project and makes the harness's pytest command line
(``jaxport.cli._with_jax``); this builds the release's environment and runs there.

For a release jaxport runs on (``MIN_JAX`` and newer), the project's own harness runs in that
release's environment (:mod:`jaxport.multirelease._project_env`: the release's jax, a wheel of
this jaxport, pytest and the project's requirements): the same items, judged the same way, with
the other jax. For an older release, ``replay`` asks that release's own ``jax.export`` to
deserialize, call and reproduce each entry of the project's store (the release replayer);
``record`` needs jaxport's harness and refuses, naming the oldest release it can use. A project
that lists release cases (``jaxport_release_cases``) records those with the release's own
``jax.export`` instead, under any release (:mod:`jaxport.multirelease._record`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from jaxport._jaxcompat._version import MIN_JAX
from jaxport._signals import run_forwarding_signals
from jaxport.errors import JaxportError
from jaxport.harness._project import Project
from jaxport.report import load_report
from jaxport.golden import GoldenStore
from jaxport.multirelease import _record
from jaxport.multirelease import _envs, _measured
from jaxport.multirelease._project_env import ensure_project_env
from jaxport.harness._judge._release_runs import exit_status_with_skips, judge_row
from jaxport.multirelease._replay import release_env, replay_with
from jaxport.releases import parse_version
from jaxport._platforms import is_host

logger = logging.getLogger(__name__)
# How a row the release replayer could not replay there is shown (it has no status).
NOT_REPLAYED = "not replayed"


def runs_jaxport(version: str) -> bool:
  """Whether jaxport's harness itself runs on jax ``version``."""
  return parse_version(version) >= parse_version(MIN_JAX)


def run(action: str, *, version: str, platform: str, report: str | None, project: Path,
        config: Project, extra: list[str],
        pytest_command: Callable[[str, str | None], list[str]]) -> int:
  """Run ``action`` with jax ``version`` for ``project`` (configured as ``config``);
  ``pytest_command(python, report)`` makes the harness's pytest command line. A replay keeps
  what it measured per entry (:mod:`jaxport.releases._measured`)."""
  if not is_host(platform):
    raise JaxportError(f"--with-jax {version} --platform {platform}: the release environments "
                       "hold the CPU jaxlib only; use --platform cpu")
  if action == "record" and config.release_case_modules:
    return record_release_cases(version, config, report, extra)
  # Measurements live beside the project's pytest configuration, where the harness reads them,
  # or in the folder --compat-cache-dir names.
  home = config.root or project
  cache_dir = cache_dir_of(extra, project)
  if runs_jaxport(version):
    python = ensure_project_env(version, project)
    if action == "record":
      cmd = pytest_command(str(python), report)
      logger.info("running in %s with jax %s: %s", project, version, " ".join(cmd))
      return run_forwarding_signals(cmd, project, env=release_env())
    return _replay_in_release_env(version, python, project, home, config.store, report,
                                  pytest_command, cache_dir)
  if action == "record":
    raise JaxportError(
        f"record --with-jax {version}: recording runs jaxport's harness, which runs on jax "
        f"{MIN_JAX} and newer. Record with one of those (or the running jax); replay "
        f"--with-jax {version} replays the project's entries with that release's own jax.export.")
  return replay_old_release(version, config, home, report, cache_dir)


def _replay_in_release_env(version: str, python: Path, project: Path, home: Path, store: Path,
                           report: str | None,
                           pytest_command: Callable[[str, str | None], list[str]],
                           cache_dir: Path | None = None) -> int:
  """Replay the project's items in the release environment; keep what this run measured.

  The harness writes its report into a folder this run made, so only a report this run wrote
  is read (a file an earlier run left at ``report`` is never taken for it), and it must be
  the report of a run under ``version``. It is then copied to ``report``."""
  with tempfile.TemporaryDirectory(prefix="jaxport-with-jax-") as tmp:
    written = Path(tmp) / "report.json"
    cmd = pytest_command(str(python), str(written))
    logger.info("running in %s with jax %s: %s", project, version, " ".join(cmd))
    code = run_forwarding_signals(cmd, project, env=release_env())
    if not written.is_file():
      logger.error("the replay under jax %s wrote no report (exit code %d): nothing was "
                   "measured, and no measurement is kept%s", version, code,
                   "" if report is None else f"; {report} is not this run's report")
      return code or 1
    verdicts = _measured.verdicts_of_report(written, version)
    skipped = _measured.kernel_skips(written, version)
    _measured.remember(home, store, version, verdicts,
                       _measured.replayed_blobs(written, version), cache_dir=cache_dir)
    if report is not None:
      Path(report).parent.mkdir(parents=True, exist_ok=True)
      shutil.copyfile(written, report)
    return _code_with_kernel_skips(code, written, version, skipped, python)


def _code_with_kernel_skips(code: int, report_path: Path, version: str,
                            skipped: dict[str, str], python: Path) -> int:
  """The replay's exit code once the entries whose project kernel did not register under
  ``version`` count as skipped, not failed (the judge's :func:`exit_status_with_skips`). The
  summary names the release environment's ``python``, whose jax's FFI headers the kernel is
  rebuilt with."""
  if not skipped:
    return code
  for entry_id, why in skipped.items():
    sys.stdout.write(f"jax {version}: skip  {entry_id}: {why}\n")
  run = load_report(report_path)
  sys.stdout.write(f"jax {version}: {len(skipped)} of {len(run.entries)} entries skipped: the "
                   "project's native kernel does not register under this release; they are not "
                   f"measured. To measure them, build the kernel with {python} (its jax's "
                   "headers: jax.ffi.include_dir()) and replay again\n")
  if len(skipped) == len(run.entries):
    logger.error("every entry replayed under jax %s was skipped (its project kernel does not "
                 "register there): nothing was measured, which is not a pass", version)
  return exit_status_with_skips(code, run.entries, bool(run.session_failures), skipped)


def cache_dir_of(extra: list[str], project: Path) -> Path | None:
  """The folder ``--compat-cache-dir`` names among pytest's arguments (relative to the
  project, where pytest runs), or None. Made absolute, not resolved: a link there is left for
  the measurements' readers and writers to refuse, never followed."""
  flag = "--compat-cache-dir"
  for i, arg in enumerate(extra):
    if arg.startswith(flag + "="):
      value = arg[len(flag) + 1:]
    elif arg == flag and i + 1 < len(extra):
      value = extra[i + 1]
    else:
      continue
    return Path(os.path.abspath(project / value))
  return None


def replay_old_release(version: str, config: Project, home: Path, report: str | None,
                       cache_dir: Path | None = None) -> int:
  """Replay the project's CPU entries with jax ``version``'s own ``jax.export``; 1 if any fails."""
  store = config.store
  ids = [e.entry_id for e in GoldenStore(store).entries("cpu")]
  if not ids:
    raise JaxportError(f"replay --with-jax {version}: the project's store {store} has no cpu "
                       "entries; record some first (jaxport record)")
  effects = config.effect_files()
  python = _envs.ensure_venv(version)
  with tempfile.TemporaryDirectory(prefix=f"jaxport-replay-{version}-") as tmp:
    rows = replay_with(str(python), store, ids, Path(tmp), effects=effects)
  _measured.remember(home, store, version, _measured.verdicts_of_rows(rows, version),
                     cache_dir=cache_dir)
  runs = [judge_row(row, version) for row in rows]
  counts: dict[str, int] = {}
  for r in runs:
    shown = NOT_REPLAYED if r.status is None else str(r.status)
    counts[shown] = counts.get(shown, 0) + 1
    detail = "" if r.passed else f" at {r.stage}: {r.error if r.status else r.detail}"
    sys.stdout.write(f"jax {version}: {shown:<5} {r.entry_id}{detail}\n")
  problems = sum(r.failed for r in runs)
  sys.stdout.write(f"jax {version}: {len(rows)} entries: " + ", ".join(
      f"{n} {shown}" for shown, n in sorted(counts.items())) + "\n")
  if report is not None:
    entries = [{**row, "status": None if r.status is None else str(r.status)}
               for row, r in zip(rows, runs)]
    Path(report).write_text(json.dumps({"jax": version, "entries": entries}, indent=2) + "\n")
  return 1 if problems else 0


def record_release_cases(version: str, config: Project, report: str | None,
                         extra: list[str]) -> int:
  """Record the project's release cases (``jaxport_release_cases``) with jax ``version``'s own
  ``jax.export`` into its store; ``extra`` may name cases (``--case ID``, repeatable)."""
  if report is not None:
    raise JaxportError(f"record --with-jax {version} --compat-report {report}: recording the "
                       "project's release cases writes no harness report; leave the option out")
  cases = case_ids(extra, version)
  files = [config.module_file(name, "jaxport_release_cases") for name in config.release_case_modules]
  result = _record.record(version, config.store, files, cases=cases)
  sys.stdout.write(_record.summary(result))
  return 0


def case_ids(extra: list[str], version: str) -> list[str]:
  """The case ids ``--case ID`` (or ``--case=ID``) names among the arguments after the
  command; anything else is refused, since no pytest runs."""
  ids, rest = [], [a for a in extra if a != "--"]
  while rest:
    arg = rest.pop(0)
    if arg.startswith("--case="):
      ids.append(arg[len("--case="):])
    elif arg == "--case" and rest:
      ids.append(rest.pop(0))
    else:
      raise JaxportError(f"record --with-jax {version}: {arg!r}: recording the project's release "
                         "cases runs no pytest and takes only --case ID (repeatable) after the "
                         "command")
  return ids
