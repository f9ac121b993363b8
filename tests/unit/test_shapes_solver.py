"""Solving dimension variables from argument sizes, and the checks and messages that go with it."""

import re

import jax
import numpy as np
import pytest
from jax import tree_util

import jaxport
from jaxport.errors import ShapeError
from jaxport.shapes import _bridge, _solver
from jaxport.shapes._expr import DimExpr


def avals_for(*specs, constraints=()):
  scope = jaxport.SymbolicScope(constraints)
  return [jax.core.ShapedArray(jaxport.symbolic_shape(s, scope=scope), np.float32) for s in specs]


def tree_of(n):
  return tree_util.tree_structure((tuple(range(n)), {}))


def solve_for(specs, actual, constraints=()):
  avals = avals_for(*specs, constraints=constraints)
  actual_avals = [jax.core.ShapedArray(s, np.float32) for s in actual]
  names = _bridge.all_dim_vars(avals)
  values = _bridge.solve_dim_vars_for_call(avals, tree_of(len(avals)), actual_avals)
  return dict(zip(names, values))


@pytest.mark.parametrize("specs, actual, expected", [
    (["b, 4"], [(3, 4)], {"b": 3}),
    (["2*h + 1, w"], [(7, 5)], {"h": 3, "w": 5}),
    (["a, a + b"], [(2, 7)], {"a": 2, "b": 5}),
    (["a + b", "a"], [(9,), (4,)], {"a": 4, "b": 5}),
    (["a*b, a"], [(12, 3)], {"a": 3, "b": None}),
    (["3*a - 2"], [(10,)], {"a": 4}),
])
def test_solves_linear_univariate(specs, actual, expected):
  if None in expected.values():
    with pytest.raises(ShapeError, match=re.escape("Cannot solve for values of dimension variables {'b'}")):
      solve_for(specs, actual)
    return
  assert solve_for(specs, actual) == expected


def test_remainder_is_reported():
  with pytest.raises(ShapeError, match=re.escape(
      "Input shapes do not match the polymorphic shapes specification. Division had remainder 1 "
      "when computing the value of 'h'. Using the following polymorphic shapes specifications: "
      "args[0].shape = (2*h,). Obtained dimension variables: . Please see")):
    solve_for(["2*h"], [(5,)])


def test_variable_must_be_positive():
  with pytest.raises(ShapeError, match=re.escape(
      "Expected value >= 1 for dimension variable 'b'. Using the following polymorphic shapes "
      "specifications: args[0].shape = (b + 3,). Obtained dimension variables: 'b' = -1 from "
      "specification 'b + 3' for dimension args[0].shape[0] (= 2), .")):
    solve_for(["b + 3"], [(2,)])


def test_inconsistency_is_reported():
  with pytest.raises(ShapeError, match=re.escape(
      "Found inconsistency between dimension size args[1].shape[0] (= 4) and the specification "
      "'b' (= 3).")):
    solve_for(["b", "b"], [(3,), (4,)])


def test_explicit_constraints_are_checked():
  assert solve_for(["c"], [(5,)], constraints=["c >= 4"]) == {"c": 5}
  with pytest.raises(ShapeError, match=re.escape(
      "Input shapes do not match the symbolic shape constraint c >= 4. Expected 'c - 4' to be "
      "greater or equal to 0, but found -1.")):
    solve_for(["c"], [(3,)], constraints=["c >= 4"])
  with pytest.raises(ShapeError, match="Expected 'mod\\(c, 2\\)' to be equal to 0, but found 1"):
    solve_for(["c"], [(3,)], constraints=["mod(c, 2) == 0"])


def test_constraint_on_a_variable_absent_from_shapes():
  with pytest.raises(ShapeError, match="Encountered dimension variable 'k' that is not appearing"):
    solve_for(["c"], [(3,)], constraints=["c >= k"])


def test_pure_solution_is_symbolic_in_size_variables():
  a, = jaxport.symbolic_shape("4*a + 2")
  values, checks = _solver.solve([_solver.Equation(a, "args[0].shape[0]")],
                                 [("args[0]", "(4*a + 2,)")])
  assert isinstance(values["a"], DimExpr)
  assert str(values["a"]) == "floordiv(args[0].shape[0] - 2, 4)"
  assert [c.cmp for c in checks] == ["==", ">="]
  ev = _solver.evaluator({"args[0].shape[0]": 14})
  assert ev(values["a"]) == 3
  assert all(c.holds(ev(c.left), ev(c.right)) for c in checks)


def test_message_inputs_are_capped_at_32():
  pieces = tuple(x for i in range(40) for x in (f" v{i}=", jaxport.symbolic_shape(f"a + {i}")[0]))
  a, = jaxport.symbolic_shape("a")
  check = _solver.ShapeCheck(">=", a, 1, pieces)
  message, inputs = check.message_and_inputs(lambda e: 0)
  assert len(inputs) == 32
  assert message.count("N/A") == 8 and "{31}" in message and "{32}" not in message


def test_call_with_symbolic_actual_shapes_stays_symbolic():
  avals = avals_for("b, 4")
  c, = jaxport.symbolic_shape("c")
  actual = [jax.core.ShapedArray((2 * c, 4), np.float32)]
  b_value, = _bridge.solve_dim_vars_for_call(avals, tree_of(1), actual)
  assert str(b_value) == "2*c"


def test_shapes_from_different_scopes_are_refused():
  first = jax.core.ShapedArray(jaxport.symbolic_shape("a"), np.float32)
  second = jax.core.ShapedArray(jaxport.symbolic_shape("a"), np.float32)
  actual = [jax.core.ShapedArray((3,), np.float32)] * 2
  with pytest.raises(ShapeError, match=re.escape("Invalid mixing of symbolic scopes in the shape of args[1].shape[0]")):
    _bridge.solve_dim_vars_for_call([first, second], tree_of(2), actual)


def test_shape_assertion_takes_at_most_32_inputs():
  with pytest.raises(ShapeError, match="at most 32"):
    _bridge.shape_assertion(True, *range(33), error_message="x")
