"""Fuzzing dimension solving and the calls of shape-polymorphic exports.

For random solvable argument-list specs (anchors ``k*v + c``, constants,
``_``, ``...``, repeated and derived dimensions, explicit constraints) and
values that satisfy them, the exported module solves every variable to the
value used to build the concrete shapes, and its result matches ``jax.jit``
of the same function, both through ``Exported.call`` and through the
serialized module run by jax with only its own ``shape_assertion`` checks.
Specs with a variable that appears only in non-linear dimensions are refused
at export with the documented error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, note, reject, strategies as st

from harness.fuzz import shape_impls as impls, strategies as S
from harness.fuzz._hypothesis_profiles import budget

UNSOLVABLE = "Cannot solve for values of dimension variables"


def export_or_reject(impl: impls.ShapesImpl, case: S.SpecCase):
  """``impl``'s export of ``case``; the reference's internal crashes reject the example."""
  try:
    return impls.export_case(impl, case)
  except impls.INTERNAL_CRASHES as e:
    if impl is impls.JAX:
      event(f"jax.export crashed exporting: {type(e).__name__}")
      reject()
    raise


def check_results(where: str, case: S.SpecCase, env, got, want) -> None:
  values, total = got
  want_values, want_total = want
  names = impls.solved_names(case)
  assert [int(v) for v in np.asarray(values)] == [env[n] for n in names], (
      f"{where}: solved {dict(zip(names, np.asarray(values).tolist()))}, "
      f"expected {{{', '.join(f'{n!r}: {env[n]}' for n in names)}}}")
  np.testing.assert_allclose(np.asarray(total), np.asarray(want_total), rtol=1e-5, atol=1e-5,
                             err_msg=f"{where}: result differs from jax.jit")


def check_solution(impl: impls.ShapesImpl, case: S.SpecCase, env: dict[str, int]) -> None:
  shapes = case.shapes(env)
  note(impls.spec_summary(case, env, shapes))
  solved, why = case.solve(shapes)
  assert solved == {n: env[n] for n in impls.solved_names(case)}, f"oracle disagrees: {why}"
  exported = export_or_reject(impl, case)
  args = impls.concrete_args(shapes)
  want = impls.reference_result(case, env, shapes)
  check_results(f"{impl} Exported.call", case, env, exported.call(*args), want)
  check_results(f"{impl} module run by jax", case, env, impls.call_through_module(exported, args),
                want)


@pytest.mark.parametrize("impl", impls.IMPLS, ids=str)
@budget(50)
@given(data=st.data())
def test_solved_variables_are_the_values_that_built_the_shapes(impl, data):
  case = data.draw(S.spec_cases(), label="case")
  env = data.draw(S.spec_envs(case), label="values")
  check_solution(impl, case, env)


def check_unsolvable(impl: impls.ShapesImpl, case: S.SpecCase) -> None:
  note(impls.spec_summary(case))
  try:
    export_or_reject(impl, case)
  except ValueError as e:
    message = str(e)
  else:
    raise AssertionError(f"{impl} exported {case} although {case.unsolvable} cannot be solved")
  assert UNSOLVABLE in message, f"{impl}: undocumented error for an unsolvable spec: {message}"
  for v in case.unsolvable:
    assert f"'{v}'" in message, f"{impl}: the error does not name {v!r}: {message}"


@pytest.mark.parametrize("impl", impls.IMPLS, ids=str)
@budget(50)
@given(case=S.spec_cases(solvable=False))
def test_unsolvable_specs_are_refused_at_export(impl, case):
  check_unsolvable(impl, case)
