"""Writing report outputs: atomically, so a killed job never leaves half a page or half a report."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jaxport.errors import ReportError


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
  """Write ``text`` to ``path`` (UTF-8) through a temporary file in the same folder."""
  path = Path(path)
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
      with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
      os.replace(tmp, path)
    except BaseException:
      Path(tmp).unlink(missing_ok=True)
      raise
  except OSError as e:
    raise ReportError(f"{path}: cannot write ({e.strerror or e}); pick a writable path.") from None
