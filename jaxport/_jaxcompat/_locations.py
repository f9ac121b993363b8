"""Keeping a package's own frames out of the source locations jax writes into modules."""

from __future__ import annotations

import logging
import os

from jax._src import source_info_util

logger = logging.getLogger(__name__)


def exclude_from_locations(directory: str) -> None:
  """Frames of files under ``directory`` no longer name a module's operations, as jax's own
  never do; the nearest frame outside it (the user's function) does."""
  prefix = os.path.join(os.path.abspath(directory), "")
  register = getattr(source_info_util, "register_exclusion", None)
  if register is None:
    logger.warning("this jax cannot exclude %s from module locations; recorded modules may "
                   "name its lines", prefix)
    return
  if prefix not in getattr(source_info_util, "_exclude_paths", ()):
    register(prefix)
