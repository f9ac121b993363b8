"""The files of jax's persistent compile cache, checked by each worker before jax looks any up.

Anyone who can write the cache folder (the same user, a CI cache restored from elsewhere) can
put a pipe, a device or a link where jax expects a cached executable; jax would block reading a
pipe, or read and write through a link. A worker therefore drops each cache file that is not a
regular file (:func:`drop_irregular`): its module is compiled again. The folder itself is made
private by the session (``jaxport.harness._controller._cache_folder``).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

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
