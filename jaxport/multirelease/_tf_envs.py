"""Environments holding one TensorFlow release each, for the ``tf`` reader, built on demand and
cached beside the jax release environments (:mod:`jaxport.multirelease._envs`).

A release's environment is ``<root>/tf-<version>/`` under the same machine-wide cache, built
with the same installer (uv where one runs, else pip) from the package index and nothing else:
``tensorflow-cpu`` pinned to the release, with ``numpy`` and ``flatbuffers`` (which TensorFlow
depends on; the reader reads the envelope with them). No jax goes in: the reader needs none,
the TensorFlow releases pin ``ml-dtypes`` ranges that no one jax release shares, and
TensorFlow imports jax whenever it finds one. The base Python is one of the versions the
release was measured on (``jaxport/releases/tf_releases.json``), found as the jax releases'
is (``JAXPORT_RELEASE_PYTHON`` overrides). Only a release the table holds is built.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from jaxport._environment import RELEASE_PYTHON_ENV, release_python
from jaxport.multirelease import _envs
from jaxport.multirelease._envs import PythonNeed, VenvError
from jaxport.releases._tf_table import TfRelease, tf_releases

logger = logging.getLogger(__name__)

# What the reader needs beside TensorFlow (which depends on both).
READER_REQUIREMENTS = ("numpy", "flatbuffers")
_MARKER = ".jaxport-tf-ready"


def tf_requirements(release: TfRelease) -> list[str]:
  """What the installer puts into the environment of ``release``."""
  return [release.requirement, *READER_REQUIREMENTS]


def tf_env_dir(release: TfRelease, root: str | os.PathLike | None = None) -> Path:
  """Where the environment of TensorFlow ``release`` lives."""
  return Path(root or _envs.default_root()).resolve() / f"tf-{release.version}"


def python_need(release: TfRelease) -> PythonNeed:
  """The Python minor versions ``release`` was measured on, as the base Python's range."""
  minors = sorted(tuple(int(p) for p in v.split(".")) for v in release.pythons)
  names = tuple(f"python{m[0]}.{m[1]}" for m in reversed(minors))
  return PythonNeed(minors[0], minors[-1], names)  # type: ignore[arg-type]


def is_ready(release: TfRelease, root: str | os.PathLike | None = None) -> bool:
  d = tf_env_dir(release, root)
  return (d / _MARKER).is_file() and (d / "bin" / "python").exists()


def find_python(release: TfRelease) -> str:
  """The base Python to build ``release``'s environment with: ``JAXPORT_RELEASE_PYTHON``, else
  the first interpreter that runs and is a version the release was measured on."""
  named = release_python()
  need = python_need(release)
  if named:
    found = shutil.which(named)
    if found is None:
      raise VenvError(f"{RELEASE_PYTHON_ENV}={named} is not an interpreter on PATH (wanted for "
                      f"TensorFlow {release.version}, measured on {need}); set it to the path "
                      "of one, or unset it to let jaxport look for one.")
    got = _envs.interpreter_version(found)
    if got is not None and not need.accepts(got):
      logger.warning("%s=%s is Python %d.%d; TensorFlow %s was measured on %s", RELEASE_PYTHON_ENV,
                     named, *got, release.version, need)
    return found
  tried = []
  for candidate in _envs.candidates(need):
    got = _envs.interpreter_version(candidate)
    if got is not None and need.accepts(got):
      return candidate
    tried.append(candidate)
  raise VenvError(
      f"No {need} found for the environment of TensorFlow {release.version} (the Python it was "
      f"measured on); looked on PATH and in pyenv's versions"
      + (f", tried {', '.join(tried)}" if tried else "") + ". Install one, or set "
      f"{RELEASE_PYTHON_ENV} to the path of one.")


def not_buildable(release: TfRelease, root: str | os.PathLike | None = None) -> str | None:
  """Why ``release``'s environment cannot be had here (no Python it installs on is at hand),
  naming the releases that can; None when it is built or can be."""
  if is_ready(release, root):
    return None
  try:
    find_python(release)
  except VenvError as e:
    here = [r.version for r in tf_releases() if r != release and _buildable(r, root)]
    return (f"{str(e).splitlines()[0]} The TensorFlow releases this machine can serve: "
            + (", ".join(here) if here else "none") + ".")
  return None


def _buildable(release: TfRelease, root: str | os.PathLike | None) -> bool:
  try:
    return is_ready(release, root) or bool(find_python(release))
  except VenvError:
    return False


def ensure_tf_env(release: TfRelease, root: str | os.PathLike | None = None) -> Path:
  """The python of a ready environment of TensorFlow ``release``, built if needed."""
  d = tf_env_dir(release, root)
  python = d / "bin" / "python"
  if is_ready(release, root):
    return python
  base = find_python(release)
  tool = _envs.installer()
  reqs = tf_requirements(release)
  with _envs._locked(d):
    if is_ready(release, root):  # built by another process while this one waited
      return python
    if d.exists():
      logger.info("rebuilding incomplete environment %s", d)
      shutil.rmtree(d)
    logger.info("building the environment of TensorFlow %s with %s and %s (about %.1f GB, "
                "%d s when measured)", release.version, base, tool.name,
                release.cost["installed_gb"], release.cost["install_seconds"])
    try:
      _run(tool.create(base, d), f"creating the environment of TensorFlow {release.version}")
      _run(tool.install(python, reqs), f"installing TensorFlow {release.version} into {d}")
    except VenvError:
      shutil.rmtree(d, ignore_errors=True)
      raise
    (d / _MARKER).write_text(" ".join(reqs) + "\n")
  return python


def _run(cmd: list[str], what: str) -> None:
  """One step of building a TensorFlow environment (:func:`_envs._run`, with its own hint)."""
  _envs._run(cmd, what, hint="a base Python that does not run, or a tensorflow-cpu release the "
                             "package index does not serve for that Python (set "
                             f"{RELEASE_PYTHON_ENV} to the path of another)")
