"""Recognising jaxport's own source checkout, whose tools regenerate jaxport's own data.

In that checkout ``jaxport record/replay --with-jax`` run its tools (which record jaxport's
release cases in each release's venv and write the producer x consumer matrix); in every other
project they run the project's own golden items (:mod:`jaxport.cli._with_jax`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

# The folder of a checkout holding the release tools, as path parts relative to its root.
RELEASE_TOOLS = ("harness", "tools")
# The distribution name a checkout's pyproject.toml declares.
DISTRIBUTION = "jaxport"


def release_tool(name: str) -> str:
  """The path of the release tool ``name``, relative to a checkout's root."""
  return str(Path(*RELEASE_TOOLS, name))


def is_checkout(root: Path) -> bool:
  """Whether ``root`` is the root of a jaxport source checkout (its pyproject.toml names the
  jaxport distribution)."""
  try:
    meta = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
  except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
    return False
  project = meta.get("project")
  return isinstance(project, dict) and project.get("name") == DISTRIBUTION


def has_tool(root: Path, name: str) -> bool:
  """Whether ``root`` is a jaxport checkout holding the release tool ``name``."""
  return is_checkout(root) and (root / release_tool(name)).is_file()
