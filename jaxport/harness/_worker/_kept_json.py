"""The small JSON files the harness keeps beside the cross-run compile cache (compile errors,
requests' sharing keys, module reads): read as data only, through jaxport's bounded JSON reader, as regular files (not links, pipes or devices) of
a bounded size, and written whole or not at all in a folder only their owner can read. A file
that cannot be read or written costs a later run only the work it would have saved."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._bounded import read_regular
from jaxport.errors import JaxportError
from jaxport.report._files import write_text_atomically

logger = logging.getLogger(__name__)


def _plain_folder(folder: Path) -> bool:
  """Whether ``folder`` is a folder itself, not a link to one (a link in the cache folder is
  never followed: it may lead anywhere)."""
  try:
    return stat.S_ISDIR(folder.lstat().st_mode)
  except OSError:
    return False


def kept_names(folder: Path, most: int) -> tuple[list[str], bool]:
  """The names of up to ``most`` files in ``folder``, and whether they are all of them (a
  folder that does not exist holds none; one that cannot be listed, or is a link, gives
  none, not all)."""
  if not folder.exists() and not folder.is_symlink():
    return [], True
  if not _plain_folder(folder):
    return [], False
  names: list[str] = []
  try:
    with os.scandir(folder) as listing:
      for found in listing:
        if len(names) >= most:
          return names, False
        names.append(found.name)
  except OSError:
    return [], False
  return names, True


def read_kept(path: Path, most: int, what: str) -> Any | None:
  """The JSON value kept in ``path``; None when there is no such file, or it is not a
  regular file of at most ``most`` bytes holding JSON (logged, naming ``what``)."""
  if not path.exists() and not path.is_symlink():
    return None
  if not _plain_folder(path.parent):
    logger.debug("%s file %s not read: its folder is a link or not a folder", what, path)
    return None
  try:
    # jaxport's bounded reader: nesting, numbers and duplicate keys bounded as in any
    # hostile JSON (a file of nested brackets is refused, not a recursion error).
    return _json.parse(read_regular(path, str(path), JaxportError, "MAX_JSON_BYTES", most=most,
                                    how=f"the bound of {what} files, below",
                                    follow_links=False))
  except (JaxportError, ValueError) as e:
    logger.debug("%s file %s not read (%s)", what, path, e)
    return None


def keep_json(path: Path, value: Any, most: int, what: str) -> None:
  """Keep ``value`` as JSON in ``path``, its folder made readable by its owner only; nothing
  is written when the text is over ``most`` bytes, and a failure is only logged."""
  text = json.dumps(value)
  if len(text.encode()) > most:
    return
  try:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if not _plain_folder(path.parent):
      raise OSError(f"{path.parent} is a link or not a folder; nothing is written through it")
    write_text_atomically(path, text, JaxportError)
  except (OSError, JaxportError) as e:
    logger.debug("%s not kept in %s: %s", what, path.parent, e)
