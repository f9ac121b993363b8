"""jaxport's own release venvs: the package's release environments
(:mod:`jaxport.multirelease._envs`), kept in this checkout's ``.jax-venvs/`` so that the tools
regenerating jaxport's data, the nightly and the tests share one folder."""

from __future__ import annotations

import os
from pathlib import Path

from jaxport.multirelease import _envs
from jaxport.multirelease._envs import _MARKER as _MARKER
from jaxport.multirelease._envs import PYTHON_311 as PYTHON_311
from jaxport.multirelease._envs import PYTHON_312_PLUS as PYTHON_312_PLUS
from jaxport.multirelease._envs import VenvError as VenvError
from jaxport.multirelease._envs import _run as _run
from jaxport.multirelease._envs import base_version as base_version
from jaxport.multirelease._envs import find_python as find_python
from jaxport.multirelease._envs import interpreter_version as interpreter_version
from jaxport.multirelease._envs import python_need as python_need
from jaxport.multirelease._envs import requirements as requirements
from jaxport.releases import parse_version as parse_version

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO_ROOT / ".jax-venvs"


def venv_dir(version: str, root: str | os.PathLike | None = None) -> Path:
  return _envs.venv_dir(version, root or DEFAULT_ROOT)


def venv_python(version: str, root: str | os.PathLike | None = None) -> Path:
  return _envs.venv_python(version, root or DEFAULT_ROOT)


def is_ready(version: str, root: str | os.PathLike | None = None) -> bool:
  return _envs.is_ready(version, root or DEFAULT_ROOT)


def ensure_venv(version: str, root: str | os.PathLike | None = None) -> Path:
  """The python of this checkout's ready venv of jax ``version``, built if needed."""
  return _envs.ensure_venv(version, root or DEFAULT_ROOT)
