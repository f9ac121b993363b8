"""Reading a file that may be hostile: a regular file only, refused by its size before it is
read, and never read past the size first seen.

A FIFO or a device named where a file is expected would block or never end; a file far past
any real one would take the memory. Every reader of golden data, reports and project files
reads through :func:`read_regular`, which raises the caller's own error class naming the file.
"""

from __future__ import annotations

import os
import stat

from jaxport import _limits


def read_regular(path: str | os.PathLike, where: str, error: type[Exception], limit: str, *,
                 most: int | None = None, how: str = "", fix: str = "",
                 follow_links: bool = True) -> bytes:
  """The bytes of the regular file ``path``; ``error`` naming ``where`` when it cannot be
  opened, is not a regular file (a FIFO, a device, a socket, a directory; a link too unless
  ``follow_links``), holds more than ``most`` bytes (by default the value of
  ``jaxport._limits.<limit>``; else ``how`` says how ``most`` follows from that limit), or
  grows while it is read. ``fix`` ends the message of a file refused by its size."""
  most = getattr(_limits, limit) if most is None else most
  flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
  if not follow_links:
    flags |= getattr(os, "O_NOFOLLOW", 0)
  try:
    fd = os.open(path, flags)
  except OSError as e:
    raise error(f"{where}: cannot be read ({e.strerror or e}).") from None
  try:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
      kinds = "devices, pipes and sockets" if follow_links else "links, devices and pipes"
      raise error(f"{where}: not a regular file ({kinds} are refused).")
    size = st.st_size
    if size <= most:
      os.set_blocking(fd, True)
      with os.fdopen(os.dup(fd), "rb") as f:
        data = f.read(size + 1)  # the size stat gave, so no more is set aside than it holds
      if len(data) > size:
        raise error(f"{where}: grew while it was read; read it again once whatever writes it "
                    "is done.")
  except OSError as e:
    raise error(f"{where}: cannot be read ({e.strerror or e}).") from None
  finally:
    os.close(fd)
  if size > most:
    bound = _limits.name(limit) if most == getattr(_limits, limit) else (
        f"{most} ({how or 'derived from'} {_limits.name(limit)})")
    raise error(f"{where}: {size} bytes, more than the limit {bound}; refused before reading "
                "it." + (f" {fix}" if fix else ""))
  return data
