"""Fuzzing shape assertions: shapes that violate a spec are refused, twice.

Concrete shapes that break an explicit constraint, make a variable < 1, or
change one symbolic size by one are refused (a) when ``Exported.call`` traces
the call, and (b) by the ``shape_assertion`` calls inside the serialized
module, reached by running it through ``jax.export.deserialize`` with the
caller's static check turned off. Both messages must be of the documented
forms and name something really violated (see
``strategies.explain_shape_assertion``).
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, note, strategies as st

from harness.fuzz import shape_impls as impls, strategies as S
from harness.fuzz._hypothesis_profiles import budget
from harness.fuzz.test_fuzz_solve import export_or_reject


def expect_refusal(where: str, thunk, shapes, env) -> str:
  """Runs ``thunk``; it must raise with a documented message that fits ``shapes``."""
  try:
    thunk()
  except Exception as e:  # the module path raises jax's compile-time errors
    text = impls.error_chain_text(e)
  else:
    raise AssertionError(f"{where}: accepted shapes {list(shapes)} that violate the spec")
  problem = impls.explain_shape_assertion(text, shapes, env)
  assert problem is None, f"{where}: {problem}"
  event(f"refused: {impls.assertion_kind(text)}")
  return text


def check_refused(impl: impls.ShapesImpl, case: S.SpecCase, violation: S.Violation) -> None:
  shapes = [list(s) for s in violation.shapes]
  env = dict(violation.env)
  note(impls.spec_summary(case, env, shapes) + f"\nviolation kind = {violation.kind}")
  event(f"violation: {violation.kind}")
  try:
    exported = export_or_reject(impl, case)
  except ValueError as e:
    # Constraints that no values satisfy may be refused at export already.
    if (impls.assertion_kind(str(e)) in ("constraint", "unsatisfiable") and
        not any(case.constraints.holds(v) for v in S.env_grid(impls.solved_names(case)))):
      event("export refused: the constraints are unsatisfiable")
      return
    raise
  args = impls.concrete_args(violation.shapes)
  expect_refusal(f"{impl} Exported.call", lambda: exported.call(*args), shapes, env)
  expect_refusal(f"{impl} shape_assertion in the module",
                 lambda: impls.call_through_module(exported, args), shapes, env)


@pytest.mark.parametrize("impl", impls.IMPLS, ids=str)
@budget(30)
@given(data=st.data())
def test_violating_shapes_are_refused_at_trace_time_and_by_the_module(impl, data):
  case = data.draw(S.spec_cases(), label="case")
  violation = data.draw(S.violations(case), label="violation")
  check_refused(impl, case, violation)
