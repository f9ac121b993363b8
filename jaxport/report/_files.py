"""Writing output files atomically, so a killed job never leaves half a page, report or blob.

This is the one checked writer for every file the command line writes at a path
the user names (``report merge -o``, ``report render --html/--markdown``,
``upgrade -o``). Rules, defined here once:

- The data goes to a new temporary file beside OUT, which is then renamed over
  OUT. The temporary file is removed on every failure, interrupts included.
- OUT may be missing or a regular file. A symlink is judged by what it points
  to: a symlink to a regular file (or a dangling one) is replaced by the new
  file (the link itself, never its target); a symlink to anything else is
  refused like that thing. A directory, FIFO, socket or device at OUT is
  refused: renaming over it would replace a device node with a regular file,
  or a reader blocked on a FIFO would never see the data.
- Missing parent folders are created. Every OS failure becomes the caller's
  :class:`JaxportError` subclass, naming OUT and the fix.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from jaxport._files import replacing
from jaxport.errors import JaxportError, ReportError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def check_output(path: str | os.PathLike, error: type[JaxportError] = ReportError) -> None:
  """Refuse an output path that exists and is not a regular file (after following symlinks)."""
  path = Path(path)
  try:
    mode = os.stat(path).st_mode
  except FileNotFoundError:
    return  # missing, or a dangling symlink: the rename creates (or replaces the link with) a file
  except OSError as e:
    raise _cannot_write(path, e, error) from None
  if stat.S_ISREG(mode):
    return
  kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
  via = " (through a symlink)" if path.is_symlink() else ""
  raise error(f"{path}: exists and is {kind}{via}; an output must be a new or a regular file, "
              "so it is not replaced. Pick another output path.")


def write_atomically(path: str | os.PathLike, data: bytes,
                     error: type[JaxportError] = ReportError) -> None:
  """Write ``data`` to ``path`` through a new temporary file in the same folder (rules above).

  The temporary file is created like any other file (the umask decides its
  mode), so the output is as readable as the user's other files.
  """
  path = Path(path)
  check_output(path, error)
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as f:
      f.write(data)
      check_output(path, error)  # once more, right before the rename
  except OSError as e:
    raise _cannot_write(path, e, error) from None


def write_text_atomically(path: str | os.PathLike, text: str,
                          error: type[JaxportError] = ReportError) -> None:
  """Write ``text`` (UTF-8) to ``path`` with :func:`write_atomically`."""
  write_atomically(path, text.encode("utf-8"), error)


def _cannot_write(path: Path, e: OSError, error: type[JaxportError]) -> JaxportError:
  why = e.strerror or str(e)
  fix = {errno.EROFS: "the file system is read-only; write the output somewhere else.",
         errno.EACCES: f"make {path.parent} writable or pick another output path.",
         errno.EPERM: f"make {path.parent} writable or pick another output path.",
         errno.ENOTDIR: f"a part of {path.parent} is a file, not a folder; pick another output "
                        "path.",
         errno.EISDIR: "it is a directory; name a file inside it or another output path.",
         errno.ENOSPC: "the disk is full; free space or write somewhere else.",
         }.get(e.errno, "pick a writable output path.")
  return error(f"{path}: cannot write ({why}); {fix}")
