"""Environments holding one jax release each, built on demand and cached per machine.

Each release's environment is ``<root>/jax-<version>/`` (``<root>/jax-<version>-<key>/`` when it
also holds jaxport and a project's requirements; :func:`env_key`), where ``root`` is
``$JAXPORT_RELEASE_ENVS``, else ``$XDG_CACHE_HOME/jaxport/release-envs`` (``~/.cache`` without
it): one cache per machine, shared by every project. It is built with a base Python the release
installs on (:func:`python_need`): jax 0.10.2 and older with Python 3.11, jax 0.11.0 and newer
with Python 3.12 or newer (the package index has no Python 3.11 wheels of them). The base
Python is the running interpreter when it fits, else the first that runs and fits of
``python3.11`` (or ``python3.13``, ``python3.12``) on ``PATH`` and the interpreters under
``$(pyenv root)/versions``, newest first; ``JAXPORT_RELEASE_PYTHON`` names one for every release
instead. Nothing is downloaded but packages.

The installer is uv where one is found (``uv`` on ``PATH``, or the ``uv`` package beside
jaxport): its shared cache hard-links packages into each environment, so nine releases cost
little more disk than one. Without uv, or with ``JAXPORT_INSTALLER=pip``, each environment is
a venv filled by its own pip. A marker file written after a successful install lets later runs
reuse the environment; one without the marker (an interrupted install) is rebuilt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from jaxport._files import holding_lock
from jaxport._environment import (INSTALLER_ENV, RELEASE_PYTHON_ENV, installer_choice, release_envs,
                                  release_python)
from jaxport.errors import JaxportError
from jaxport.releases import parse_version

logger = logging.getLogger(__name__)

_MARKER = ".jaxport-release-ready"
_OWNER = ".jaxport-owner"
# The first jax release the package index serves only for Python 3.12 and newer.
FIRST_PY312_RELEASE = (0, 11, 0)
_PYENV_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")


class VenvError(JaxportError, RuntimeError):
  """A release venv could not be created or used."""


@dataclasses.dataclass(frozen=True)
class PythonNeed:
  """The Python minor versions a release's venv may be built with, ``minimum`` to ``maximum``."""
  minimum: tuple[int, int]
  maximum: tuple[int, int] | None
  path_names: tuple[str, ...]  # looked up on PATH, in this order

  def accepts(self, version: tuple[int, int]) -> bool:
    return self.minimum <= version and (self.maximum is None or version <= self.maximum)

  def __str__(self) -> str:
    low = "Python %d.%d" % self.minimum
    if self.maximum == self.minimum:
      return low
    return f"{low} or newer" if self.maximum is None else low + " to %d.%d" % self.maximum


PYTHON_311 = PythonNeed((3, 11), (3, 11), ("python3.11",))
PYTHON_312_PLUS = PythonNeed((3, 12), None, ("python3.13", "python3.12"))


def python_need(version: str) -> PythonNeed:
  """Which Python jax ``version`` installs on: 3.11 up to 0.10.2, 3.12 or newer from 0.11.0."""
  return PYTHON_311 if parse_version(version) < FIRST_PY312_RELEASE else PYTHON_312_PLUS


def requirements(version: str) -> list[str]:
  """What pip installs into the venv of jax ``version`` (pinned jax and jaxlib)."""
  v = parse_version(version)
  reqs = [f"jax=={version}", f"jaxlib=={version}", "flatbuffers"]
  if v < (0, 6, 2):
    reqs.append("absl-py")  # Older jaxlib wheels import it without declaring it.
  if v <= (0, 4, 30):
    reqs.append("numpy<2")  # Built against the numpy 1.x ABI.
  return reqs


def default_root() -> Path:
  """The machine's cache of release environments: ``$JAXPORT_RELEASE_ENVS``, else
  ``$XDG_CACHE_HOME/jaxport/release-envs`` (``~/.cache/jaxport/release-envs``)."""
  named = release_envs()
  if named is not None:
    return named
  cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
  return (Path(cache) / "jaxport" / "release-envs").resolve()


def env_key(extra: Sequence[str]) -> str:
  """A short digest of the requirements an environment holds beside its release's own."""
  return hashlib.sha256("\n".join(extra).encode()).hexdigest()[:12]


def venv_dir(version: str, root: str | os.PathLike | None = None,
             extra: Sequence[str] = ()) -> Path:
  """Where the environment of jax ``version`` (with ``extra`` requirements) lives."""
  parse_version(version)
  name = f"jax-{version}" + (f"-{env_key(extra)}" if extra else "")
  return Path(root or default_root()).resolve() / name


def venv_python(version: str, root: str | os.PathLike | None = None,
                extra: Sequence[str] = ()) -> Path:
  return venv_dir(version, root, extra) / "bin" / "python"


def is_ready(version: str, root: str | os.PathLike | None = None,
             extra: Sequence[str] = ()) -> bool:
  d = venv_dir(version, root, extra)
  return (d / _MARKER).is_file() and (d / "bin" / "python").exists()


