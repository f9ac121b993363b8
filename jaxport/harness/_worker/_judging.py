"""Outputs judged by a checker of the project, in the worker: the verdict as the answer's
:class:`Numerics`. A checker that raises judged nothing; its error is the case's (its
checker is the case's code, or a built-in one the case chose), named in one line with the
exception, never an error of the harness."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.golden._manifest import Manifest
from jaxport.harness import _case, checkers
from jaxport.harness._protocol._answers import Numerics
from jaxport.harness._protocol._stage_marks import CASE_CODE, stage
from jaxport.harness._worker._older_formats import OutputJudging, recorded_judging
from jaxport.harness._worker._error_text import error_line


def judge(known: Any, mode: str, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
          actual: Sequence[np.ndarray], *, rtol: float, atol: float,
          outputs: Sequence[checkers.OutputTolerance] | None = None) -> Numerics:
  """The verdict of the checker ``mode`` of the registry ``known`` on ``actual`` against
  ``expected``, or the record of its error where it raised."""
  # A checker the project registered is the case's own code (a crash in it is the case's).
  own = checkers.BUILTIN.get(mode) is None
  try:
    with stage(CASE_CODE) if own else contextlib.nullcontext():
      verdict = known.check(mode, inputs, expected, actual, rtol=rtol, atol=atol,
                            outputs=outputs)
  except Exception as e:  # noqa: BLE001  (any error of a checker is the case's)
    exact = len(expected) == len(actual) and all(
        checkers.bitwise_equal(w, g) for w, g in zip(expected, actual))
    return Numerics.raised(f"checker {mode!r} raised {error_line(e)}", exact)
  return Numerics.of(verdict)


def judge_entry(known: Any, m: Manifest, inputs, expected, actual,
                judging: OutputJudging | None = None) -> Numerics:
  """``actual`` judged against the entry's recorded outputs with the tolerances of ``judging``
  (default: the entry's own comparison, each output with its own tolerances where the
  manifest records them, else all with its one; :mod:`_older_formats`)."""
  judging = judging or recorded_judging(m)
  return judge(known, m.comparison.mode, inputs, expected, actual, rtol=judging.rtol,
               atol=judging.atol, outputs=judging.outputs)


def judge_as_recorded(known: Any, comparison: _case.CaseComparison, inputs,
                      outputs: Sequence[np.ndarray]) -> Numerics:
  """A case's checker, with the comparison a recording of it writes, on ``outputs`` it
  recorded, judged against themselves: whether its checker accepts what it records."""
  tolerances = [checkers.OutputTolerance(o.path, o.rtol, o.atol) for o in comparison.outputs]
  return judge(known, comparison.checker, inputs, outputs, outputs, rtol=comparison.rtol,
               atol=comparison.atol, outputs=tolerances if tolerances else None)
