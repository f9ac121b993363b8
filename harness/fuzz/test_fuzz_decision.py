"""Fuzzing the decision procedure: comparisons of symbolic dimensions.

Soundness: whenever an implementation answers ``>=``, ``<=``, ``>``, ``<``
definitely, or ``==`` with True (``==`` answering False only means "not
provably equal", as documented), the answer holds in every sampled
environment that satisfies the scope's constraints. A scope refused as
unsatisfiable must have no satisfying sampled environment.

Precision is a statistic, not a failure: an InconclusiveDimensionOperation
where every sampled environment agrees is counted as "possibly needless", and
as "needless" when jax.export's procedure decides the same comparison. Run
with ``--hypothesis-show-statistics`` to see the rates.
"""

from __future__ import annotations

import operator

from hypothesis import event, given, note, reject, strategies as st

from harness.fuzz import shape_impls as impls, strategies as S
from harness.fuzz._hypothesis_profiles import budget
from harness.fuzz._jax_findings import jax_finding

COMPARISONS = ((">=", operator.ge), ("<=", operator.le), (">", operator.gt),
               ("<", operator.lt), ("==", operator.eq))


def _parse_pair(impl: impls.ShapesImpl, case: S.DecisionCase):
  """``(scope, lhs, rhs)`` or ``None`` when the scope is refused as unsatisfiable."""
  try:
    scope = impl.scope(case.constraints.strings())
    (lhs,) = impl.parse(case.lhs.render(), scope=scope)
    (rhs,) = impl.parse(case.rhs.render(), scope=scope)
  except impls.INTERNAL_CRASHES as e:
    if impl is impls.JAX:
      jax_finding("crash", f"jax.export crashed parsing {case!r}: {type(e).__name__}: {e}")
      reject()
    raise
  except ValueError as e:
    if "nsatisfiable" in str(e):
      return None
    raise
  return scope, lhs, rhs


def decide(impl: impls.ShapesImpl, case: S.DecisionCase) -> dict[str, bool | None] | None:
  """Each comparison's answer (None: inconclusive), or None for an unsatisfiable scope."""
  parsed = _parse_pair(impl, case)
  if parsed is None:
    return None
  _, lhs, rhs = parsed
  out: dict[str, bool | None] = {}
  for name, cmp in COMPARISONS:
    try:
      out[name] = bool(cmp(lhs, rhs))
    except ValueError as e:
      if "nsatisfiable" not in str(e):  # a scope's constraints are combined lazily
        raise
      return None
    except impls.INTERNAL_CRASHES as e:
      if impl is impls.JAX:
        jax_finding("crash", f"jax.export crashed deciding {name} in {case!r}: "
                             f"{type(e).__name__}: {e}")
        out[name] = None
        continue
      raise
    except Exception as e:
      if not impls.is_inconclusive(e):
        raise
      out[name] = None
  return out


def check_decision(impl: impls.ShapesImpl, case: S.DecisionCase,
                   extra_envs: list[dict[str, int]]) -> None:
  note(repr(case))
  envs = S.env_grid(case.names, case.constraints) + list(extra_envs)
  satisfying = [e for e in envs if case.constraints.holds(e)]
  answers = decide(impl, case)
  if answers is None:
    assert not satisfying, (
        f"{impl} refused constraints {case.constraints.strings()} as unsatisfiable, but "
        f"{satisfying[0]} satisfies them")
    event("scope refused as unsatisfiable")
    return
  if not satisfying:
    event("no sampled environment satisfies the constraints")
    return
  values = [(case.lhs.evaluate(e), case.rhs.evaluate(e), e) for e in satisfying]
  reference = None
  for name, cmp in COMPARISONS:
    answer = answers[name]
    truths = {cmp(x, y) for x, y, _ in values}
    if answer is None:
      if len(truths) == 1:
        if impl is not impls.JAX:
          if reference is None:
            reference = decide(impls.JAX, case) or {}
          if reference.get(name) is not None:
            event(f"{impl}: needless inconclusive ({name}): jax.export decides it")
            continue
        event(f"{impl}: possibly needless inconclusive ({name}): samples agree")
      else:
        event(f"{impl}: inconclusive ({name}) and the samples disagree")
      continue
    if name == "==" and not answer:
      continue
    for x, y, env in values:
      assert cmp(x, y) == answer, (
          f"{impl} decided {case.lhs.render()!r} {name} {case.rhs.render()!r} is {answer} "
          f"under {case.constraints.strings()}, but at {env} the sides are {x} and {y}")


# jaxport only: jax.export itself answers some comparisons unsoundly (pinned in
# tests/regression/test_shape_regressions.py); it serves as the precision reference.
@budget(300)
@given(case=S.decision_cases(), data=st.data())
def test_definite_comparisons_hold_in_every_satisfying_environment(case, data):
  impl = impls.JAXPORT
  extra = data.draw(st.lists(S.environments(case.names, case.constraints, satisfying=None,
                                            max_value=60), max_size=2), label="extra envs")
  check_decision(impl, case, extra)
