"""``jaxport record`` and ``jaxport replay``: run the compat harness under pytest.

The flags are the harness plugin's own (``harness/conftest.py``); this module
only assembles the command line and runs it from the repository root, so
``jaxport replay`` behaves exactly like ``pytest harness/ --platform=cpu``.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
from pathlib import Path

from jaxport.errors import GoldenDataError, JaxportError
from jaxport.cli._relower import find_repo_root

logger = logging.getLogger(__name__)

RECORD_FLAG = "--record"
PLATFORM_FLAG = "--platform"
REPORT_FLAG = "--compat-report"
# The progress bar (or plain lines) in place of pytest's dots and percentages.
PROGRESS_ARGS = ("-p", "jaxport.cli._pytest_progress", "-o", "console_output_style=classic")
# Modules the harness needs that only the ``test`` extra installs: module -> package to install.
HARNESS_MODULES = {"pytest": "pytest", "hypothesis": "hypothesis"}
XDIST_MODULE = ("xdist", "pytest-xdist")


def missing_packages(extra: list[str]) -> list[str]:
  """Packages the harness run needs that this Python cannot import (xdist only for ``-n``)."""
  needed = dict(HARNESS_MODULES)
  if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in extra):
    needed[XDIST_MODULE[0]] = XDIST_MODULE[1]
  return [pkg for module, pkg in needed.items() if importlib.util.find_spec(module) is None]


def pytest_command(action: str, *, platform: str, report: str | None,
                   extra: list[str]) -> list[str]:
  """The pytest command line for ``record`` or ``replay``; ``extra`` goes last, unchanged."""
  cmd = [sys.executable, "-m", "pytest", "harness/", f"{PLATFORM_FLAG}={platform}",
         *PROGRESS_ARGS]
  if action == "record":
    cmd.append(RECORD_FLAG)
  if report is not None:
    cmd.append(f"{REPORT_FLAG}={Path(report).resolve()}")
  if extra and extra[0] == "--":
    extra = extra[1:]
  return cmd + list(extra)


def release_tool_command(action: str, *, with_jax: str, report: str | None,
                         extra: list[str]) -> list[str]:
  """``record``/``replay`` with another jax release: the multi-release tools of harness/tools/
  (``docs/multi-release.md``); for ``replay``, ``report`` is the folder of the matrix."""
  if extra and extra[0] == "--":
    extra = extra[1:]
  if action == "record":
    return [sys.executable, "harness/tools/record_with_jax.py", "--jax", with_jax] + list(extra)
  out = Path(report or f"reports/with-jax-{with_jax}").resolve()
  return [sys.executable, "harness/tools/replay_with_jax.py", "--jax", with_jax, "--out",
          str(out)] + list(extra)


def run(action: str, *, platform: str, report: str | None, extra: list[str],
        repo_root: Path | None = None, with_jax: str | None = None) -> int:
  """Run the harness (or, ``with_jax``, a multi-release tool) from the repository root."""
  root = repo_root or find_repo_root()
  if root is None:
    raise GoldenDataError(
        f"no harness/ found at or above {Path.cwd()}; run it from the "
        "jaxport repository (the directory holding harness/ and compat_data/).")
  if with_jax is not None:
    cmd = release_tool_command(action, with_jax=with_jax, report=report, extra=extra)
  else:
    missing = missing_packages(extra)
    if missing:
      raise JaxportError(
          f"{action} runs the harness under pytest, but {sys.executable} cannot import "
          f"{', '.join(missing)}. Install the test extra: pip install -e '.[test]' from the "
          f"repository root (or: pip install {' '.join(missing)}).")
    cmd = pytest_command(action, platform=platform, report=report, extra=extra)
  logger.info("running in %s: %s", root, " ".join(cmd))
  return subprocess.run(cmd, cwd=root, check=False).returncode
