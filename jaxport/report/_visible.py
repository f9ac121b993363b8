"""Text from case code (an exception's message, what a case printed) as a reader sees it:
control and format characters shown escaped.

A message may carry a NUL, a terminal escape or a bidirectional control (U+202E, U+2066) that
reorders what follows it on screen, so that a page, a summary or a terminal would show other
text than the report holds. Each such character is written as its escape (``\\u202e``); line
breaks and tabs stay, for the writers that keep lines.
"""

from __future__ import annotations

import re
import unicodedata

# Unicode categories never shown as themselves: controls, format characters (the
# bidirectional ones among them), line and paragraph separators, lone surrogates.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_KEPT = frozenset("\n\t")
# Everything outside printable ASCII, looked at one by one (ASCII text passes untouched).
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n\t]")


def _escaped(match: re.Match[str]) -> str:
  c = match.group()
  if c in _KEPT or unicodedata.category(c) not in _HIDDEN_CATEGORIES:
    return c
  code = ord(c)
  return f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000
                                                 else f"\\U{code:08x}")


def visible(text: object) -> str:
  """``text`` with each control, format or separator character (but line breaks and tabs)
  written as its escape, ``\\u202e``."""
  return _NOT_PLAIN.sub(_escaped, str(text))
