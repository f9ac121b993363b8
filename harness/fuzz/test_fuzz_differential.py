"""Differential fuzzing: the same spec through jax.export and through jaxport.

For a drawn spec (solvable or not) and concrete shapes (satisfying it or
breaking it), both implementations must reach the same outcome: the same
kind of export error, or the same kind of refusal at call time, or the same
solved values and result.

One difference is allowed and counted: jaxport refuses a scope whose
constraints contradict each other (``a >= 2*a``) when it is built, where
jax.export accepts it and refuses every call; the test then checks that no
sampled environment satisfies the constraints.
"""

from __future__ import annotations

import numpy as np
from hypothesis import event, given, note, reject, strategies as st

from harness.fuzz import shape_impls as impls, strategies as S
from harness.fuzz._hypothesis_profiles import budget
from harness.fuzz._jax_findings import jax_finding


def outcome(impl: impls.ShapesImpl, case: S.SpecCase, shapes) -> tuple:
  """``('export error', kind)``, ``('refused', kind)`` or ``('ok', values, result)``."""
  try:
    exported = impls.export_case(impl, case)
  except impls.INTERNAL_CRASHES as e:
    if impl is impls.JAX:
      jax_finding("crash", f"jax.export crashed exporting {impls.spec_summary(case)}: "
                           f"{type(e).__name__}: {e}")
      reject()
    raise
  except ValueError as e:
    return ("export error", impls.assertion_kind(str(e)))
  try:
    values, total = exported.call(*impls.concrete_args(shapes))
  except ValueError as e:
    return ("refused", impls.assertion_kind(str(e)))
  return ("ok", tuple(np.asarray(values).tolist()), round(float(total), 3))


@st.composite
def differential_cases(draw):
  case = draw(S.spec_cases(solvable=draw(st.sampled_from((True, True, True, False)))))
  if case.unsolvable or draw(st.booleans()):
    env = draw(S.spec_envs(case, satisfying=True))
    return case, case.shapes(env), "satisfying"
  violation = draw(S.violations(case))
  return case, [list(s) for s in violation.shapes], f"violation: {violation.kind}"


@budget(25)
@given(drawn=differential_cases())
def test_jax_export_and_jaxport_reach_the_same_outcome(drawn):
  case, shapes, kind = drawn
  note(impls.spec_summary(case, shapes=shapes) + f"\nshapes are {kind}")
  event(kind)
  ours, theirs = outcome(impls.JAXPORT, case, shapes), outcome(impls.JAX, case, shapes)
  event(f"outcome: {theirs[0]}")
  if kind != "satisfying" and theirs[0] == "ok" and ours[0] != "ok":
    # The shapes break the spec: jaxport refusing them is right, jax.export running them is not.
    jax_finding("unsound", f"jax.export ran shapes that break the spec; "
                           f"{impls.spec_summary(case, shapes=shapes)}; {kind}")
    return
  if ours == ("export error", "unsatisfiable") and theirs != ours:
    names = impls.solved_names(case)
    assert not any(case.constraints.holds(e) for e in S.env_grid(names)), (
        f"jaxport refused {case.constraints.strings()} as unsatisfiable")
    event("jaxport refuses contradictory constraints at export; jax.export at call")
    return
  assert ours[:2] == theirs[:2] if ours[0] == "ok" else ours == theirs, (
      f"jaxport: {ours}; jax.export: {theirs}")
  if ours[0] == "ok":
    assert abs(ours[2] - theirs[2]) <= 1e-3 * max(1.0, abs(theirs[2])), (
        f"results differ: jaxport {ours[2]}, jax.export {theirs[2]}")
