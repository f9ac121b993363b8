"""The small JSON files the harness keeps beside the cross-run compile cache (compile errors,
requests' sharing keys): read as data only, as regular files (not links, pipes or devices) of
a bounded size, and written whole or not at all in a folder only their owner can read. A file
that cannot be read or written costs a later run only the work it would have saved."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from jaxport._bounded import read_regular
from jaxport.errors import JaxportError
from jaxport.report._files import write_text_atomically

logger = logging.getLogger(__name__)


def kept_names(folder: Path, most: int) -> tuple[list[str], bool]:
  """The names of up to ``most`` files in ``folder``, and whether they are all of them (a
  folder that does not exist holds none; one that cannot be listed gives none, not all)."""
  if not folder.exists():
    return [], True
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
  if not path.exists():
    return None
  try:
    return json.loads(read_regular(path, str(path), JaxportError, "MAX_JSON_BYTES", most=most,
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
    write_text_atomically(path, text, JaxportError)
  except (OSError, JaxportError) as e:
    logger.debug("%s not kept in %s: %s", what, path.parent, e)
