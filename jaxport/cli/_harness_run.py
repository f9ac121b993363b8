"""``jaxport record`` and ``jaxport replay``: run a project's golden items under pytest.

The project is the directory ``--project`` names (default: the working
directory, never one above it); pytest reads that project's configuration, so
``jaxport replay`` runs exactly the golden items ``pytest --compat-only`` runs
there. The flags are the harness plugin's own (``jaxport_pytest``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path

from jaxport._signals import run_forwarding_signals
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.harness._project import Project

logger = logging.getLogger(__name__)

RECORD_FLAG = "--compat-record"
PLATFORM_FLAG = "--compat-platform"
REPORT_FLAG = "--compat-report"
ONLY_FLAG = "--compat-only"
# The progress bar (or plain lines) in place of pytest's dots and percentages.
PROGRESS_ARGS = ("-p", "jaxport.cli._pytest_progress", "-o", "console_output_style=classic")
# Modules the harness needs that only the ``test`` extra installs: module -> package to install.
HARNESS_MODULES = {"pytest": "pytest"}
XDIST_MODULE = ("xdist", "pytest-xdist")


def missing_packages(extra: list[str]) -> list[str]:
  """Packages the harness run needs that this Python cannot import (xdist only for ``-n``)."""
  needed = dict(HARNESS_MODULES)
  if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in extra):
    needed[XDIST_MODULE[0]] = XDIST_MODULE[1]
  return [pkg for module, pkg in needed.items() if importlib.util.find_spec(module) is None]


def pytest_command(action: str, *, platform: str, report: str | None, project: Path,
                   extra: list[str], python: str | None = None) -> list[str]:
  """The pytest command line for ``record`` or ``replay`` (run by ``python``, default this
  interpreter); ``extra`` goes last, unchanged."""
  cmd = [python or sys.executable, "-m", "pytest", str(project), ONLY_FLAG,
         f"{PLATFORM_FLAG}={platform}", *PROGRESS_ARGS]
  if action == "record":
    cmd.append(RECORD_FLAG)
  if report is not None:
    cmd.append(f"{REPORT_FLAG}={Path(report).resolve()}")
  return cmd + _pytest_args(extra)


def _pytest_args(extra: list[str]) -> list[str]:
  """The arguments given for pytest, wherever ``--`` stood among them (before, between or
  after jaxport's own options): each ``--`` only separates, and is dropped."""
  return [a for a in extra if a != "--"]


def read_project(directory: str | os.PathLike, why: str) -> Project:
  """The harness project configured in ``directory`` (as pytest reads it), or a JaxportError
  saying ``why`` it was needed when this Python cannot import pytest."""
  missing = missing_packages([])
  if missing:
    raise JaxportError(
        f"{why} reads the project's pytest configuration, but {sys.executable} cannot import "
        f"{', '.join(missing)}. Install it: pip install {' '.join(missing)} (or jaxport's test "
        "extra), or name what it reads from there by hand.")
  from jaxport.cli import _project  # local: it imports pytest, optional (checked above)
  return _project.read(project_dir(str(directory)), str(directory))


def project_dir(project: str | None) -> Path:
  """The project directory named on the command line, or the working directory."""
  root = Path(project) if project is not None else Path.cwd()
  if not root.is_dir():
    raise GoldenDataError(f"--project {project}: no such directory; pass the directory holding "
                          "the project's pytest configuration")
  return root.resolve()


def run(action: str, *, platform: str, report: str | None, extra: list[str],
        project: str | None = None) -> int:
  """Run the project's golden items with this jax (another release's: ``jaxport.cli._with_jax``)."""
  root = project_dir(project)
  missing = missing_packages(extra)
  if missing:
    raise JaxportError(
        f"{action} runs the harness under pytest, but {sys.executable} cannot import "
        f"{', '.join(missing)}. Install it: pip install {' '.join(missing)} "
        "(or jaxport's test extra).")
  cmd = pytest_command(action, platform=platform, report=report, project=root, extra=extra)
  logger.info("running in %s: %s", root, " ".join(cmd))
  return run_forwarding_signals(cmd, root)
