"""The ``JAXPORT_*`` environment variables, read in one place.

Each variable has its name here and one accessor that reads it, parses it and refuses a value
it cannot use with an error naming the variable, the value and the fix. A module that sets a
variable for a child process's environment uses the name from here; reading goes through the
accessor. A leaf: it imports no jax, so the pytest side of the harness can use it.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxport.errors import JaxportError, SettingsError

# The process that started a jaxport child (a harness worker, the module parser), as the child
# sees it: set by the parent for its child alone.
PARENT_PID_ENV = "JAXPORT_WORKER_PARENT_PID"
# For tests only: faults the module parser child plants (``KIND:SHA256[,KIND:SHA256...]``).
PARSER_FAULT_ENV = "JAXPORT_TEST_PARSER_FAULT"
# The folder of the machine's release environments (multi-release commands).
RELEASE_ENVS_ENV = "JAXPORT_RELEASE_ENVS"
# The base Python every release environment is built with.
RELEASE_PYTHON_ENV = "JAXPORT_RELEASE_PYTHON"
# How release environments are built: ``uv`` or ``pip``.
INSTALLER_ENV = "JAXPORT_INSTALLER"
INSTALLERS = ("uv", "pip")
# The private folder where the preloading parents of a process and its descendants listen
# (``jaxport._isolation._preloaded``): set by the first process that starts one.
SHARED_PARENTS_ENV = "JAXPORT_PRELOADED_PARENTS"


def worker_parent_pid() -> int | None:
  """The id of the process that started this child (``JAXPORT_WORKER_PARENT_PID``), or None
  when it is unset; a value that is no process id is a ``SettingsError``."""
  text = os.environ.get(PARENT_PID_ENV)
  if text is None:
    return None
  try:
    pid = int(text)
  except ValueError:
    pid = 0
  if pid <= 0:
    raise SettingsError(f"{PARENT_PID_ENV}={text!r} is not a process id; jaxport sets it for its "
                        "own child processes only: unset it.")
  return pid


def parser_faults() -> dict[str, str]:
  """The faults planted for the module parser child (``JAXPORT_TEST_PARSER_FAULT``):
  sha256 -> kind; items without both parts are passed over."""
  out = {}
  for item in (os.environ.get(PARSER_FAULT_ENV) or "").split(","):
    kind, _, digest = item.strip().partition(":")
    if kind and digest:
      out[digest.lower()] = kind
  return out


def release_envs() -> Path | None:
  """The folder ``JAXPORT_RELEASE_ENVS`` names for the release environments (made absolute),
  or None when it is unset or empty."""
  named = os.environ.get(RELEASE_ENVS_ENV)
  return Path(named).expanduser().resolve() if named else None


def release_python() -> str | None:
  """The base Python ``JAXPORT_RELEASE_PYTHON`` names for every release environment, or None
  when it is unset or empty."""
  return os.environ.get(RELEASE_PYTHON_ENV) or None


def installer_choice(error: type[JaxportError] = SettingsError) -> str | None:
  """``uv`` or ``pip`` as ``JAXPORT_INSTALLER`` insists, or None to choose (unset or empty);
  any other value is an ``error`` naming the ones allowed."""
  choice = (os.environ.get(INSTALLER_ENV) or "").strip().lower()
  if choice and choice not in INSTALLERS:
    raise error(f"{INSTALLER_ENV}={choice!r} is not an installer jaxport uses; set it to "
                "uv or pip, or unset it to use uv where one is found.")
  return choice or None


def shared_parents_folder() -> Path | None:
  """The folder ``JAXPORT_PRELOADED_PARENTS`` names, where an ancestor's preloading parents
  listen, or None when it is unset or not an absolute path (then no parent is shared)."""
  named = os.environ.get(SHARED_PARENTS_ENV)
  return Path(named) if named and os.path.isabs(named) else None
