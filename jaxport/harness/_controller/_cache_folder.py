"""The cross-run compile cache's folder: by default ``.jaxport_cache/xla`` in the project, made
readable by its owner only, since the executables in it are native code the workers load.

A folder that cannot be made private (another user owns it, the checkout is read-only) is
not used: the run then compiles as if no cache were kept, and says why in the log. A folder
reached through a link is refused before that, when the run's options are made
(``_settings.Options.for_run``), as a session warning naming the link. Each worker
drops the files in it that are not regular files before jax looks any up
(``jaxport.harness._worker._cache_files``).
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
