"""What each (producer release, case) must do when replayed by the current build: the
project's expectations table, and each producer release's position in jax's compat window.

A project's table (``jaxport_expectations`` in its pytest configuration;
jaxport's own is ``harness/expected_status.json``) lists the exceptions to "must
pass": entries of a producer release that must fail, each with the reason and
a regular expression the failure must match (a failure for any other reason
is still a failure). Everything not listed must pass. The judge
(``jaxport.harness._judge._release``) holds each replayed entry to its row.

The table also says which cases a release cannot record at all
(``unrecordable``), so a missing entry is a known gap, not a silent one.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version
from jaxport import _json
from jaxport.errors import ExpectedStatusError
from jaxport.harness import _releases

TABLE_FORMAT = 1

# What a row of the table expects of an entry (``Expectation.status``).
EXPECT_PASS = "pass"
EXPECT_FAIL = "fail"

@dataclasses.dataclass(frozen=True)
class MatrixCell:
  """The measured producer x consumer cell a row cites as its evidence: how many of the
  producer's entries the consumer release's own ``jax.export`` replayed, and passed."""
  producer: str
  consumer: str
  passed: int
  replayed: int
  measured: str        # the ISO date of the matrix run


@dataclasses.dataclass(frozen=True)
class Rule:
  """Entries of ``producer`` (of the listed cases, or of every case), replayed by one of
  ``consumers`` (or by any consumer), must fail as ``match`` says."""
  producer: str
  reason: str
  match: str
  cases: tuple[str, ...] | None = None
  consumers: tuple[str, ...] | None = None
  matrix_cell: MatrixCell | None = None

  @property
  def case(self) -> str | None:
    """The one case of a row that names one (None for a row of several or of every case)."""
    return self.cases[0] if self.cases is not None and len(self.cases) == 1 else None

  def applies(self, producer: str | None, case_id: str, consumer: str | None = None) -> bool:
    return (producer == self.producer and (self.cases is None or case_id in self.cases)
            and (self.consumers is None or consumer in self.consumers))


@dataclasses.dataclass(frozen=True)
class Expectation:
  status: str                  # EXPECT_PASS or EXPECT_FAIL
  reason: str | None = None
  match: str | None = None


@dataclasses.dataclass(frozen=True)
class Table:
  releases: tuple[str, ...]
  rules: tuple[Rule, ...]
  unrecordable: dict[tuple[str, str], str]

  def expectation(self, producer: str | None, case_id: str,
                  consumer: str | None = None) -> Expectation:
    hits = [r for r in self.rules if r.applies(producer, case_id, consumer)]
    if not hits:
      return Expectation(EXPECT_PASS)
    return Expectation(EXPECT_FAIL, hits[0].reason, hits[0].match)

  def recordable(self, producer: str, case_id: str) -> bool:
    return (producer, case_id) not in self.unrecordable


def _bad(where: str, what: str) -> ExpectedStatusError:
  return ExpectedStatusError(f"{where}: {what}. Fix the project's expectations table (the "
                             "file its jaxport_expectations setting names).")


def parse_table(data: Any, where: str = "the expected-status table") -> Table:
  """Validate the decoded JSON of the table."""
  keys = {"format_version", "releases", "expected_failures", "unrecordable"}
  if not isinstance(data, dict) or set(data) != keys:
    got = sorted(data) if isinstance(data, dict) else type(data).__name__
    raise _bad(where, f"expected an object with keys {sorted(keys)}, got {got}")
  if data["format_version"] != TABLE_FORMAT:
    raise _bad(where, f"format_version expected {TABLE_FORMAT}, got {data['format_version']!r}")
  releases = data["releases"]
  if not isinstance(releases, list) or not releases:
    raise _bad(where, "releases: expected a non-empty list of jax versions")
  for v in releases:
    try:
      _releases.release_date(v)
    except ValueError as e:
      raise _bad(where, f"releases: {e}") from None
  rules = []
  for i, row in enumerate(data["expected_failures"]):
    at = f"expected_failures[{i}]"
    allowed = {"producer", "case", "cases", "consumers", "matrix_cell", "reason", "match"}
    if not isinstance(row, dict) or not {"producer", "reason", "match"} <= set(row) <= allowed:
      raise _bad(where, f"{at}: expected keys producer, reason, match and optionally case or "
                        "cases, consumers and matrix_cell; "
                        f"got {sorted(row) if isinstance(row, dict) else row!r}")
    if row["producer"] not in releases:
      raise _bad(where, f"{at}: producer {row['producer']!r} is not in releases {releases}")
    if not isinstance(row["reason"], str) or len(row["reason"]) < 10:
      raise _bad(where, f"{at}: reason must say why the entry fails, got {row['reason']!r}")
    try:
      re.compile(row["match"])
    except (re.error, TypeError) as e:
      raise _bad(where, f"{at}: match is not a regular expression ({e})") from None
    if row.get("case") is not None and not isinstance(row["case"], str):
      raise _bad(where, f"{at}: case must be a case id or absent, got {row['case']!r}")
    if "case" in row and "cases" in row:
      raise _bad(where, f"{at}: give case or cases, not both")
    cases = _names(row, "cases", at, where)
    if row.get("case") is not None:
      cases = (row["case"],)
    consumers = _names(row, "consumers", at, where)
    cell = None
    if consumers is not None:
      cell = _matrix_cell(row.get("matrix_cell"), row["producer"], consumers, f"{at}.matrix_cell",
                          where)
    elif "matrix_cell" in row:
      raise _bad(where, f"{at}: matrix_cell cites the cell of a row's consumers; give consumers")
    rules.append(Rule(row["producer"], row["reason"], row["match"], cases, consumers, cell))
  unrecordable = {}
  for i, row in enumerate(data["unrecordable"]):
    at = f"unrecordable[{i}]"
    if not isinstance(row, dict) or set(row) != {"producer", "case", "reason"}:
      raise _bad(where, f"{at}: expected keys case, producer, reason")
    if row["producer"] not in releases:
      raise _bad(where, f"{at}: producer {row['producer']!r} is not in releases {releases}")
    unrecordable[(row["producer"], row["case"])] = row["reason"]
  return Table(tuple(releases), tuple(rules), unrecordable)


def _names(row: dict, key: str, at: str, where: str) -> tuple[str, ...] | None:
  value = row.get(key)
  if value is None:
    return None
  if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
    raise _bad(where, f"{at}: {key} must be a non-empty list of names, got {value!r}")
  return tuple(value)


def _matrix_cell(cell: Any, producer: str, consumers: tuple[str, ...], at: str,
                 where: str) -> MatrixCell:
  """The cited cell of a row limited to some consumers: required, and of the row's pair."""
  keys = {f.name for f in dataclasses.fields(MatrixCell)}
  if not isinstance(cell, dict) or set(cell) != keys:
    raise _bad(where, f"{at}: a row limited to consumers cites its measured matrix cell, an "
                      f"object with keys {sorted(keys)}; got {cell!r}")
  if cell["producer"] != producer or cell["consumer"] not in consumers:
    raise _bad(where, f"{at}: the cell of jax {cell['producer']} on jax {cell['consumer']} is "
                      f"not the row's pair (producer {producer}, consumers {list(consumers)})")
  for k in ("passed", "replayed"):
    if not isinstance(cell[k], int) or isinstance(cell[k], bool) or cell[k] < 0:
      raise _bad(where, f"{at}.{k}: expected a count, got {cell[k]!r}")
  if cell["passed"] >= cell["replayed"]:
    raise _bad(where, f"{at}: the cell shows {cell['passed']} of {cell['replayed']} passing: "
                      "no failure to cite")
  try:
    datetime.date.fromisoformat(cell["measured"])
  except (TypeError, ValueError):
    raise _bad(where, f"{at}.measured: expected the matrix run's date 'YYYY-MM-DD', got "
                      f"{cell['measured']!r}") from None
  return MatrixCell(**cell)


