"""Outcomes of JAX's suites run through jax and through jaxport, the deviation table, the verdict.

Pure functions over plain data: the pytest plugin records ``CaseResult``s, the
runner loads them as ``SuiteRun``s, ``judge`` compares the two modes against
the reviewed ``deviations.json`` and ``table`` prints the summary.
"""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

MODES = ("jax", "jaxport")


class Outcome(str, enum.Enum):
  PASSED = "passed"
  FAILED = "failed"
  SKIPPED = "skipped"


@dataclasses.dataclass(frozen=True)
class CaseResult:
  outcome: Outcome
  message: str = ""

  def to_json(self) -> dict:
    return {"outcome": self.outcome.value, "message": self.message}

  @classmethod
  def from_json(cls, d: Mapping) -> "CaseResult":
    return cls(Outcome(d["outcome"]), str(d.get("message", "")))


def partial_path(results: Path) -> Path:
  """Where a run appends each finished test, so a run cut short still tells what it saw."""
  return results.with_name(results.name + ".partial")


def outcome_of(when: str, outcome: str) -> Outcome | None:
  """The test outcome one pytest report phase stands for, or None if it says nothing new."""
  if outcome == "failed":
    return Outcome.FAILED
  if outcome == "skipped" and when in ("setup", "call"):
    return Outcome.SKIPPED
  if outcome == "passed" and when == "call":
    return Outcome.PASSED
  return None


def merge(old: CaseResult | None, new: CaseResult) -> CaseResult:
  """A test's result over its phases: a failure in any phase wins."""
  if old is not None and old.outcome is Outcome.FAILED:
    return old
  return new


def first_line(text: str) -> str:
  """The exception line of a pytest failure report (the first line starting with 'E ')."""
  for line in text.splitlines():
    if line.startswith("E "):
      return line[1:].strip()
  lines = [l for l in text.splitlines() if l.strip()]
  return lines[-1].strip() if lines else ""


@dataclasses.dataclass(frozen=True)
class SuiteRun:
  """One suite run in one mode: per-test results and the jaxport call counts."""

  suite: str
  mode: str
  results: Mapping[str, CaseResult]
  counts: Mapping[str, int]
  exit_status: int
  error: str = ""  # why the run did not finish; results then hold what it recorded

  def tally(self) -> dict[Outcome, int]:
    out = {o: 0 for o in Outcome}
    for r in self.results.values():
      out[r.outcome] += 1
    return out

  @classmethod
  def load(cls, suite: str, mode: str, path: Path, exit_status: int,
           why_incomplete: str = "") -> "SuiteRun":
    """The run's results; from the per-test lines of ``partial_path`` if it did not finish."""
    if not path.is_file():
      results, counts = {}, {}
      partial = partial_path(path)
      if partial.is_file():
        for line in partial.read_text().splitlines():
          if line.strip():
            d = json.loads(line)
            results[d["nodeid"]] = CaseResult.from_json(d)
            counts = d.get("counts", {})
      why = why_incomplete or f"pytest exit status {exit_status}"
      return cls(suite, mode, results, counts, exit_status,
                 error=f"incomplete ({why}): {len(results)} test(s) recorded")
    d = json.loads(path.read_text())
    return cls(suite, mode, {k: CaseResult.from_json(v) for k, v in d["results"].items()},
               dict(d.get("counts", {})), exit_status)


@dataclasses.dataclass(frozen=True)
class Deviation:
  """A reviewed jaxport failure: which tests, why, and what their failure must say."""

  suite: str
  test: str      # a test id below the suite, or an fnmatch pattern
  kind: str      # "deliberate" (jaxport differs on purpose) or "rebinding" (an artefact)
  reason: str
  match: str     # a regular expression every listed failure message must match

  def covers(self, suite: str, short_id: str) -> bool:
    return suite == self.suite and fnmatch.fnmatchcase(short_id, self.test)


DEVIATION_KINDS = ("deliberate", "rebinding")


def load_deviations(path: Path) -> list[Deviation]:
  """The reviewed table; refuses rows with missing fields, unknown kinds or bad patterns."""
  rows = json.loads(path.read_text())["deviations"]
  out = []
  for i, row in enumerate(rows):
    missing = [f.name for f in dataclasses.fields(Deviation) if not row.get(f.name)]
    if missing:
      raise ValueError(f"{path}: deviation {i} lacks {', '.join(missing)}")
    if row["kind"] not in DEVIATION_KINDS:
      raise ValueError(f"{path}: deviation {i}: kind {row['kind']!r} is not one of "
                       f"{DEVIATION_KINDS}")
    re.compile(row["match"])
    out.append(Deviation(**{f.name: row[f.name] for f in dataclasses.fields(Deviation)}))
  return out


def short_id(nodeid: str) -> str:
  """``export_test.py::JaxExportTest::test_basic`` -> ``JaxExportTest::test_basic``."""
  return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


class ProblemKind(str, enum.Enum):
  UNLISTED_FAILURE = "jaxport failure not in the deviation table"
  WRONG_MESSAGE = "listed jaxport failure with another message than the table's"
  SKIPPED_ONLY_IN_JAXPORT = "jax passes, jaxport skips"
  JAXPORT_NOT_CALLED = "the suite never called jaxport"
  NO_RESULTS = "the suite's run did not finish"


