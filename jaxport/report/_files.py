"""Writing report outputs: atomically, so a killed job never leaves half a page or half a report."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from jaxport.errors import ReportError


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
  """Write ``text`` to ``path`` (UTF-8) through a new temporary file in the same folder.

  The temporary file is created like any other file (the umask decides its
  mode), so the page and the report are as readable as the user's other files.
  """
  path = Path(path)
  tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
      with open(tmp, "x", encoding="utf-8") as f:
        f.write(text)
      os.replace(tmp, path)
    except BaseException:
      tmp.unlink(missing_ok=True)
      raise
  except OSError as e:
    raise ReportError(f"{path}: cannot write ({e.strerror or e}); pick a writable path.") from None
