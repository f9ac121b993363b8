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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version
from jaxport import _json
from jaxport._records import Strict
from jaxport.errors import ExpectedStatusError
from jaxport.harness._judge import _releases

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
  strict = Strict(lambda at, what: _bad(where, f"{at}: {what}"))
  data = strict.obj(data, "the table",
                    ("format_version", "releases", "expected_failures", "unrecordable"), ())
  if strict.count(data["format_version"], "format_version") != TABLE_FORMAT:
    raise strict.fail("format_version", f"expected {TABLE_FORMAT}, got {data['format_version']}")
  releases = strict.strs(data["releases"], "releases", nonempty=True)
  for v in releases:
    try:
      _releases.release_date(v)
    except ValueError as e:
      raise strict.fail("releases", str(e)) from None
  rules = []
  for i, row in enumerate(strict.of(data["expected_failures"], list, "expected_failures")):
    at = f"expected_failures[{i}]"
    row = strict.obj(row, at, ("producer", "reason", "match"),
                     ("case", "cases", "consumers", "matrix_cell"))
    producer = _producer(strict, row, at, releases)
    reason = strict.of(row["reason"], str, f"{at}.reason")
    if len(reason) < 10:
      raise strict.fail(f"{at}.reason", f"must say why the entry fails, got {reason!r}")
    try:
      re.compile(strict.of(row["match"], str, f"{at}.match"))
    except re.error as e:
      raise strict.fail(f"{at}.match", f"not a regular expression ({e})") from None
    if "case" in row and "cases" in row:
      raise strict.fail(at, "give case or cases, not both")
    case = strict.of(row.get("case"), str, f"{at}.case", nullable=True)
    cases = (case,) if case is not None else strict.strs(row.get("cases"), f"{at}.cases",
                                                         nullable=True, nonempty=True)
    consumers = strict.strs(row.get("consumers"), f"{at}.consumers", nullable=True, nonempty=True)
    cell = None
    if consumers is not None:
      cell = _matrix_cell(strict, row.get("matrix_cell"), producer, consumers,
                          f"{at}.matrix_cell")
    elif "matrix_cell" in row:
      raise strict.fail(at, "matrix_cell cites the cell of a row's consumers; give consumers")
    rules.append(Rule(producer, reason, row["match"], cases, consumers, cell))
  unrecordable = {}
  for i, row in enumerate(strict.of(data["unrecordable"], list, "unrecordable")):
    at = f"unrecordable[{i}]"
    row = strict.obj(row, at, ("producer", "case", "reason"), ())
    key = (_producer(strict, row, at, releases), strict.of(row["case"], str, f"{at}.case"))
    unrecordable[key] = strict.of(row["reason"], str, f"{at}.reason")
  return Table(tuple(releases), tuple(rules), unrecordable)


def _producer(strict: Strict, row: Mapping[str, Any], at: str, releases: tuple[str, ...]) -> str:
  producer = strict.of(row["producer"], str, f"{at}.producer")
  if producer not in releases:
    raise strict.fail(f"{at}.producer", f"{producer!r} is not in releases {list(releases)}")
  return producer


def _matrix_cell(strict: Strict, cell: Any, producer: str, consumers: tuple[str, ...],
                 at: str) -> MatrixCell:
  """The cited cell of a row limited to some consumers: required, and of the row's pair."""
  if cell is None:
    raise strict.fail(at, "a row limited to consumers cites its measured matrix cell, an object "
                          f"with keys {[f.name for f in dataclasses.fields(MatrixCell)]}")
  cell = strict.record(MatrixCell, cell, at)
  cell_producer = strict.of(cell["producer"], str, f"{at}.producer")
  consumer = strict.of(cell["consumer"], str, f"{at}.consumer")
  if cell_producer != producer or consumer not in consumers:
    raise strict.fail(at, f"the cell of jax {cell_producer} on jax {consumer} is not the row's "
                          f"pair (producer {producer}, consumers {list(consumers)})")
  passed = strict.count(cell["passed"], f"{at}.passed")
  replayed = strict.count(cell["replayed"], f"{at}.replayed")
  if passed >= replayed:
    raise strict.fail(at, f"the cell shows {passed} of {replayed} passing: no failure to cite")
  strict.date(cell["measured"], f"{at}.measured")
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
  # local: only this command reads a report; the harness's pytest side never loads these
  from jaxport.report import load_report
  from jaxport.report._markdown import window_table
  from jaxport.report._views import window_rows
  report = load_report(args.report)
  print(window_table(report), end="")
  return 1 if any(w.policy_violations for w in window_rows(report)) else 0


if __name__ == "__main__":
  raise SystemExit(main())
