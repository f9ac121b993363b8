"""Records that read and write themselves from their fields (``jaxport._record_codec``): what
the fields' types write, what reads back, and each refusal naming the key path and raised as
the record's own error (or its reader's)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from jaxport._record_codec import counted, json_record, key
from jaxport._records import Strict
from jaxport.golden._entry_id import EntryId


class Bad(Exception):
  pass


class Other(Exception):
  pass


STRICT = Strict(lambda at, what: Bad(f"{at}: {what}"))
OTHER = Strict(lambda at, what: Other(f"{at}: {what}"))
ENTRY = EntryId.parse("cpu/fam/case/2026-11-30_jax-0.10.2")


class Colour(enum.StrEnum):
  RED = "red"
  BLUE = "blue"


@json_record(STRICT)
@dataclasses.dataclass(frozen=True)
class Finding:
  kind: Colour
  text: str
  detail: str | None = None


@json_record(STRICT)
@dataclasses.dataclass(frozen=True)
class Entry:
  entry_id: EntryId
  day: datetime.date
  score: float
  count: int = key(read=counted)
  findings: tuple[Finding, ...] = ()
  best: Finding | None = None
  tags: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
  pair: tuple[str, int] | None = None
  folder: Path | None = None
  note: str = key(name="remark", default="", omit_default=True)
  extra: Any = key(default=None, optional=True)


@json_record(STRICT)
@dataclasses.dataclass(frozen=True)
class Run:
  entries: tuple[Entry, ...]
  colour: Colour | None = None


@json_record(STRICT, unknown_keys=True)
@dataclasses.dataclass(frozen=True)
class Counts:
  by_colour: Mapping[Colour, int] = key(inline=("red", "blue"))
  total: int


def _entry(**changes: Any) -> Entry:
  return dataclasses.replace(
      Entry(ENTRY, datetime.date(2026, 11, 30), 0.5, 2,
            (Finding(Colour.RED, "a"), Finding(Colour.BLUE, "b", "why")), Finding(Colour.RED, "c"),
            {"x": ("1", "2")}, ("p", 3), Path("/some/where")), **changes)


def test_a_record_writes_its_fields_by_type_and_reads_back_equal():
  run = Run((_entry(), _entry(note="kept", best=None, pair=None, folder=None)), Colour.BLUE)
  d = json.loads(json.dumps(run.to_json()))
  first = d["entries"][0]
  assert first["entry_id"] == str(ENTRY) and first["day"] == "2026-11-30"
  assert first["findings"][1] == {"kind": "blue", "text": "b", "detail": "why"}
  assert first["tags"] == {"x": ["1", "2"]} and first["pair"] == ["p", 3]
  assert first["folder"] == "/some/where" and "remark" not in first
  assert d["entries"][1]["remark"] == "kept"
  assert list(first) == [f.name for f in dataclasses.fields(Entry) if f.name != "note"]
  assert Run.from_json(d, "run") == run


def test_a_key_omitted_at_its_default_or_optional_reads_as_the_default():
  d = _entry().to_json()
  del d["extra"]
  assert "remark" not in d and Entry.from_json(d, "e") == _entry()


@pytest.mark.parametrize("change, message", [
    (lambda d: d["entries"][0].pop("score"), "run.entries[0]: missing score"),
    (lambda d: d["entries"][0].update(colour="red"), "run.entries[0]: unknown key 'colour'"),
    (lambda d: d["entries"][0].update(count="2"),
     "run.entries[0].count: expected a count (a whole number of 0 or more), got '2'"),
    (lambda d: d["entries"][0].update(score=True), "run.entries[0].score: expected int or float"),
    (lambda d: d["entries"][0]["findings"][1].update(kind="green"),
     "run.entries[0].findings[1].kind: expected one of red, blue, got 'green'"),
    (lambda d: d.update(colour="green"), "run.colour: expected one of red, blue or null"),
    (lambda d: d["entries"][0]["findings"][0].update(text=None),
     "run.entries[0].findings[0].text: expected str, got None"),
    (lambda d: d["entries"][0]["findings"][0].update(detail=3),
     "run.entries[0].findings[0].detail: expected str or null, got 3"),
    (lambda d: d["entries"][0].update(best=[]), "run.entries[0].best: expected an object, got list"),
    (lambda d: d["entries"][0].update(entry_id="cpu/fam"),
     "run.entries[0].entry_id: expected an entry id"),
    (lambda d: d["entries"][0].update(day="30/11/2026"),
     "run.entries[0].day: expected a date YYYY-MM-DD, got '30/11/2026'"),
    (lambda d: d["entries"][0]["tags"].update(y=[1]), "run.entries[0].tags.y[0]: expected str"),
    (lambda d: d["entries"][0].update(pair=["p"]),
     "run.entries[0].pair: expected a list of 2, got 1 items"),
    (lambda d: d.update(entries={}), "run.entries: expected list, got {}"),
], ids=["missing", "unknown", "count", "bool-as-number", "bad-enum", "bad-nullable-enum",
        "null-text", "bad-nullable-text", "bad-nested-record", "bad-entry-id", "bad-date",
        "bad-mapping-item", "short-pair", "not-a-list"])
def test_a_malformed_record_is_refused_naming_the_key_path(change, message):
  d = json.loads(json.dumps(Run((_entry(),)).to_json()))
  change(d)
  with pytest.raises(Bad) as e:
    Run.from_json(d, "run")
  assert str(e.value).startswith(message), str(e.value)


def test_a_reader_that_passes_its_own_strict_gets_its_own_error_for_nested_records():
  d = Run((_entry(),)).to_json()
  d["entries"][0]["findings"][0]["kind"] = "green"
  with pytest.raises(Other, match=r"^answer\.entries\[0\]\.findings\[0\]\.kind: expected one of"):
    Run.from_json(d, "answer", OTHER)


def test_an_inline_mapping_is_keys_of_the_record_itself():
  counts = Counts({Colour.RED: 2, Colour.BLUE: 0}, 2)
  assert counts.to_json() == {"red": 2, "blue": 0, "total": 2}
  assert Counts.from_json({"red": 2, "blue": 0, "total": 2, "newer": 1}, "c") == counts
  with pytest.raises(Bad, match=r"^c: missing blue$"):
    Counts.from_json({"red": 2, "total": 2}, "c")
  with pytest.raises(Bad, match=r"^c\.red: expected int, got 'two'"):
    Counts.from_json({"red": "two", "blue": 0, "total": 2}, "c")


def test_a_type_without_a_json_form_is_refused_when_the_record_is_first_used():
  @json_record(STRICT)
  @dataclasses.dataclass(frozen=True)
  class Odd:
    values: set[str]

  with pytest.raises(TypeError, match="Odd.values: no JSON form"):
    Odd({"a"}).to_json()


def test_a_record_with_derived_keys_writes_them_and_is_never_read_back():
  @json_record(STRICT, also=("size",))
  @dataclasses.dataclass(frozen=True)
  class View:
    items: tuple[str, ...]

    @property
    def size(self) -> int:
      return len(self.items)

  assert View(("a", "b")).to_json() == {"items": ["a", "b"], "size": 2}
  with pytest.raises(TypeError, match="never read back"):
    View.from_json({"items": []}, "v")


def test_a_record_with_a_pair_of_its_own_is_refused_a_derived_one():
  with pytest.raises(TypeError, match="writes no to_json or from_json of its own"):
    @json_record(STRICT)
    @dataclasses.dataclass(frozen=True)
    class Both:
      x: int

      def to_json(self) -> dict:
        return {"x": self.x}


def test_a_record_may_name_itself_and_its_pair_otherwise():
  @json_record(STRICT, names=("to_part", "from_part"), where="part")
  @dataclasses.dataclass(frozen=True)
  class Part:
    x: int

  assert Part(1).to_part() == {"x": 1} and Part.from_part({"x": 1}) == Part(1)
  with pytest.raises(Bad, match=r"^part\.x: expected int"):
    Part.from_part({"x": "1"})
  with pytest.raises(TypeError, match="names where the record is"):
    Entry.from_json(_entry().to_json())
