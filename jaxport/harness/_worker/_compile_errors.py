"""Compile errors kept across runs, beside the cross-run compile cache.

jax's persistent cache keeps executables only: a module that fails to compile is compiled
again in every run. Old records that call a custom-call target jaxlib removed (the legacy
LAPACK and BLAS targets ``jaxport.upgrade`` rewrites) fail that way in every replay, each
costing a compilation before its upgraded run. Such an error depends on the module, the
compile options, the devices and the jaxlib alone (nothing a project registers brings a
removed legacy target back), so it is kept under jax's cache key of the module, in
``jaxport-compile-errors/`` of the cache folder, and raised again, as the same error type with
the same text, when a later run asks for the same module. No other error is kept: one that
a project's own registration, a device's memory or the machine's load could change is
compiled again each run.

The folder's listing is read once, when it is opened: a module with no kept error (almost
every one) then costs no look at the disk. An error another process keeps later is found by
the next run.

A kept file is JSON holding the error's text, read as a regular file only (not a link, a pipe
or a device) of at most ``MAX_BYTES``; a file that cannot be read, that is not of this format or
whose text is not such an error is ignored (the module is compiled, and the file written
again).
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import jax

from jaxport.harness._worker._kept_json import keep_json, kept_names, read_kept
from jaxport.upgrades import rewritable_targets

logger = logging.getLogger(__name__)

FOLDER_NAME = "jaxport-compile-errors"
FORMAT = 1
_WHAT = "kept compile error"
# A kept error's text is one line of XLA's; anything larger is not one of ours.
MAX_BYTES = 64 * 1024
# A folder listing more files than this is not kept in memory: each module's file is then
# looked for on disk.
MAX_LISTED = 100_000
_MISSING = re.compile(r"No registered implementation for (?:untyped |typed )?custom call to "
                      r"([A-Za-z0-9_.]+)")


def _removed_target(message: str) -> str | None:
  """The removed legacy target ``message`` says has no implementation, else None."""
  found = _MISSING.search(message)
  if found is None or found.group(1) not in rewritable_targets():
    return None
  return found.group(1)


def keepable(error: BaseException) -> bool:
  """Whether ``error`` is a compile error kept across runs: jax's runtime error saying a
  removed legacy target has no implementation."""
  return type(error) is jax.errors.JaxRuntimeError and _removed_target(str(error)) is not None


class KeptErrors:
  """The compile errors kept in one cache folder, by jax's cache key of the module."""

  def __init__(self, cache_folder: Path) -> None:
    self.folder = Path(cache_folder) / FOLDER_NAME
    # The names of the folder's files when it was opened, and of those kept since; None when
    # it could not be listed or lists more than MAX_LISTED.
    names, complete = kept_names(self.folder, MAX_LISTED)
    self._listed: set[str] | None = set(names) if complete else None

  def _path(self, key: str) -> Path:
    return self.folder / (hashlib.sha256(key.encode()).hexdigest() + ".json")

  def load(self, key: str) -> BaseException | None:
    """The error kept for the module of ``key``, raised as it was; None when none is kept
    or the file is not a kept error of this format."""
    path = self._path(key)
    if self._listed is not None and path.name not in self._listed:
      return None
    data = read_kept(path, MAX_BYTES, _WHAT)
    if data is None:
      return None
    if (not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key
        or not isinstance(data.get("message"), str) or _removed_target(data["message"]) is None):
      logger.debug("compile error file %s is not a kept error; compiling the module", path)
      return None
    return jax.errors.JaxRuntimeError(data["message"])

  def keep(self, key: str, error: BaseException) -> None:
    """Keep ``error`` (a :func:`keepable` one) for the module of ``key``; written whole or
    not at all, and a folder that cannot be written only costs later runs a compilation."""
    if keepable(error):
      path = self._path(key)
      keep_json(path, {"format": FORMAT, "key": key, "message": str(error)}, MAX_BYTES, _WHAT)
      if self._listed is not None:
        self._listed.add(path.name)
