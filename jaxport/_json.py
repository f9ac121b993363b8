"""Reading JSON that may be hostile: bounded in size, nesting and number length, in time
linear in its size, and failing with one error naming the file and the fix.

Golden manifests, stable-target files, reports and expectation tables all come from a
repository anyone may edit. ``json.loads`` alone recurses without bound, takes 4,300-digit
integers as a ``ValueError``, turns ``1e999`` into infinity and keeps the last of duplicate
keys; :func:`parse` refuses each of those as :class:`JsonError`, and callers turn that into
their own error class with :func:`load`.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from jaxport import _limits
from jaxport._bounded import read_regular
from jaxport.errors import JsonError as JsonError  # raised here, defined with the others

# The longest integer literal accepted: far beyond any count or size, far below the 4,300
# digits at which Python's int() refuses to convert.
MAX_INT_DIGITS = 100


# A JSON string (its closing quote optional, so that a match never fails and is retried at a
# later quote: linear in the text's length however it is built), or one bracket.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def nesting(text: str) -> int:
  """The deepest nesting of objects and arrays in ``text``, brackets inside strings aside;
  one pass of a regular expression over the text, so hostile input costs time linear in its
  length (and only brackets and strings cost Python steps)."""
  depth = deepest = 0
  for token in _STRING_OR_BRACKET.findall(text):
    if token in ("[", "{"):
      depth += 1
      if depth > deepest:
        deepest = depth
    elif token in ("]", "}"):
      depth -= 1
  return deepest


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
  seen: set[str] = set()
  dup = set()
  for k, _ in pairs:
    if k in seen:
      dup.add(k)
    seen.add(k)
  if dup:
    raise JsonError(f"duplicate key(s) {sorted(dup)[:10]} in a JSON object")
  return dict(pairs)


def _constant(name: str) -> Any:
  raise JsonError(f"non-standard JSON constant {name}; only finite numbers are allowed")


def _float(text: str) -> float:
  value = float(text)
  if not math.isfinite(value):
    raise JsonError(f"the number {text[:40]} is not finite as a float; only finite numbers are "
                    "allowed")
  return value


def _int(text: str) -> int:
  if len(text.lstrip("-")) > MAX_INT_DIGITS:
    raise JsonError(f"an integer of {len(text.lstrip('-'))} digits, more than the "
                    f"{MAX_INT_DIGITS} allowed")
  return int(text)


def parse(text: str | bytes, *, bytes_limit: str = "MAX_JSON_BYTES",
          nesting_limit: str = "MAX_JSON_NESTING") -> Any:
  """The value of ``text``; :class:`JsonError` for text that is not strict, bounded JSON.
  The limits are named as ``jaxport._limits`` holds them, and refusals quote them."""
  max_bytes, max_nesting = getattr(_limits, bytes_limit), getattr(_limits, nesting_limit)
  if len(text) > max_bytes:
    raise JsonError(f"{len(text)} bytes of JSON, more than the limit {_limits.name(bytes_limit)}")
  if isinstance(text, bytes):
    try:
      text = text.decode("utf-8")
    except UnicodeDecodeError as e:
      raise JsonError(f"not UTF-8 text ({e})") from None
  depth = nesting(text)
  if depth > max_nesting:
    raise JsonError(f"JSON nested {depth} levels deep, more than the limit "
                    f"{_limits.name(nesting_limit)}")
  try:
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant,
                      parse_float=_float, parse_int=_int)
  except json.JSONDecodeError as e:
    raise JsonError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
  except RecursionError:   # nesting() bounds it; kept as a last guard
    raise JsonError("JSON nested too deeply") from None


def load(text: str | bytes, where: str, error: type[Exception], fix: str = "", **limits: str) -> Any:
  """:func:`parse`, raising ``error`` with ``where`` (the file) first and ``fix`` last."""
  try:
    return parse(text, **limits)
  except JsonError as e:
    raise error(f"{where}: {e}." + (f" {fix}" if fix else "")) from None


def load_file(path: str | os.PathLike, where: str, error: type[Exception], fix: str = "",
              follow_links: bool = True, **limits: str) -> Any:
  """:func:`load` of the file at ``path``, read by :func:`jaxport._bounded.read_regular` (a
  regular file, refused by its size before it is read; a link too unless ``follow_links``):
  ``error`` names ``where`` for a file that cannot be read, is not a regular file, is too
  large or is not strict JSON."""
  text = read_regular(path, where, error, limits.get("bytes_limit", "MAX_JSON_BYTES"),
                      follow_links=follow_links)
  return load(text, where, error, fix, **limits)
