"""How an entry's outputs are judged in one replay: with the tolerances it records, or, for an
entry of a golden format before per-output tolerances whose case sets none, with today's.

Before golden format 3 a recording wrote one ``rtol``/``atol`` for all outputs: the loosest
default among its outputs' dtypes, or zero where the first dtype had none (a PRNG key first).
That zero was never the case's choice, so an older entry whose case (present today) sets no
tolerance is judged with today's default for each output's dtype, and its result says so. A
case that sets ``rtol``/``atol`` or ``tolerances`` keeps the entry's recorded comparison."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from jaxport.golden._manifest import Manifest
from jaxport.harness import _case, checkers


@dataclasses.dataclass(frozen=True)
class OutputJudging:
  """The tolerances one entry's outputs are judged with in this replay: each output's
  (``outputs``; None: one ``rtol``/``atol`` for all) and, where they are not the entry's own,
  the line that says so."""
  rtol: float
  atol: float
  outputs: tuple[checkers.OutputTolerance, ...] | None = None
  note: str | None = None


def recorded_judging(m: Manifest) -> OutputJudging:
  """The comparison the entry records."""
  outputs = None if m.tolerances is None else tuple(
      checkers.OutputTolerance(t.path, t.rtol, t.atol) for t in m.tolerances)
  return OutputJudging(m.comparison.rtol, m.comparison.atol, outputs)


def sets_no_tolerance(case: Any) -> bool:
  """Whether a case leaves every tolerance to the defaults."""
  return case.rtol is None and case.atol is None and not case.tolerances


def judging_of(m: Manifest, case: Any, expected: Sequence[Any] | None) -> OutputJudging:
  """How the entry's outputs ``expected`` are judged: with today's per-output defaults where
  the entry predates them and ``case`` (None: not found) sets no tolerance, else as recorded."""
  recorded = recorded_judging(m)
  if (m.tolerances is not None or m.imported_from is not None or case is None
      or expected is None or not sets_no_tolerance(case)):
    return recorded
  today = _case.comparison_of(case, [(f"output {i}", x.dtype) for i, x in enumerate(expected)])
  outputs = tuple(checkers.OutputTolerance(o.path, o.rtol, o.atol) for o in today.outputs)
  if all(o.rtol == m.comparison.rtol and o.atol == m.comparison.atol for o in outputs):
    return recorded
  each = "; ".join(f"{o.path} ({o.dtype}) rtol {o.rtol:g}, atol {o.atol:g}"
                   for o in today.outputs)
  note = (f"comparison: this entry of golden format {m.format_version} records one rtol "
          f"{m.comparison.rtol:g}, atol {m.comparison.atol:g} for all outputs, a default its "
          f"case {m.case_id} never set; it was judged with today's default of each output's "
          f"dtype ({each}). Record the case anew (--compat-update) to keep them in the entry")
  return OutputJudging(today.rtol, today.atol, outputs, note)
