"""The range of jax releases jaxport supports, and the import-time check of the installed one.

An older jax lacks internals jaxport's export and call are built on, so
``import jaxport`` refuses it at once with the range. A newer jax is untested,
not known broken: jaxport warns once and goes on, so that a job on the newest
jax reports real findings instead of an import error.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import sys
import warnings

from jaxport.errors import JaxVersionError, UntestedJaxWarning

JAXPORT_VERSION = "0.1.0"

# The oldest jax release jaxport runs on, and the newest one it is tested with. The releases
# in between that CI and the nightly test are the release table's from one to the other
# (jaxport.releases.served_releases). 0.9.2 to 0.10.2 install on Python 3.11; 0.11.0 and newer
# only on Python 3.12+.
MIN_JAX = "0.9.2"
MAX_TESTED_JAX = "0.12.0.1"
# Below: jax 0.9.0 and 0.9.1, whose jax.export serializes no abstract device of
# a mesh (layout 6), so sharded records read back from their blobs differ from
# fresh ones (docs/multi-release.md).

# MAJOR.MINOR.PATCH, an optional fourth number (jax's post-releases such as
# 0.12.0.1), then anything (".dev20260601", "rc1").
_RELEASE_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")


def release_tuple(version: str) -> tuple[int, ...]:
  """``"0.10.2"`` (or ``"0.10.2.dev20260601"``) -> ``(0, 10, 2)``; ``"0.12.0.1"`` -> ``(0, 12, 0, 1)``.

  A four-part release sorts after its three-part base: ``(0, 12, 0) < (0, 12, 0, 1)``.
  """
  m = _RELEASE_RE.match(version)
  if m is None:
    raise ValueError(f"jax version {version!r} does not start with MAJOR.MINOR.PATCH.")
  return tuple(int(g) for g in m.groups() if g is not None)


def check_jax_version(found: str) -> None:
  """Refuse a jax older than :data:`MIN_JAX`; warn once for one newer than :data:`MAX_TESTED_JAX`."""
  supported = f"jaxport {JAXPORT_VERSION} supports jax {MIN_JAX} to {MAX_TESTED_JAX}; found {found}"
  release = release_tuple(found)
  if release < release_tuple(MIN_JAX):
    raise JaxVersionError(f"{supported}. Install a supported jax: pip install 'jax>={MIN_JAX},<="
                          f"{MAX_TESTED_JAX}' (with the matching jaxlib).")
  if release > release_tuple(MAX_TESTED_JAX):
    warnings.warn(f"{supported}, which is newer than the newest tested release; export, call and "
                  "serialization may meet jax internals that changed. Please report failures.",
                  UntestedJaxWarning, stacklevel=3)


def distribution_version(dist: str) -> str | None:
  """The installed version of the distribution ``dist`` (``jaxlib``, ``numpy``, ...), read
  from its metadata; None when it is not installed. The jax release itself:
  :func:`installed_jax_version`."""
  try:
    return importlib.metadata.version(dist)
  except importlib.metadata.PackageNotFoundError:
    return None


def installed_jax_version() -> str:
  """The installed jax's version, read without importing jax when it is not imported yet.

  Reading the installed distribution's metadata keeps ``import jaxport`` (and the
  harness's pytest side, which never runs jax) from paying for jax's import.
  """
  jax = sys.modules.get("jax")
  if jax is not None and isinstance(getattr(jax, "__version__", None), str):
    return jax.__version__
  found = _jax_distribution_version()
  if found is None:
    import jax
    return jax.__version__
  return found


@functools.cache
def _jax_distribution_version() -> str | None:
  """The jax distribution's version as its metadata says, read once a process: the harness's
  pytest side asks for each entry, and each read parses the metadata file anew."""
  try:
    return importlib.metadata.version("jax")
  except importlib.metadata.PackageNotFoundError:
    return None



def installed_jaxlib_version() -> str | None:
  """The version of the jaxlib this process runs: the imported one's (what jax loaded), else the
  installed distribution's, read without importing it; None when none is installed."""
  module = sys.modules.get("jaxlib.version")
  found = getattr(module, "__version__", None)
  return found if isinstance(found, str) else distribution_version("jaxlib")


check_jax_version(installed_jax_version())
