"""The cross-run compile cache's folder: by default ``.jaxport_cache/xla`` in the project, made
readable by its owner only, since the executables in it are native code the workers load.

A folder that cannot be made private (another user owns it, the checkout is read-only) is
not used: the run then compiles as if no cache were kept, and says why in the log.

Anyone who can write the folder (the same user, a CI cache restored from elsewhere) can put a
pipe, a device or a link where jax expects a cached executable; jax would block reading a
pipe, or read and write through a link. A worker therefore drops each cache file that is not a
regular file before jax looks any up (:func:`drop_irregular`): its module is compiled again.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

# Relative to the project's root (where its pytest configuration lives).
DEFAULT_FOLDER = Path(".jaxport_cache") / "xla"
_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def _private(path: Path) -> None:
  """Make ``path`` (a folder) if missing, owned by this user and closed to others."""
  path.mkdir(mode=0o700, exist_ok=True)
  info = path.lstat()
  if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
    raise OSError(f"{path} is not a plain folder")
  if info.st_uid != os.getuid():
    raise OSError(f"{path} belongs to another user (uid {info.st_uid})")
  if info.st_mode & _OTHERS:
    path.chmod(stat.S_IMODE(info.st_mode) & ~_OTHERS)


def private_folder(path: Path, root: Path | None = None) -> Path | None:
  """``path``, made (with its parents below ``root``, when given) and readable by its owner
  only; None, logging why, where that cannot be done."""
  try:
    parents = []
    if root is not None and path.is_relative_to(root):
      parents = [p for p in reversed(path.relative_to(root).parents) if p != Path(".")]
      parents = [root / p for p in parents]
    else:
      path.parent.mkdir(parents=True, exist_ok=True)
    for folder in (*parents, path):
      _private(folder)
  except OSError as e:
    logger.warning("compile cache folder %s not used, executables are compiled in every run: "
                   "%s", path, e.strerror or e)
    return None
  return path


# The suffixes of jax's persistent-cache files (the executable and its access time).
_JAX_CACHE_SUFFIXES = ("-cache", "-atime")


def drop_irregular(path: Path) -> list[str]:
  """Remove every file of jax's persistent cache in the folder ``path`` that is not a regular
  file (a link, a pipe, a device; never followed), so that jax compiles its module again
  instead of reading it; the names removed. A folder that is itself a link, or cannot be
  listed, is left alone (the caller does not use it)."""
  dropped = []
  try:
    if not stat.S_ISDIR(path.lstat().st_mode):
      return dropped
    with os.scandir(path) as listing:
      for found in listing:
        if (found.name.endswith(_JAX_CACHE_SUFFIXES)
            and not found.is_file(follow_symlinks=False)
            and not found.is_dir(follow_symlinks=False)):
          try:
            os.unlink(found.path)
            dropped.append(found.name)
          except OSError as e:
            logger.warning("compile cache file %s is not a regular file and cannot be "
                           "removed: %s", found.path, e.strerror or e)
  except OSError as e:
    logger.debug("compile cache folder %s not checked: %s", path, e)
  if dropped:
    logger.warning("compile cache folder %s: removed %d files that were not regular files "
                   "(links, pipes or devices); their modules are compiled again", path,
                   len(dropped))
  return dropped
