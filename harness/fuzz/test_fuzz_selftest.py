"""The fuzz properties catch faults: inject one into jaxport's shapes modules and
check that a short run of the property finds a counterexample.

Each fault replaces one function of ``jaxport.shapes`` for the duration of
the test (pytest's monkeypatch): the bounds of the decision procedure
(unsound: every expression taken as >= 0), the solver (off by one), the
emission of ``shape_assertion`` (none emitted), the printer (drops a
constant term).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from harness.fuzz import shape_impls as impls, strategies as S
from harness.fuzz.test_fuzz_assertions import check_refused
from harness.fuzz.test_fuzz_decision import check_decision
from harness.fuzz.test_fuzz_parse import check_roundtrip, shapes_of_exprs
from harness.fuzz.test_fuzz_solve import check_solution

SHORT_RUN = settings(max_examples=40, derandomize=True, database=None, deadline=None,
                     phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                     print_blob=False)


def finds_counterexample(prop) -> BaseException | None:
  """Runs a hypothesis property; the exception it ends with, or None if all passed."""
  try:
    prop()
  except Exception as e:
    return e
  return None


@pytest.fixture
def fresh_solver_cache():
  from jaxport.shapes import _bridge
  _bridge._solve.cache_clear()
  yield
  _bridge._solve.cache_clear()


def test_unsound_bounds_are_caught_by_the_decision_property(monkeypatch):
  from jaxport.shapes import _decision
  honest = _decision.bounds

  def assumes_non_negative(e, *args, **kwargs):
    lb, ub = honest(e, *args, **kwargs)
    return max(lb, 0), max(ub, 0)
  monkeypatch.setattr(_decision, "bounds", assumes_non_negative)

  @SHORT_RUN
  @given(case=S.decision_cases(), data=st.data())
  def prop(case, data):
    check_decision(impls.JAXPORT, case, [])
  error = finds_counterexample(prop)
  assert isinstance(error, AssertionError) and "decided" in str(error), error


def test_an_off_by_one_solver_is_caught_by_the_solving_property(monkeypatch, fresh_solver_cache):
  from jaxport.shapes import _solver
  honest = _solver.solve

  def off_by_one(*args, **kwargs):
    env, checks = honest(*args, **kwargs)
    if env:
      first = sorted(env)[0]
      env = {**env, first: env[first] + 1}
    return env, checks
  monkeypatch.setattr(_solver, "solve", off_by_one)

  @settings(SHORT_RUN, max_examples=6)
  @given(data=st.data())
  def prop(data):
    case = data.draw(S.spec_cases(with_constraints=False))
    check_solution(impls.JAXPORT, case, data.draw(S.spec_envs(case)))
  error = finds_counterexample(prop)
  assert isinstance(error, AssertionError) and "solved" in str(error), error


def test_missing_shape_assertions_are_caught_by_the_assertion_property(monkeypatch,
                                                                      fresh_solver_cache):
  from jaxport.shapes import _bridge
  monkeypatch.setattr(_bridge, "shape_assertion", lambda *args, **kwargs: None)

  @settings(SHORT_RUN, max_examples=6)
  @given(data=st.data())
  def prop(data):
    case = data.draw(S.spec_cases())
    check_refused(impls.JAXPORT, case, data.draw(S.violations(case)))
  error = finds_counterexample(prop)
  assert isinstance(error, AssertionError), error
  assert "shape_assertion in the module: accepted shapes" in str(error), error


def test_a_printer_that_drops_a_term_is_caught_by_the_parse_property(monkeypatch):
  from jaxport.shapes import _expr
  honest = _expr.DimExpr.__str__

  def drops_constant(self):
    text = honest(self)
    head, sep, tail = text.rpartition(" + ")
    return head if sep and tail.isdigit() else text
  monkeypatch.setattr(_expr.DimExpr, "__str__", drops_constant)

  @SHORT_RUN
  @given(case=shapes_of_exprs())
  def prop(case):
    check_roundtrip(impls.JAXPORT, *case)
  error = finds_counterexample(prop)
  assert isinstance(error, AssertionError), error
