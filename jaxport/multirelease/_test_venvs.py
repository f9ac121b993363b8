"""Test venvs: a release venv's jax plus the test tools, without touching the release venv.

A test venv ``.jax-venvs/test-jax-<version>/`` of a jaxport checkout is a fresh venv whose
site-packages holds the ``test`` extra of its ``pyproject.toml`` (pytest,
hypothesis, xdist, flatc) and a ``.pth`` line that appends the release environment's
site-packages (``jax-<version>/`` of the machine's release environments, built by
:mod:`jaxport.multirelease._envs`). The
release venv stays exactly as built, so recording and replaying with it are
unaffected, and jax/jaxlib are downloaded once per release. The test venv is
created by the release venv's own interpreter, so both have the same base
Python (3.11 up to jax 0.10.2, 3.12 or newer from 0.11.0; see
:func:`jaxport.multirelease._envs.python_need`) and the release's compiled wheels load. jaxport is
installed editable without dependencies, for its ``jaxport`` console script and
its pytest entry point; the runner also puts the repository first on
``PYTHONPATH``. A venv is rebuilt when the test extra or ``pyproject.toml`` (its
packages and entry points) changed since it was built, or when its base Python
is no longer the release venv's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

from jaxport.multirelease import _envs
from jaxport.releases import parse_version

logger = logging.getLogger(__name__)

# Where a checkout keeps its test venvs (git-ignored), below its root.
TEST_FOLDER = ".jax-venvs"
_MARKER = ".jaxport-test-ready"
_PTH_NAME = "jaxport_release_jax.pth"


def extra_requirements(pyproject: Path) -> list[str]:
  """The requirements of the ``test`` extra, read from ``pyproject.toml``."""
  data = tomllib.loads(pyproject.read_text())
  return list(data["project"]["optional-dependencies"]["test"])


def _ready_marker(checkout: Path) -> str:
  """What a test venv built from the checkout's current ``pyproject.toml`` records as built."""
  pyproject = checkout / "pyproject.toml"
  digest = hashlib.sha256(pyproject.read_bytes()).hexdigest()
  return (" ".join(extra_requirements(pyproject)) + f" jaxport@{checkout}"
          + f" pyproject-sha256={digest}\n")


def test_venv_dir(version: str, checkout: Path, root: str | os.PathLike | None = None) -> Path:
  """The test venv of jax ``version``: in ``root``, by default the checkout's own folder."""
  parse_version(version)
  return Path(root or checkout / TEST_FOLDER) / f"test-jax-{version}"


def _site_packages(python: Path) -> str:
  proc = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        capture_output=True, text=True, check=True)
  return proc.stdout.strip()


def ensure_test_venv(version: str, checkout: Path, root: str | os.PathLike | None = None) -> Path:
  """The python of a ready test venv for jax ``version`` of the jaxport ``checkout`` in ``root``
  (default: the checkout's ``.jax-venvs``), creating it (and the release's environment) if
  needed."""
  release_python = _envs.ensure_venv(version)
  d = test_venv_dir(version, checkout, root)
  python = d / "bin" / "python"
  wanted = _ready_marker(checkout)
  marker = d / _MARKER
  same_base = _envs.base_version(d) == _envs.base_version(release_python.parent.parent)
  if marker.is_file() and marker.read_text() == wanted and python.exists() and same_base:
    return python
  if d.exists():
    logger.info("rebuilding test venv %s", d)
    shutil.rmtree(d)
  # `venv` run by a venv's python builds on that venv's base interpreter.
  _envs._run([str(release_python), "-m", "venv", str(d)], f"creating the test venv for jax {version}")
  (Path(_site_packages(python)) / _PTH_NAME).write_text(_site_packages(release_python) + "\n")
  _envs._run([str(python), "-m", "pip", "install", "--quiet", *extra_requirements(checkout / "pyproject.toml")],
              f"installing the test extra into {d}")
  _envs._run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(checkout)],
              f"installing jaxport's console script into {d}")
  marker.write_text(wanted)
  return python