def base_version(venv: str | os.PathLike) -> str | None:
  """The base Python version a venv was built with (``pyvenv.cfg``), None if unknown."""
  try:
    text = (Path(venv) / "pyvenv.cfg").read_text()
  except OSError:
    return None
  m = re.search(r"^version(?:_info)?\s*=\s*(\S+)", text, re.MULTILINE)
  return m[1] if m else None


@dataclasses.dataclass(frozen=True)
class Installer:
  """How environments are created and filled: ``uv`` (the path of its binary) or ``pip``."""
  name: str
  uv: str | None = None

  def create(self, base: str, d: Path) -> list[str]:
    if self.uv is not None:
      return [self.uv, "venv", "--quiet", "--no-python-downloads", "--python", base, str(d)]
    return [base, "-m", "venv", str(d)]

  def install(self, python: Path, reqs: Sequence[str]) -> list[str]:
    if self.uv is not None:
      return [self.uv, "pip", "install", "--quiet", "--no-python-downloads", "--python",
              str(python), *reqs]
    return [str(python), "-m", "pip", "install", "--quiet", *reqs]


def installer() -> Installer:
  """uv when one runs (``JAXPORT_INSTALLER=uv`` insists on it), pip otherwise
  (``JAXPORT_INSTALLER=pip`` insists on pip)."""
  choice = installer_choice(VenvError)
  uv = None if choice == "pip" else find_uv()
  if choice == "uv" and uv is None:
    raise VenvError(f"{INSTALLER_ENV}=uv, but no uv runs here: install it (pip install uv) or "
                    "unset the variable to build with pip.")
  return Installer("uv", uv) if uv is not None else Installer("pip")


@functools.lru_cache(maxsize=1)
def find_uv() -> str | None:
  """A uv binary that runs: ``uv`` on PATH, else the one the ``uv`` package ships."""
  candidates = [shutil.which("uv")]
  try:
    import uv as uv_package
    candidates.append(uv_package.find_uv_bin())
  except (ImportError, FileNotFoundError, AttributeError):
    pass
  for candidate in candidates:
    if candidate is None:
      continue
    try:
      proc = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
      continue
    if proc.returncode == 0:
      return candidate
  return None


@contextlib.contextmanager
def _locked(d: Path, wait: bool = True) -> Iterator[bool]:
  """Hold ``d``'s build lock: two processes building one environment take turns. Without
  ``wait``, a lock another process holds is not taken (the context gives False). A link at the
  lock file is refused, never followed (``jaxport._files.holding_lock``)."""
  d.parent.mkdir(parents=True, exist_ok=True)
  with holding_lock(d.parent / f".{d.name}.lock", wait=wait) as held:
    yield held


def ensure_venv(version: str, root: str | os.PathLike | None = None,
                extra: Sequence[str] = (), owner: str | None = None,
                base: str | None = None) -> Path:
  """The python of a ready environment of jax ``version`` holding ``extra`` too, built if needed
  (with the base Python ``base``, by default the one :func:`find_python` finds).

  ``owner`` (a project's folder) names whose environment it is: building a new one for an owner
  removes that owner's earlier environments of the release (made for other requirements, or
  another jaxport), so that the cache holds one per project and release."""
  d = venv_dir(version, root, extra)
  python = d / "bin" / "python"
  if is_ready(version, root, extra):
    return python
  base = base or find_python(version)  # Before removing anything: a missing Python fails first.
  tool = installer()
  reqs = [*requirements(version), *extra]
  with _locked(d):
    if is_ready(version, root, extra):  # built by another process while this one waited
      return python
    if d.exists():
      logger.info("rebuilding incomplete environment %s", d)
      shutil.rmtree(d)
    logger.info("building the environment of jax %s with %s and %s", version, base, tool.name)
    try:
      _run(tool.create(base, d), f"creating the environment of jax {version}")
      _run(tool.install(python, reqs), f"installing jax {version} into {d}")
    except VenvError:
      shutil.rmtree(d, ignore_errors=True)  # nothing half-built is left to take disk
      raise
    (d / _MARKER).write_text(" ".join(reqs) + "\n")
    if owner is not None:
      (d / _OWNER).write_text(owner + "\n")
      _remove_superseded(d, version, owner)
  return python


def _remove_superseded(kept: Path, version: str, owner: str) -> None:
  """Remove ``owner``'s other environments of jax ``version`` beside ``kept``."""
  for other in kept.parent.glob(f"jax-{version}-*"):
    try:
      same = other != kept and (other / _OWNER).read_text().strip() == owner
    except OSError:
      continue
    if same:
      with _locked(other, wait=False) as free:  # not while another process builds it
        if free:
          logger.info("removing %s, superseded by %s", other, kept)
          shutil.rmtree(other, ignore_errors=True)


