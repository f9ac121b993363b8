"""What the pages show, computed once from typed reports: the matrix, the history, the window.

The HTML and Markdown writers only lay these out; every judgement (which
status a cell has, where a target changed, which release is inside jax's
window) is made here, so both formats say the same thing.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
from pathlib import PurePath
from collections.abc import Sequence

from jaxport._vocabulary import ANY_PLATFORM, PLATFORMS, ExpectationVerdict, Status
from jaxport.custom_calls import _registry
from jaxport.errors import ReportError
from jaxport.releases import build_of
from jaxport.golden._entry_id import UNKNOWN_PRODUCER, EntryId, require_entry_id
from jaxport.report._entries import EntryResult
from jaxport.report._model import RunReport

NO_CUSTOM_CALL = "(no custom call)"
UNLISTED_GROUP = "not in the stable-target table"
_PLATFORM_ORDER = (*PLATFORMS, ANY_PLATFORM)


class CellStatus(enum.Enum):
  """What a cell of the matrix or the timeline shows, from best to worst.

  Each member is (symbol, label, colour, Markdown badge); ``NOT_COVERED`` is a
  cell with no entry at all.
  """
  PASS = ("✓", "pass", "#2e7d32", "🟢")
  DRIFT = ("≈", "drift within tolerance", "#00838f", "🔵")
  EXPECTED = ("×", "expected failure", "#6d6d8a", "⚪")
  WARN = ("!", "warning (fails with --compat-strict)", "#ef8c00", "🟡")
  FAIL = ("✗", "fail", "#c62828", "🔴")
  NOT_COVERED = ("·", "not covered", "#bdbdbd", "")

  def __init__(self, symbol: str, label: str, colour: str, badge: str):
    self.symbol, self.label, self.colour, self.badge = symbol, label, colour, badge

  @property
  def mark(self) -> str:
    """Badge and symbol together, for Markdown cells (the colour and a symbol that needs none)."""
    return self.badge + self.symbol

  @property
  def css(self) -> str:
    """The CSS class of cells with this status."""
    return "s-" + self.name.lower().replace("_", "-")

  @property
  def severity(self) -> int:
    """Order for "worst of": a failure outranks a warning, which outranks an expected failure..."""
    return _SEVERITY[self]

  @classmethod
  def of(cls, status: Status) -> CellStatus:
    return _FROM_STATUS[status]


_FROM_STATUS = {Status.PASS: CellStatus.PASS, Status.DRIFT: CellStatus.DRIFT,
                Status.XFAIL: CellStatus.EXPECTED, Status.WARN: CellStatus.WARN,
                Status.FAIL: CellStatus.FAIL}
_SEVERITY = {CellStatus.NOT_COVERED: 0, CellStatus.PASS: 1, CellStatus.DRIFT: 2,
             CellStatus.EXPECTED: 3, CellStatus.WARN: 4, CellStatus.FAIL: 5}
# The statuses an entry can have, in the order the pages list them.
ENTRY_STATUSES = (CellStatus.PASS, CellStatus.DRIFT, CellStatus.WARN, CellStatus.EXPECTED,
                  CellStatus.FAIL)


def worst(statuses: Sequence[CellStatus]) -> CellStatus:
  return max(statuses, key=lambda s: s.severity, default=CellStatus.NOT_COVERED)


def entry_status(e: EntryResult) -> CellStatus:
  return CellStatus.of(e.status)


@dataclasses.dataclass(frozen=True)
class Cell:
  """The entries of one target recorded by one producer release, and their worst status."""
  entries: tuple[EntryResult, ...]

  @functools.cached_property
  def status(self) -> CellStatus:
    return worst([entry_status(e) for e in self.entries])

  @functools.cached_property
  def lead(self) -> EntryResult | None:
    """The entry the cell links to: the first of the worst ones."""
    status = self.status
    return next((e for e in self.entries if entry_status(e) == status), None)


@dataclasses.dataclass(frozen=True)
class MatrixRow:
  target: str
  cells: tuple[Cell, ...]


@dataclasses.dataclass(frozen=True)
class MatrixGroup:
  """The rows of the targets of one platform (as the stable-target table files them)."""
  platform: str
  rows: tuple[MatrixRow, ...]


@dataclasses.dataclass(frozen=True)
class Matrix:
  producers: tuple[str, ...]
  groups: tuple[MatrixGroup, ...]


def version_key(version: str) -> tuple:
  """Sort key of a jax version: numeric parts compared as numbers, ``unknown`` last."""
  if version == UNKNOWN_PRODUCER:
    return (1,)
  return (0, *[(int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.+-]", version)])


def target_platform(target: str, host: str, report: RunReport | None = None) -> str:
  """The platform under which jaxport's stable-target table, or the project's own declarations
  in ``report`` (``jaxport_stable_targets``), list ``target``."""
  if target == NO_CUSTOM_CALL:
    return host
  by_platform = _registry.targets_by_platform()
  for p in _PLATFORM_ORDER:
    if target in by_platform.get(p, ()):
      return p
  if report is not None:
    for p in (host, *_PLATFORM_ORDER):
      if report.declares(target, p):
        return p
  return UNLISTED_GROUP


def _rows_of(e: EntryResult) -> tuple[str, ...]:
  return e.targets or (NO_CUSTOM_CALL,)


def build_matrix(report: RunReport) -> Matrix:
  """Targets (rows, grouped by platform) by producer release (columns); every entry in some cell."""
  producers = tuple(sorted({e.producer for e in report.entries}, key=version_key))
  cells: dict[tuple[str, str], list[EntryResult]] = {}
  for e in report.entries:
    for t in _rows_of(e):
      cells.setdefault((t, e.producer), []).append(e)
  by_group: dict[str, list[str]] = {}
  # Required targets without any entry get a row too: all of it "not covered".
  for t in sorted({t for t, _ in cells} | set(report.targets.required)):
    by_group.setdefault(target_platform(t, report.platform, report), []).append(t)
  order = [report.platform, *_PLATFORM_ORDER, UNLISTED_GROUP]
  groups = []
  for g in sorted(by_group, key=lambda g: order.index(g) if g in order else len(order)):
    rows = tuple(MatrixRow(t, tuple(Cell(tuple(cells.get((t, p), ()))) for p in producers))
                 for t in sorted(by_group[g], key=lambda t: (t == NO_CUSTOM_CALL, t)))
    groups.append(MatrixGroup(g, rows))
  return Matrix(producers, tuple(groups))


@dataclasses.dataclass(frozen=True)
class WindowRow:
  """One producer release: its date, where it stands in jax's window, and its entries' verdicts."""
  producer: str
  producer_date: str | None
  age_days: int | None
  gap_days: int | None
  inside_window: bool | None
  entries: int
  statuses: dict[CellStatus, int]
  verdicts: dict[str, int]
  # Entries whose release verdict is a policy violation (the judge's verdict, counted).
  policy_violations: int


def window_rows(report: RunReport) -> tuple[WindowRow, ...]:
  """Per producer release: its window position (:meth:`RunReport.window_of`) and verdicts."""
  rows: dict[str, dict] = {}
  for e in report.entries:
    w = report.window_of(e.producer) if e.producer not in rows else None
    row = rows.setdefault(e.producer, {
        "producer": e.producer, "producer_date": w and w.producer_date.isoformat(),
        "age_days": w and w.age_days, "gap_days": w and w.gap_days,
        "inside_window": w and w.inside_window, "entries": 0, "statuses": {}, "verdicts": {},
        "policy_violations": 0})
    row["entries"] += 1
    s = entry_status(e)
    row["statuses"][s] = row["statuses"].get(s, 0) + 1
    if e.release is not None:
      row["verdicts"][e.release.verdict] = row["verdicts"].get(e.release.verdict, 0) + 1
      row["policy_violations"] += e.release.verdict == ExpectationVerdict.POLICY_VIOLATION
  return tuple(WindowRow(**r) for r in sorted(rows.values(), key=lambda r: version_key(r["producer"])))


@dataclasses.dataclass(frozen=True)
class TimelineRow:
  """A target's status in each run; ``first_change`` is the index of the first run that differs
  from the run before it (None when it never changed)."""
  platform: str
  target: str
  statuses: tuple[CellStatus, ...]
  first_change: int | None

  def changed_at(self, i: int) -> bool:
    return i > 0 and self.statuses[i] != self.statuses[i - 1]


@dataclasses.dataclass(frozen=True)
class History:
  """The runs oldest first (the current run last), their counts and every target's timeline."""
  runs: tuple[RunReport, ...]
  counts: tuple[dict[CellStatus, int], ...]
  rows: tuple[TimelineRow, ...]

  @property
  def changed(self) -> tuple[TimelineRow, ...]:
    return tuple(r for r in self.rows if r.first_change is not None)


