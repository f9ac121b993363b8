"""Reading typed records out of decoded JSON, strictly: the one field reader behind every file
and protocol jaxport reads (manifests, reports, worker answers and requests, the release and
expected-status tables, a project's stable targets, shard costs, host facts).

:mod:`jaxport._json` turns hostile text into plain values; a :class:`Strict` turns those values
into fields of the expected type, or raises. Each reader makes one with its own error: a
function of the key path of what is wrong (``entries[3].findings[0].kind``) and what is wrong,
returning the exception to raise, so a manifest's problem is a ``GoldenDataError`` naming the
manifest and a worker's a ``WorkerAnswerError``, each worded once, here.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

E = TypeVar("E", bound=enum.Enum)

# How much of a bad value a message quotes: enough to recognise it, never a whole payload.
QUOTE_CHARS = 200


def quote(value: Any) -> str:
  """``repr(value)``, cut to :data:`QUOTE_CHARS` characters."""
  text = repr(value)
  return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "..."


def _type_names(kind: type | tuple[type, ...]) -> str:
  return kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)


class Strict:
  """Field readers raising ``error(where, what)`` for a value that is not what was asked."""

  def __init__(self, error: Callable[[str, str], Exception]):
    self._error = error

  @classmethod
  def raising(cls, error: type[Exception]) -> Strict:
    """The reader whose refusals are ``error("<key path>: <what is wrong>")``."""
    return cls(lambda where, what: error(f"{where}: {what}"))

  def fail(self, where: str, what: str) -> Exception:
    """The reader's exception for ``what`` is wrong at ``where``, to raise."""
    return self._error(where, what)

  def obj(self, value: Any, where: str, required: Collection[str] = (),
          optional: Collection[str] | None = None) -> Mapping[str, Any]:
    """``value`` as a JSON object with every key of ``required``; when ``optional`` is given,
    with no key outside ``required`` and ``optional`` either."""
    if not isinstance(value, Mapping):
      raise self.fail(where, f"expected an object, got {type(value).__name__}")
    missing = [k for k in required if k not in value]
    unknown = ([] if optional is None
               else sorted(k for k in value if k not in required and k not in optional))
    if missing or unknown:
      parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
          [f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(quote, unknown))}"]
          if unknown else [])
      raise self.fail(where, "; ".join(parts))
    return value

  def record(self, cls: type, value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as the JSON object of dataclass ``cls``: each of its fields, nothing else."""
    return self.obj(value, where, [f.name for f in dataclasses.fields(cls)], ())

  def of(self, value: Any, kind: type | tuple[type, ...], where: str,
         nullable: bool = False) -> Any:
    """``value`` if it is a ``kind`` (or None, when ``nullable``). A boolean is no number."""
    if value is None and nullable:
      return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kind):
      raise self.fail(where, f"expected {_type_names(kind)}{' or null' if nullable else ''}, "
                             f"got {quote(value)}")
    return value

  def count(self, value: Any, where: str) -> int:
    """``value`` as a whole number of zero or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
      raise self.fail(where, f"expected a count (a whole number of 0 or more), got {quote(value)}")
    return value

  def number(self, value: Any, where: str) -> float:
    """``value`` as a float, from a JSON integer or decimal."""
    return float(self.of(value, (int, float), where))

  def strs(self, value: Any, where: str, nullable: bool = False,
           nonempty: bool = False) -> tuple[str, ...] | None:
    """``value`` as a list of strings (non-empty when ``nonempty``), as a tuple."""
    if value is None and nullable:
      return None
    items = self.of(value, list, where)
    if nonempty and not items:
      raise self.fail(where, "expected a non-empty list of names, got []")
    return tuple(self.of(x, str, f"{where}[{i}]") for i, x in enumerate(items))

  def str_map(self, value: Any, where: str, nullable: bool = False) -> Mapping[str, str] | None:
    """``value`` as an object of string values."""
    if value is None and nullable:
      return None
    return {k: self.of(v, str, f"{where}.{k}") for k, v in self.of(value, Mapping, where).items()}

  def enum(self, cls: type[E], value: Any, where: str, nullable: bool = False) -> E | None:
    """``value`` as a member of the string enum ``cls`` (or None, when ``nullable``): a
    misspelt value does not read."""
    if value is None and nullable:
      return None
    try:
      return cls(self.of(value, str, where, nullable=nullable))
    except ValueError:
      raise self.fail(where, f"expected one of {', '.join(str(m.value) for m in cls)}"
                             f"{' or null' if nullable else ''}, got {quote(value)}") from None

  def date(self, value: Any, where: str, nullable: bool = False) -> datetime.date | None:
    """``value`` as a calendar date written YYYY-MM-DD."""
    if value is None and nullable:
      return None
    try:
      return datetime.date.fromisoformat(self.of(value, str, where))
    except ValueError:
      raise self.fail(where, f"expected a date YYYY-MM-DD, got {quote(value)}") from None
