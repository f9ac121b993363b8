"""The id of a golden entry as a value: ``<platform>/<family>/<case_id>/<folder>``.

A leaf module (standard library only), so that the store, the harness and the report read an
id's parts the same way and none of them splits the text itself.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import re
from typing import Any

# The folder name of an entry: record date, optional same-day revision, producing jax release.
FOLDER_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:\.([2-9]|[1-9]\d{1,2}))?_jax-(.+)")
FOLDER_FORM = "<YYYY-MM-DD>[.<revision>]_jax-<version>"
# What the report says of an entry whose folder names no producer.
UNKNOWN_PRODUCER = "unknown"


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class EntryId:
  """The four parts of an entry id. ``str(entry_id)`` is the id's text, and ids sort as their
  texts do (``a-x/...`` before ``a/...``), so that a report lists entries in one order whether
  it holds ids or reads their text."""

  platform: str
  family: str
  case_id: str
  folder: str

  @classmethod
  def parse(cls, text: str) -> EntryId:
    """The id ``text`` names; ValueError, naming the expected form, for any other text."""
    parts = split_parts(text) if isinstance(text, str) else []
    if len(parts) != 4 or not all(parts):
      raise ValueError(f"bad entry id {text!r}; expected '<platform>/<family>/<case_id>/"
                       f"{FOLDER_FORM}'")
    return cls(*parts)

  @classmethod
  def from_folder(cls, folder: str | os.PathLike) -> EntryId:
    """The id of the entry whose folder is ``folder``: its last four path parts
    (``<store>/<platform>/<family>/<case_id>/<folder>``); ValueError when it has fewer."""
    path = pathlib.PurePath(folder)
    parts = path.parts[1 if path.anchor else 0:][-4:]
    if len(parts) != 4:
      raise ValueError(f"{os.fspath(folder)!r} is not an entry folder; expected "
                       f"'<store>/<platform>/<family>/<case_id>/{FOLDER_FORM}'")
    return cls(*parts)

  def __str__(self) -> str:
    return f"{self.platform}/{self.family}/{self.case_id}/{self.folder}"

  def __lt__(self, other: object) -> bool:
    if not isinstance(other, EntryId):
      raise TypeError(f"an EntryId is compared only with an EntryId, not "
                      f"{type(other).__name__} {other!r}; EntryId.parse(text) reads an id's text.")
    return str(self) < str(other)

  @property
  def parts(self) -> tuple[str, str, str, str]:
    """The four parts, in the order of the id (the entry's folders below the store)."""
    return (self.platform, self.family, self.case_id, self.folder)

  @property
  def case_key(self) -> str:
    """The id without its folder: the case's entries on the platform share it."""
    return f"{self.platform}/{self.family}/{self.case_id}"

  @property
  def producer(self) -> str:
    """The jax release the folder names (``..._jax-0.10.2``), or ``unknown``."""
    m = FOLDER_RE.fullmatch(self.folder)
    return m.group(3) if m else UNKNOWN_PRODUCER


def require_entry_id(value: object, where: str) -> EntryId:
  """``value`` if it is an :class:`EntryId`; TypeError naming ``where`` and the parser for
  anything else (an id's text is parsed where it is read, not where it is used)."""
  if not isinstance(value, EntryId):
    raise TypeError(f"{where} takes an EntryId, not {type(value).__name__} {value!r}; "
                    "EntryId.parse(text) reads an id's text.")
  return value


def read_entry_id(strict: Any, value: Any, where: str, nullable: bool = False) -> EntryId | None:
  """The entry id whose text ``value`` is, in decoded JSON (a request, an answer, a part file);
  ``strict`` (a :class:`jaxport._records.Strict`) raises its error naming ``where`` for anything
  else."""
  text = strict.of(value, str, where, nullable=nullable)
  if text is None:
    return None
  try:
    return EntryId.parse(text)
  except ValueError:
    raise strict.fail(where, f"expected an entry id '<platform>/<family>/<case_id>/"
                             f"{FOLDER_FORM}', got {text!r}") from None


def split_parts(text: str) -> list[str]:
  """The '/'-separated parts of a text that may name an entry, unchecked (readers of hostile
  text check them; :meth:`EntryId.parse` takes only four non-empty ones)."""
  return text.split("/")