@functools.cache
def load_table(path: str | Path) -> Table:
  """The table at ``path``."""
  p = Path(path)
  return parse_table(_json.load_file(p, f"{p} (the expected-status table)", ExpectedStatusError),
                     str(p))


def window_for(producer: str | None, consumer: str | None,
               today: datetime.date) -> _releases.WindowPosition | None:
  """The window position, or None when a release date is unknown (pre-releases, jaxport)."""
  if producer is None or consumer is None:
    return None
  try:
    return _releases.window_position(producer, consumer, today)
  except ValueError:
    return None


def release_windows(producers: Iterable[str], today: datetime.date,
                    consumer: str | None = None) -> dict[str, dict[str, Any]]:
  """The report's ``release_windows``: each producer release's window position against
  ``consumer`` (the installed jax by default), for every release with a known date.

  Unlike the judge's release verdict it needs no expected-status table, so a project without one
  still sees each release's date, age and gap."""
  consumer = consumer or installed_jax_version()
  out = {}
  for producer in sorted(set(producers)):
    window = window_for(producer, consumer, today)
    if window is not None:
      out[producer] = window.to_dict()
  return out


def main(argv: list[str] | None = None) -> int:
  """``python -m harness.tools.expected_status REPORT.json``: print the compat-window table."""
  import argparse
  parser = argparse.ArgumentParser(description="Print the compat-window table of a compat report.")
  parser.add_argument("report", help="the JSON report a run wrote with --compat-report=FILE")
  args = parser.parse_args(argv)
  from jaxport.report import load_report
  from jaxport.report._markdown import window_table
  from jaxport.report._views import window_rows
  report = load_report(args.report)
  print(window_table(report), end="")
  return 0 if all(w.policy_ok for w in window_rows(report)) else 1


if __name__ == "__main__":
  raise SystemExit(main())
