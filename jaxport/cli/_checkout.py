"""Finding a jaxport source checkout, where the tools that drive one venv per jax release live.

``jaxport bisect`` and ``jaxport record/replay --with-jax`` run those tools; they are
part of jaxport's repository, not of the installed package, so outside a checkout the
subcommands refuse with a :class:`~jaxport.errors.CheckoutError` instead of failing to
start a missing script.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from jaxport.errors import CheckoutError

# The folder of a checkout holding the release-venv tools, as path parts relative to its root.
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


def require_tool(root: Path, name: str, command: str) -> str:
  """The relative path of release tool ``name`` in the checkout ``root``; a CheckoutError
  naming ``command`` when ``root`` is not a checkout holding it."""
  tool = release_tool(name)
  if not is_checkout(root) or not (root / tool).is_file():
    raise CheckoutError(
        f"{command} needs a jaxport source checkout: it runs the release-venv tools of "
        "jaxport's repository, which the installed package does not include, and the project "
        "directory (--project, default: the working directory) is not one. Clone jaxport's "
        "repository and run it there, or pass --project with the checkout's directory.")
  return tool
