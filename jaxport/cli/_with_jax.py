"""``jaxport record/replay --with-jax VERSION`` in a project: its golden items under another jax.

For a release jaxport runs on (``MIN_JAX`` and newer), the project's own harness runs in that
release's environment (:mod:`jaxport.multirelease._project_env`: the release's jax, a wheel of
this jaxport, pytest and the project's requirements): the same items, judged the same way, with
the other jax. For an older release, ``replay`` asks that release's own ``jax.export`` to
deserialize, call and reproduce each entry of the project's store (the release replayer);
``record`` needs jaxport's harness and refuses, naming the oldest release it can use.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from jaxport._jaxcompat._version import MIN_JAX
from jaxport._signals import run_forwarding_signals
from jaxport.cli import _harness_run
from jaxport.errors import JaxportError
from jaxport.harness._project import Project
from jaxport.multirelease import _envs, _measured
from jaxport.multirelease._project_env import ensure_project_env
from jaxport.multirelease._replay import PASS, RAN, SKIP, release_env, replay_with
from jaxport.releases import parse_version

logger = logging.getLogger(__name__)
# The outcomes of the release replayer that are not problems: reproduced, ran (outputs not
# compared: the project's own checker), not replayable there (a project's pytree type).
_NOT_PROBLEMS = (PASS, RAN, SKIP)


def runs_jaxport(version: str) -> bool:
  """Whether jaxport's harness itself runs on jax ``version``."""
  return parse_version(version) >= parse_version(MIN_JAX)


def run(action: str, *, version: str, platform: str, report: str | None, project: Path,
        extra: list[str], pytest_command: Callable[[str, str | None], list[str]]) -> int:
  """Run ``action`` with jax ``version`` for ``project``; ``pytest_command(python, report)``
  makes the harness's pytest command line. A replay keeps what it measured per entry
  (:mod:`jaxport.releases._measured`)."""
  if platform != "cpu":
    raise JaxportError(f"--with-jax {version} --platform {platform}: the release environments "
                       "hold the CPU jaxlib only; use --platform cpu")
  config = _harness_run.read_project(project, f"{action} --with-jax")
  # Measurements live beside the project's pytest configuration, where the harness reads them,
  # or in the folder --compat-cache-dir names.
  home = config.root or project
  cache_dir = cache_dir_of(extra, project)
  if runs_jaxport(version):
    python = ensure_project_env(version, project)
    with tempfile.TemporaryDirectory(prefix="jaxport-with-jax-") as tmp:
      report_path = report if report is not None or action == "record" else str(
          Path(tmp) / "report.json")
      cmd = pytest_command(str(python), report_path)
      logger.info("running in %s with jax %s: %s", project, version, " ".join(cmd))
      code = run_forwarding_signals(cmd, project, env=release_env())
      if action == "replay" and Path(report_path).is_file():
        _measured.remember(home, config.store, version,
                           _measured.verdicts_of_report(Path(report_path), version), cache_dir)
    return code
  if action == "record":
    raise JaxportError(
        f"record --with-jax {version}: recording runs jaxport's harness, which runs on jax "
        f"{MIN_JAX} and newer. Record with one of those (or the running jax); replay "
        f"--with-jax {version} replays the project's entries with that release's own jax.export.")
  return replay_old_release(version, config, home, report, cache_dir)


def cache_dir_of(extra: list[str], project: Path) -> Path | None:
  """The folder ``--compat-cache-dir`` names among pytest's arguments (relative to the
  project, where pytest runs), or None."""
  flag = "--compat-cache-dir"
  for i, arg in enumerate(extra):
    if arg.startswith(flag + "="):
      value = arg[len(flag) + 1:]
    elif arg == flag and i + 1 < len(extra):
      value = extra[i + 1]
    else:
      continue
    return (project / value).resolve()
  return None


def replay_old_release(version: str, config: Project, home: Path, report: str | None,
                       cache_dir: Path | None = None) -> int:
  """Replay the project's CPU entries with jax ``version``'s own ``jax.export``; 1 if any fails."""
  from jaxport.golden import GoldenStore
  store = config.store
  ids = [e.entry_id for e in GoldenStore(store).entries("cpu")]
  if not ids:
    raise JaxportError(f"replay --with-jax {version}: the project's store {store} has no cpu "
                       "entries; record some first (jaxport record)")
  python = _envs.ensure_venv(version)
  with tempfile.TemporaryDirectory(prefix=f"jaxport-replay-{version}-") as tmp:
    rows = replay_with(str(python), store, ids, Path(tmp))
  _measured.remember(home, store, version, _measured.verdicts_of_rows(rows, version), cache_dir)
  counts: dict[str, int] = {}
  for row in rows:
    counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    detail = "" if row["outcome"] == PASS else f" at {row.get('stage')}: {row.get('error')}"
    sys.stdout.write(f"jax {version}: {row['outcome']:<5} {row['entry_id']}{detail}\n")
  problems = sum(n for outcome, n in counts.items() if outcome not in _NOT_PROBLEMS)
  sys.stdout.write(f"jax {version}: {len(rows)} entries: " + ", ".join(
      f"{counts.get(o, 0)} {o}" for o in (*_NOT_PROBLEMS, *sorted(set(counts) - set(_NOT_PROBLEMS))))
      + "\n")
  if report is not None:
    Path(report).write_text(json.dumps({"jax": version, "entries": rows}, indent=2) + "\n")
  return 1 if problems else 0
