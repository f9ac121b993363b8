"""Reading a report's fields strictly: each reader names the file and the key path of what
is wrong and says which report this package reads."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._vocabulary import Finding
from jaxport.errors import ReportError

# The report format this package reads and writes (the harness writes it too). Format 2 adds
# typed findings (kind, subject, message, reader) to each entry, and the run's shard.
REPORT_FORMAT = 2


def bad(where: str, what: str) -> ReportError:
  return ReportError(f"{where}: {what}. Is this a report written by `pytest "
                     f"--compat-report=FILE.json` (format {REPORT_FORMAT})?")


def obj(value: Any, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
  if not isinstance(value, Mapping):
    raise bad(where, f"expected an object, got {type(value).__name__}")
  missing = [k for k in keys if k not in value]
  if missing:
    raise bad(where, f"missing {', '.join(missing)}")
  return value


def typed(value: Any, where: str, kind: type | tuple[type, ...], nullable: bool = False) -> Any:
  if value is None and nullable:
    return None
  # bool is an int in Python; a count or day number must not be a boolean.
  if (isinstance(value, bool) and kind is int) or not isinstance(value, kind):
    names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
    raise bad(where, f"expected {names}{' or null' if nullable else ''}, got {value!r}")
  return value


def strs(value: Any, where: str, nullable: bool = False) -> tuple[str, ...] | None:
  if value is None and nullable:
    return None
  typed(value, where, list)
  return tuple(typed(v, f"{where}[{i}]", str) for i, v in enumerate(value))


def date_field(value: Any, where: str, nullable: bool = False) -> datetime.date | None:
  if value is None and nullable:
    return None
  try:
    return datetime.date.fromisoformat(typed(value, where, str))
  except ValueError:
    raise bad(where, f"expected a date YYYY-MM-DD, got {value!r}") from None


def iso(d: datetime.date | None) -> str | None:
  return None if d is None else d.isoformat()


FINDING_KEYS = tuple(f.name for f in dataclasses.fields(Finding))


def findings_field(value: Any, where: str) -> tuple[Finding, ...]:
  out = []
  for i, f in enumerate(typed(value, where, list)):
    at = f"{where}[{i}]"
    obj(f, at, FINDING_KEYS)
    try:
      out.append(Finding.from_json(f))
    except ValueError as e:
      raise bad(at, str(e)) from None
  return tuple(out)


def str_map(value: Any, where: str) -> Mapping[str, str] | None:
  if value is None:
    return None
  typed(value, where, Mapping)
  return {k: typed(v, f"{where}.{k}", str) for k, v in value.items()}


def runs_on_field(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  typed(value, where, Mapping)
  return {p: strs(v, f"{where}.{p}") for p, v in value.items()}


def declared_field(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  typed(value, where, Mapping)
  return {typed(p, where, str): strs(ts, f"{where}.{p}") for p, ts in value.items()}