def order_runs(current: RunReport, earlier: Sequence[RunReport]) -> tuple[RunReport, ...]:
  """Earlier runs by date, then the current run; all of one platform and dated no later."""
  for r in earlier:
    if r.platform != current.platform:
      raise ReportError(f"{r.source} is a {r.platform} run but {current.source} is a "
                        f"{current.platform} run; history compares runs of one platform.")
    if r.today > current.today:
      raise ReportError(f"{r.source} is dated {r.today}, after the current run {current.source} "
                        f"({current.today}); pass the newest report first, then the earlier ones.")
  return (*sorted(earlier, key=lambda r: r.today), current)


def build_history(runs: Sequence[RunReport]) -> History:
  counts = tuple({s: sum(entry_status(e) == s for e in r.entries) for s in ENTRY_STATUSES}
                 for r in runs)
  per_run: list[dict[str, list[CellStatus]]] = []
  for r in runs:
    by_target: dict[str, list[CellStatus]] = {}
    for e in r.entries:
      for t in _rows_of(e):
        by_target.setdefault(t, []).append(entry_status(e))
    per_run.append(by_target)
  host = runs[-1].platform
  rows = []
  for t in sorted({t for d in per_run for t in d}, key=lambda t: (t == NO_CUSTOM_CALL, t)):
    statuses = tuple(worst(d.get(t, [])) for d in per_run)
    first = next((i for i in range(1, len(statuses)) if statuses[i] != statuses[i - 1]), None)
    rows.append(TimelineRow(target_platform(t, host, runs[-1]), t, statuses, first))
  return History(tuple(runs), counts, tuple(rows))