def find_python(version: str) -> str:
  """The base Python (not a venv's copy) to build jax ``version``'s venv with.

  ``JAXPORT_RELEASE_PYTHON`` wins when set. Otherwise the running interpreter
  if it fits :func:`python_need`, then the candidates on ``PATH`` and under
  ``$(pyenv root)/versions``, each run to read its version (a pyenv shim with
  no version selected does not run and is passed over).
  """
  name = release_python()
  if name:
    found = shutil.which(name)
    if found is None:
      raise VenvError(f"{RELEASE_PYTHON_ENV}={name} is not an interpreter on PATH (wanted for jax "
                      f"{version}, which needs {python_need(version)}); set it to the path of one, "
                      "or unset it to let the harness look for one.")
    got = interpreter_version(found)
    if got is not None and not python_need(version).accepts(got):
      logger.warning("%s=%s is Python %d.%d; jax %s installs on %s", RELEASE_PYTHON_ENV, name,
                     *got, version, python_need(version))
    return found
  need = python_need(version)
  tried: list[str] = []
  for candidate in candidates(need):
    got = interpreter_version(candidate)
    if got is not None and need.accepts(got):
      logger.debug("jax %s: base Python %s (Python %d.%d)", version, candidate, *got)
      return candidate
    tried.append(f"{candidate} ({'did not run' if got is None else 'is Python %d.%d' % got})")
  raise missing_python(version, need, tried)


def candidates(need: PythonNeed) -> list[str]:
  """Interpreters that may fit ``need``, in the order :func:`find_python` tries them."""
  out: list[str] = []
  running, base = running_python()
  if need.accepts(running):
    out.append(base)
  out += [found for name in need.path_names if (found := shutil.which(name))]
  out += [str(p) for p in pyenv_pythons(need)]
  return list(dict.fromkeys(out))


def running_python() -> tuple[tuple[int, int], str]:
  """``(major, minor)`` of this interpreter and its base executable (not a venv's copy)."""
  return sys.version_info[:2], getattr(sys, "_base_executable", None) or sys.executable


def pyenv_root() -> Path | None:
  """``pyenv root`` when pyenv is on PATH, else ``$PYENV_ROOT``; None without either."""
  pyenv = shutil.which("pyenv")
  if pyenv is not None:
    try:
      proc = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
      proc = None
    if proc is not None and proc.returncode == 0 and proc.stdout.strip():
      return Path(proc.stdout.strip())
  root = os.environ.get("PYENV_ROOT")
  return Path(root) if root else None


def pyenv_pythons(need: PythonNeed, root: Path | None = None) -> list[Path]:
  """``<pyenv root>/versions/X.Y[.Z]/bin/python3`` for each X.Y that ``need`` accepts, newest first.

  Only plain release names count (not ``3.13t``, ``3.14-dev`` or virtualenvs).
  """
  root = root or pyenv_root()
  if root is None or not (root / "versions").is_dir():
    return []
  found = []
  for d in (root / "versions").iterdir():
    m = _PYENV_VERSION_RE.fullmatch(d.name)
    python = d / "bin" / "python3"
    if m and need.accepts((int(m[1]), int(m[2]))) and python.exists():
      found.append((tuple(int(p) for p in d.name.split(".")), python))
  return [python for _, python in sorted(found, reverse=True)]


def interpreter_version(python: str) -> tuple[int, int] | None:
  """``(major, minor)`` of ``python``, read by running it; None when it does not run."""
  try:
    proc = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                          capture_output=True, text=True, timeout=60)
  except (OSError, subprocess.TimeoutExpired):
    return None
  parts = proc.stdout.split()
  if proc.returncode != 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
    return None
  return int(parts[0]), int(parts[1])


def missing_python(version: str, need: PythonNeed, tried: list[str]) -> VenvError:
  """The error for a release whose Python is not installed: what, where looked, the fix."""
  root = pyenv_root()
  pyenv = f"{root / 'versions'} (pyenv)" if root else "pyenv's versions (no pyenv found)"
  where = ", ".join(need.path_names) + f" on PATH and {pyenv}"
  why = (f"jax 0.11.0 and newer have wheels for {need} only" if need is PYTHON_312_PLUS
         else f"jax 0.10.2 and older are built with {need}")
  minor = "%d.%d" % (need.maximum or (3, 13))  # the one to install: 3.11, or 3.13 for 3.12+
  return VenvError(
      f"No {need} found for the venv of jax {version} ({why}). Looked for {where}"
      + (f"; tried {', '.join(tried)}" if tried else "") + ". "
      f"Install one (pyenv install {minor}, or your system's python{minor} package) and run again, "
      f"or set {RELEASE_PYTHON_ENV} to the path of a {need} interpreter.")


# What an installer's failure building a jax release's environment most likely means.
_JAX_HINT = ("a requirement that conflicts with this jax release, or a release the package index "
             "does not serve for this Python (jax 0.10.2 and older install on Python 3.11, jax "
             "0.11.0 and newer on Python 3.12 or newer)")


def _run(cmd: list[str], what: str, hint: str = _JAX_HINT) -> None:
  """Run one step of building an environment; ``VenvError`` with the installer's last words
  and ``hint`` (what did not resolve, most likely) when it fails."""
  logger.info("%s: %s", what, " ".join(cmd))
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode != 0:
    raise VenvError(
        f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}\n"
        f"The installer's last words above name what did not resolve: {hint}.")
