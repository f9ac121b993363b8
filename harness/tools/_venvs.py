"""Virtual environments holding one older jax release each, created on demand.

Each release lives in ``.jax-venvs/jax-<version>/`` (ignored by git), built
with the system Python 3.11 (``python3.11 -m venv``) and pip. A marker file
written after a successful install lets later runs reuse the venv; a venv
without the marker (an interrupted install) is rebuilt.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from jaxport.harness._releases import parse_version

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO_ROOT / ".jax-venvs"
_MARKER = ".jaxport-release-ready"
_BASE_PYTHON_VAR = "JAXPORT_RELEASE_PYTHON"


class VenvError(RuntimeError):
  """A release venv could not be created or used."""


def requirements(version: str) -> list[str]:
  """What pip installs into the venv of jax ``version`` (pinned jax and jaxlib)."""
  v = parse_version(version)
  reqs = [f"jax=={version}", f"jaxlib=={version}", "flatbuffers"]
  if v < (0, 6, 2):
    reqs.append("absl-py")  # Older jaxlib wheels import it without declaring it.
  if v <= (0, 4, 30):
    reqs.append("numpy<2")  # Built against the numpy 1.x ABI.
  return reqs


def venv_dir(version: str, root: str | os.PathLike | None = None) -> Path:
  parse_version(version)
  return Path(root or DEFAULT_ROOT) / f"jax-{version}"


def venv_python(version: str, root: str | os.PathLike | None = None) -> Path:
  return venv_dir(version, root) / "bin" / "python"


def is_ready(version: str, root: str | os.PathLike | None = None) -> bool:
  d = venv_dir(version, root)
  return (d / _MARKER).is_file() and (d / "bin" / "python").exists()


def ensure_venv(version: str, root: str | os.PathLike | None = None) -> Path:
  """The python of a ready venv for jax ``version``, creating it if needed."""
  d = venv_dir(version, root)
  python = d / "bin" / "python"
  if is_ready(version, root):
    return python
  if d.exists():
    logger.info("rebuilding incomplete venv %s", d)
    shutil.rmtree(d)
  d.parent.mkdir(parents=True, exist_ok=True)
  base = _base_python()
  _run([base, "-m", "venv", str(d)], f"creating the venv for jax {version}")
  _run([str(python), "-m", "pip", "install", "--quiet", *requirements(version)],
       f"installing jax {version} into {d}")
  (d / _MARKER).write_text(" ".join(requirements(version)) + "\n")
  return python


def _base_python() -> str:
  """The system Python 3.11 (not a venv's copy), unless JAXPORT_RELEASE_PYTHON names another."""
  name = os.environ.get(_BASE_PYTHON_VAR)
  if name is None and sys.version_info[:2] == (3, 11):
    return getattr(sys, "_base_executable", sys.executable)
  name = name or "python3.11"
  found = shutil.which(name)
  if found is None:
    raise VenvError(f"{name} is not on PATH; release venvs are built with it "
                    f"(set {_BASE_PYTHON_VAR} to another Python 3.11).")
  return found


def _run(cmd: list[str], what: str) -> None:
  logger.info("%s: %s", what, " ".join(cmd))
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    raise VenvError(
        f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}\n"
        "Check that the release exists on the package index for this Python "
        "(pip index versions jax) and that python3.11 is installed.")
