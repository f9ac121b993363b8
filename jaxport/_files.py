"""Replacing a file whole: the new contents go to a temporary file beside it, which is renamed
over it once complete, so that a reader (or a writer killed half-way) never sees half a file.

The one place a file is written this way; each caller keeps its own checks and errors around
it. The temporary file is named ``.NAME.PID.RANDOM.tmp`` (:func:`is_partial` knows it) and
removed on every failure, interrupts included.

Also the one place the folders and lock files jaxport keeps for itself are guarded against
links: :func:`refuse_links` refuses a private folder reached through a link (whoever made the
link would choose where jaxport writes, or what native code it loads), and
:func:`holding_lock` opens a lock file without following a link and without truncating it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from jaxport.errors import PrivatePathError

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


def first_link(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path | None:
  """The first symbolic link among the folders from ``root`` (excluded) down to ``path``
  (included), or ``path`` itself where it is not below ``root``; None where none is a link.
  Nothing is resolved: ``..`` is read as written, and the folders above ``root`` are the
  caller's."""
  path = Path(os.path.abspath(path))
  folders = [path]
  if root is not None:
    root = Path(os.path.abspath(root))
    if path != root and path.is_relative_to(root):
      below = reversed(path.relative_to(root).parents)
      folders = [root / p for p in below if p != Path(".")] + [path]
  return next((f for f in folders if f.is_symlink()), None)


def refuse_links(path: str | os.PathLike, root: str | os.PathLike | None, what: str) -> None:
  """Refuse ``path``, a folder jaxport keeps ``what`` in, where it or a folder between it and
  ``root`` is a symbolic link (see :func:`first_link`): ``PrivatePathError`` naming the link
  and the fix, before anything is read or written through it."""
  link = first_link(path, root)
  if link is not None:
    raise PrivatePathError(
        f"{link} is a symbolic link: jaxport keeps {what} in a plain folder and reads or writes "
        f"nothing through a link there. Remove the link (rm {link}); a plain folder is made in "
        "its place when one is needed")


@contextlib.contextmanager
def holding_lock(path: str | os.PathLike, *, wait: bool = True) -> Iterator[bool]:
  """Hold an exclusive lock on the file ``path`` for the block (True), made readable by its
  owner only when missing; without ``wait``, a lock another process holds is not taken (False).
  The file is opened without following a link and without truncating it, so a link planted
  there cannot make jaxport write elsewhere: a link, or anything but a regular file, is refused
  (``PrivatePathError`` naming it)."""
  import fcntl  # POSIX only: imported where a lock is taken, not by every importer
  path = Path(path)
  flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
  try:
    fd = os.open(path, flags, 0o600)
  except OSError:
    if path.is_symlink() or (path.exists() and not path.is_file()):
      raise _not_a_lock_file(path) from None
    raise
  try:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
      raise _not_a_lock_file(path)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
      yield False
      return
    try:
      yield True
    finally:
      fcntl.flock(fd, fcntl.LOCK_UN)
  finally:
    os.close(fd)


def _not_a_lock_file(path: Path) -> PrivatePathError:
  kind = "a symbolic link" if path.is_symlink() else "not a regular file"
  return PrivatePathError(
      f"lock file {path} is {kind}: jaxport opens its lock files without following links and "
      f"never writes through one. Remove it (rm {path}); a plain lock file is made in its place")