def run_labels(runs: Sequence[RunReport]) -> tuple[str, ...]:
  """One distinct label per run, in order: its date, and for runs sharing a date its place
  among them (``2026-11-22 #2``); :func:`source_name` says which file each came from."""
  per_day: dict[str, int] = {}
  for r in runs:
    per_day[r.today.isoformat()] = per_day.get(r.today.isoformat(), 0) + 1
  seen: dict[str, int] = {}
  labels = []
  for r in runs:
    day = r.today.isoformat()
    seen[day] = seen.get(day, 0) + 1
    labels.append(day if per_day[day] == 1 else f"{day} #{seen[day]}")
  return tuple(labels)


def source_name(r: RunReport) -> str:
  """The file names a report was read from, without their folders (a merged report has several)."""
  return " + ".join(PurePath(p).name for p in r.source.split(" + "))


def target_anchor(target: str) -> str:
  """The id of a target's row in the matrix (target names contain no spaces)."""
  return "target:" + target


@dataclasses.dataclass(frozen=True)
class PassingGroup:
  """Passing entries filed under one target (an entry's first) and one producer release."""
  target: str
  producer: str
  entries: tuple[EntryResult, ...]

  @property
  def anchor(self) -> str:
    return f"passing:{self.target}/{self.producer}"


def passing_groups(report: RunReport) -> tuple[PassingGroup, ...]:
  """The passes and drifts of ``report``, one group per first target and producer, in the
  order of targets by name and producers by version; each entry is in exactly one group."""
  grouped: dict[tuple[str, str], list[EntryResult]] = {}
  for e in report.entries:
    if entry_status(e) in (CellStatus.PASS, CellStatus.DRIFT):
      grouped.setdefault((_rows_of(e)[0], e.producer), []).append(e)
  keys = sorted(grouped, key=lambda k: (k[0], version_key(k[1])))
  return tuple(PassingGroup(t, p, tuple(sorted(grouped[t, p], key=lambda e: e.entry_id)))
               for t, p in keys)


def entry_anchor(entry_id: EntryId) -> str:
  """The id of an entry's details on the page (entry ids contain no spaces)."""
  return "entry:" + str(require_entry_id(entry_id, "entry_anchor"))


@dataclasses.dataclass(frozen=True)
class FailureOnset:
  """An entry failing in the newest run, and the run that first showed the failure: the oldest
  of the unbroken run of failing reports that ends with the newest one."""
  entry_id: EntryId
  first: RunReport
  # Whether the newest run is the first to show it (the run before passed it, or lacked it).
  new: bool

  @property
  def first_jax(self) -> str:
    return str(self.first.versions.get("jax") or "unknown")


def build_note(report: RunReport) -> str | None:
  """What the run's jax build is beside the release table (a nightly, a release the table
  lacks), or None for a measured release or a version that names no release."""
  try:
    build = build_of(str(report.versions.get("jax")))
  except ValueError:
    return None
  return None if build.measured else build.describe()


def failure_onsets(runs: Sequence[RunReport]) -> tuple[FailureOnset, ...]:
  """Per entry failing in the last of ``runs`` (oldest first, as :func:`order_runs` gives
  them), the run that first showed its failure; entries in id order."""
  if not runs:
    return ()
  failing = [{e.entry_id for e in r.entries if entry_status(e) == CellStatus.FAIL} for r in runs]
  out = []
  for entry_id in sorted(failing[-1]):
    i = len(runs) - 1
    while i > 0 and entry_id in failing[i - 1]:
      i -= 1
    out.append(FailureOnset(entry_id, runs[i], new=i == len(runs) - 1))
  return tuple(out)
