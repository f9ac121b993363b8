"""A failure as the report keeps it: the exception's type and jax's whole message, verifier
lines included, up to ``jaxport._limits.MAX_ERROR_LINES`` lines and ``MAX_ERROR_CHARS``
characters, then a line saying what was cut. The terminal shows its first line only."""

from __future__ import annotations

from jaxport import _limits


def error_text(e: BaseException) -> str:
  """``Type: message`` with the message's lines whole up to the bound; beyond it, cut at a
  line's end (or within a first line longer than the bound) with a marker naming the bound
  and how much was left out."""
  return bounded(f"{type(e).__name__}: {str(e).strip()}")


def error_line(e: BaseException) -> str:
  """``Type: first line of the message``: a failure said in one line (a checker's error, which
  names the case's own code rather than jax's)."""
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0] if lines else ''}"


def bounded(text: str) -> str:
  """``text`` up to the bound, cut with a marker beyond it."""
  lines = text.rstrip().splitlines() or [""]
  kept: list[str] = []
  size = 0
  for line in lines[:_limits.MAX_ERROR_LINES]:
    room = _limits.MAX_ERROR_CHARS - size
    if len(line) > room:
      if not kept:
        kept.append(line[:room])
      break
    kept.append(line)
    size += len(line) + 1
  whole = "\n".join(lines)
  shown = "\n".join(kept)
  if shown == whole:
    return whole
  left_lines = len(lines) - len(kept)
  return (f"{shown}\n[... cut: {len(whole) - len(shown)} more characters"
          + (f" on {left_lines} more lines" if left_lines else "")
          + f"; the report keeps at most {_limits.name('MAX_ERROR_LINES')} lines and "
          f"{_limits.name('MAX_ERROR_CHARS')} characters of an error]")
