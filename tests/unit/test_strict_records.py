"""The one strict field reader: each reader of a file or message gets its own error, worded
alike, naming the key path of what is wrong."""

from __future__ import annotations

import dataclasses
import datetime
import enum

import pytest

from jaxport._records import QUOTE_CHARS, Strict


class Bad(Exception):
  pass


STRICT = Strict(lambda at, what: Bad(f"{at}: {what}"))


class Colour(enum.StrEnum):
  RED = "red"
  BLUE = "blue"


@dataclasses.dataclass
class Point:
  x: int
  y: int


def test_a_value_of_the_asked_type_reads_as_itself():
  assert STRICT.of(3, int, "n") == 3
  assert STRICT.of(None, str, "s", nullable=True) is None
  assert STRICT.number(2, "f") == 2.0 and isinstance(STRICT.number(2, "f"), float)
  assert STRICT.strs(["a", "b"], "names") == ("a", "b")
  assert STRICT.str_map({"a": "b"}, "m") == {"a": "b"}
  assert STRICT.enum(Colour, "red", "c") is Colour.RED
  assert STRICT.date("2026-01-31", "d") == datetime.date(2026, 1, 31)
  assert STRICT.record(Point, {"x": 1, "y": 2}, "p") == {"x": 1, "y": 2}
  assert STRICT.count(0, "n") == 0


@pytest.mark.parametrize("read, message", [
    (lambda: STRICT.of(True, int, "a.n"), "a.n: expected int, got True"),
    (lambda: STRICT.of(True, (int, float), "a.n"), "a.n: expected int or float, got True"),
    (lambda: STRICT.number(False, "t"), "t: expected int or float, got False"),
    (lambda: STRICT.of(None, str, "s"), "s: expected str, got None"),
    (lambda: STRICT.of(1, str, "s", nullable=True), "s: expected str or null, got 1"),
    (lambda: STRICT.count(-1, "n"), "n: expected a count"),
    (lambda: STRICT.count(True, "n"), "n: expected a count"),
    (lambda: STRICT.strs(["a", 2], "names"), r"names\[1\]: expected str, got 2"),
    (lambda: STRICT.strs([], "names", nonempty=True), "names: expected a non-empty list"),
    (lambda: STRICT.str_map({"k": 1}, "m"), "m.k: expected str, got 1"),
    (lambda: STRICT.enum(Colour, "green", "c"), "c: expected one of red, blue, got 'green'"),
    (lambda: STRICT.date("31/01/2026", "d"), "d: expected a date YYYY-MM-DD"),
    (lambda: STRICT.record(Point, {"x": 1}, "p"), "p: missing y"),
    (lambda: STRICT.record(Point, {"x": 1, "y": 2, "z": 3}, "p"), "p: unknown key 'z'"),
    (lambda: STRICT.record(Point, {"x": 1, "z": 3, "w": 4}, "p"),
     "p: missing y; unknown keys 'w', 'z'"),
    (lambda: STRICT.obj([1], "p"), "p: expected an object, got list"),
], ids=["bool-as-int", "bool-as-number", "bool-seconds", "null", "not-nullable-type",
        "negative-count", "bool-count", "list-item", "empty-list", "map-value", "enum",
        "date", "missing", "unknown", "missing-and-unknown", "not-an-object"])
def test_a_value_of_another_shape_raises_the_readers_own_error_naming_its_path(read, message):
  with pytest.raises(Bad, match=message):
    read()


def test_a_long_bad_value_is_quoted_cut_short():
  with pytest.raises(Bad) as e:
    STRICT.of("x" * 10_000, int, "n")
  assert len(str(e.value)) < QUOTE_CHARS + 100 and str(e.value).endswith("...")


def test_an_object_may_allow_any_other_key_when_no_optional_keys_are_named():
  assert STRICT.obj({"a": 1, "extra": 2}, "o", ("a",)) == {"a": 1, "extra": 2}
  with pytest.raises(Bad, match="unknown key 'extra'"):
    STRICT.obj({"a": 1, "extra": 2}, "o", ("a",), ("b",))


def test_a_reader_raising_an_error_class_words_its_refusals_key_path_first():
  with pytest.raises(Bad, match=r"^p\.x: expected int, got 'a'$"):
    Strict.raising(Bad).of("a", int, "p.x")
