"""Replacing a file whole: the new contents go to a temporary file beside it, which is renamed
over it once complete, so that a reader (or a writer killed half-way) never sees half a file.

The one place a file is written this way; each caller keeps its own checks and errors around
it. The temporary file is named ``.NAME.PID.RANDOM.tmp`` (:func:`is_partial` knows it) and
removed on every failure, interrupts included.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_SUFFIX = ".tmp"


def is_partial(name: str) -> bool:
  """Whether the file name ``name`` is one of the temporary files written here."""
  return name.startswith(".") and name.endswith(_SUFFIX)


@contextlib.contextmanager
def replacing(path: str | os.PathLike, *, private: bool = False) -> Iterator[BinaryIO]:
  """A new binary file beside ``path`` to write in the block; renamed over ``path`` when the
  block ends, removed when it raises. ``private`` makes it readable by its owner only, else
  its mode is the umask's, like any other new file."""
  path = Path(path)
  tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{_SUFFIX}")
  fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
               0o600 if private else 0o666)
  try:
    with os.fdopen(fd, "wb") as f:
      yield f
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(OSError):
      tmp.unlink()
    raise


def write_replacing(path: str | os.PathLike, data: bytes, *, private: bool = False) -> None:
  """``path`` replaced whole by ``data`` (see :func:`replacing`)."""
  with replacing(path, private=private) as f:
    f.write(data)
