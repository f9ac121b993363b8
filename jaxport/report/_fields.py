"""Reading a report's fields strictly: each reader names the file and the key path of what
is wrong and says which report this package reads."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jaxport._records import Strict
from jaxport._vocabulary import Finding
from jaxport.errors import ReportError
from jaxport.golden import _entry_id
from jaxport.golden._entry_id import EntryId

# The report format this package reads and writes (the harness writes it too). Format 2 added
# typed findings (kind, subject, message, reader) to each entry, and the run's shard; format 3
# drops the release record's ``policy_ok``, which only restated its verdict.
REPORT_FORMAT = 3


def bad(where: str, what: str) -> ReportError:
  return ReportError(f"{where}: {what}. Is this a report written by `pytest "
                     f"--compat-report=FILE.json` (format {REPORT_FORMAT})?")


# The field readers, raising :func:`bad`.
STRICT = Strict(bad)


def read_entry_id(value: Any, where: str, nullable: bool = False) -> EntryId | None:
  """An entry id's text in a report file, as the id it names (a refusal is a ``ReportError``)."""
  return _entry_id.read_entry_id(STRICT, value, where, nullable=nullable)


def id_text(entry_id: EntryId | None) -> str | None:
  """The text a report file holds for an entry id (None stays null)."""
  return None if entry_id is None else str(entry_id)


def iso(d: datetime.date | None) -> str | None:
  return None if d is None else d.isoformat()


FINDING_KEYS = tuple(f.name for f in dataclasses.fields(Finding))


def findings_field(value: Any, where: str) -> tuple[Finding, ...]:
  return tuple(Finding.from_json(f, f"{where}[{i}]", STRICT)
               for i, f in enumerate(STRICT.of(value, list, where)))


def str_map(value: Any, where: str) -> Mapping[str, str] | None:
  return STRICT.str_map(value, where, nullable=True)


def runs_on_field(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  STRICT.of(value, Mapping, where)
  return {p: STRICT.strs(v, f"{where}.{p}") for p, v in value.items()}


def declared_field(value: Any, where: str) -> Mapping[str, tuple[str, ...]] | None:
  if value is None:
    return None
  STRICT.of(value, Mapping, where)
  return {STRICT.of(p, str, where): STRICT.strs(ts, f"{where}.{p}") for p, ts in value.items()}