@dataclasses.dataclass(frozen=True)
class Problem:
  kind: ProblemKind
  suite: str
  test: str
  detail: str

  def __str__(self) -> str:
    return f"{self.suite}::{self.test}: {self.kind.value}: {self.detail}"


@dataclasses.dataclass(frozen=True)
class Verdict:
  problems: tuple[Problem, ...]
  listed: tuple[tuple[str, str, Deviation], ...]   # (suite, test, row) for listed failures
  stale: tuple[Deviation, ...]                     # rows whose tests all pass under jaxport
  # (suite, test, jax outcome, jaxport outcome) wherever the two modes differ
  differing: tuple[tuple[str, str, Outcome | None, Outcome | None], ...] = ()
  # (suite, test, message) of failures jax itself has with the same message (a suite run
  # from a newer source than the installed jax): not jaxport's deviations
  failing_under_jax: tuple[tuple[str, str, str], ...] = ()

  @property
  def ok(self) -> bool:
    return not self.problems


def judge(runs: Sequence[SuiteRun], deviations: Sequence[Deviation]) -> Verdict:
  """Compare each suite's jaxport run with its jax run and the table."""
  by_key = {(r.suite, r.mode): r for r in runs}
  problems: list[Problem] = []
  listed: list[tuple[str, str, Deviation]] = []
  failing_under_jax: list[tuple[str, str, str]] = []
  used: set[int] = set()
  for suite in sorted({r.suite for r in runs}):
    ours, theirs = by_key.get((suite, "jaxport")), by_key.get((suite, "jax"))
    for run in (ours, theirs):
      if run is not None and run.error:
        problems.append(Problem(ProblemKind.NO_RESULTS, suite, f"[{run.mode}]", run.error))
    if ours is None:
      continue
    if ours.results and not any(ours.counts.values()) and not ours.error:
      problems.append(Problem(ProblemKind.JAXPORT_NOT_CALLED, suite, "*",
                              "no call into jaxport's export, call or deserialize was counted; "
                              "the suite may still be using jax's implementation"))
    for nodeid, res in sorted(ours.results.items()):
      tid = short_id(nodeid)
      row = next((d for d in deviations if d.covers(suite, tid)), None)
      if row is not None:
        used.add(id(row))
      jax_res = theirs.results.get(nodeid) if theirs is not None else None
      if res.outcome is Outcome.FAILED:
        if (row is None and jax_res is not None and jax_res.outcome is Outcome.FAILED
            and jax_res.message == res.message):
          failing_under_jax.append((suite, tid, res.message))
        elif row is None:
          problems.append(Problem(ProblemKind.UNLISTED_FAILURE, suite, tid, res.message))
        elif not re.search(row.match, res.message):
          problems.append(Problem(ProblemKind.WRONG_MESSAGE, suite, tid,
                                  f"{res.message!r} does not match {row.match!r}"))
        else:
          listed.append((suite, tid, row))
      elif (res.outcome is Outcome.SKIPPED and jax_res is not None
            and jax_res.outcome is Outcome.PASSED and row is None):
        problems.append(Problem(ProblemKind.SKIPPED_ONLY_IN_JAXPORT, suite, tid, res.message))
  listed_ids = {id(r) for _, _, r in listed}
  ran_suites = {r.suite for r in runs if r.mode == "jaxport" and r.results}
  stale = tuple(d for d in deviations
                if d.suite in ran_suites and id(d) in used and id(d) not in listed_ids)
  return Verdict(tuple(problems), tuple(listed), stale, tuple(_differing(by_key)),
                 tuple(failing_under_jax))


def _differing(by_key: Mapping[tuple[str, str], SuiteRun]):
  for suite in sorted({s for s, _ in by_key}):
    ours, theirs = by_key.get((suite, "jaxport")), by_key.get((suite, "jax"))
    if ours is None or theirs is None:
      continue
    common = set(ours.results) & set(theirs.results)
    everything = set(ours.results) | set(theirs.results)
    for nodeid in sorted(common if ours.error or theirs.error else everything):
      a, b = theirs.results.get(nodeid), ours.results.get(nodeid)
      if a is None or b is None or a.outcome is not b.outcome:
        yield (suite, short_id(nodeid), a and a.outcome, b and b.outcome)


def table(runs: Iterable[SuiteRun]) -> str:
  """The suite x passed/failed/skipped table for both modes, with jaxport's call counts."""
  runs = list(runs)
  by_key = {(r.suite, r.mode): r for r in runs}
  suites = sorted({r.suite for r in runs})
  header = ("| suite | jax passed | jax failed | jax skipped | jaxport passed | "
            "jaxport failed | jaxport skipped | jaxport calls (export/call/deserialize) |")
  lines = [header, "|" + "---|" * 8]
  for suite in suites:
    cells = [suite]
    for mode in MODES:
      run = by_key.get((suite, mode))
      if run is None or not run.results:
        cells += ["-"] * 3
      else:
        t = run.tally()
        cells += [str(t[Outcome.PASSED]), str(t[Outcome.FAILED]), str(t[Outcome.SKIPPED])]
    ours = by_key.get((suite, "jaxport"))
    counts = ours.counts if ours is not None else {}
    cells.append("/".join(str(counts.get(k, 0)) for k in ("export", "call", "deserialize")))
    if any(r.error for m in MODES if (r := by_key.get((suite, m))) is not None):
      cells[0] += " (incomplete)"
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)
