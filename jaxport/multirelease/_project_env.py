"""The environment a project's golden items run in under another jax release.

It holds the release's jax and jaxlib, a wheel of the running jaxport (so the other release
runs the same harness), pytest, and the project's own requirements: the ``dependencies`` and the
``test`` extra its ``pyproject.toml`` declares, jaxport itself left out (the wheel is jaxport).
The project's own package is not installed: it is imported as its pytest configuration says
(``pythonpath``, or a package the requirements name). The installer resolves everything
together with the release's pinned jax, so a requirement that cannot run with that release is
refused there, naming the conflict.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from jaxport.multirelease import _envs
from jaxport.multirelease._envs import VenvError
from jaxport.multirelease._wheel import DISTRIBUTION, running_wheel

logger = logging.getLogger(__name__)

_NAME_RE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# The harness's runner, and xdist for ``-n`` (always: an environment is the same with or without).
HARNESS_REQUIREMENTS = ("pytest", "pytest-xdist")


def requirement_name(requirement: str) -> str | None:
  """The normalised distribution name a requirement string starts with, None if it names none."""
  m = _NAME_RE.match(requirement)
  return re.sub(r"[-_.]+", "-", m[1]).lower() if m else None


def project_requirements(project: Path) -> list[str]:
  """The project's declared requirements (dependencies and the ``test`` extra), jaxport left
  out; none when it has no ``pyproject.toml`` with a ``[project]`` table."""
  path = project / "pyproject.toml"
  if not path.is_file():
    return []
  try:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
  except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
    raise VenvError(f"{path}: cannot be read ({e}); fix it so that its requirements can be "
                    "installed beside the other jax release") from None
  table = data.get("project")
  if table is None:
    return []
  if not isinstance(table, dict):
    raise VenvError(f"{path}: project: expected a table, got {table!r}")
  if "dependencies" in table.get("dynamic", ()):
    logger.warning("%s declares its dependencies dynamic; the release environment holds only "
                   "those its test extra lists", path)
  found = list(_strings(table.get("dependencies", []), f"{path}: project.dependencies"))
  extras = table.get("optional-dependencies", {})
  if not isinstance(extras, dict):
    raise VenvError(f"{path}: project.optional-dependencies: expected a table, got {extras!r}")
  if "test" in extras:
    found += _strings(extras["test"], f"{path}: project.optional-dependencies.test")
  return [r for r in found if requirement_name(r) not in (DISTRIBUTION, None)]


def _strings(value: object, where: str) -> list[str]:
  if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
    raise VenvError(f"{where}: expected a list of requirement strings, got {value!r}")
  return list(value)


def environment_requirements(project: Path, *, root: Path | None = None) -> list[str]:
  """Everything beside the release's own packages: jaxport's wheel, pytest, the project's."""
  wheel = running_wheel(root or _envs.default_root())
  reqs = [str(wheel), *HARNESS_REQUIREMENTS]
  return list(dict.fromkeys(reqs + project_requirements(project)))


def ensure_project_env(version: str, project: Path, *, root: Path | None = None) -> Path:
  """The python of the environment where ``project``'s golden items run with jax ``version``."""
  extra: Sequence[str] = environment_requirements(project, root=root)
  logger.info("environment of jax %s for %s: %s", version, project, " ".join(extra))
  return _envs.ensure_venv(version, root, extra, owner=str(project.resolve()))
