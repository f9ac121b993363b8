"""The decision procedure: bounds under implicit facts and explicit constraints."""

import itertools
import re

import pytest
from jaxport._jaxcompat._errors import InconclusiveDimensionOperation  # jax.errors from jax 0.10.1

import jaxport
from jaxport.errors import ShapeError
from jaxport.shapes._decision import bounds
from jaxport.shapes._expr import evaluate


def dims(spec, constraints=()):
  return jaxport.symbolic_shape(spec, constraints=constraints)


def test_implicit_facts():
  a, b = dims("a, b")
  assert a >= 1
  assert 2 * a + b >= 3
  assert not (a < 1)
  assert a * b >= 1
  assert (a % 3) <= 2
  assert (a % 3) >= 0
  assert a // 2 >= 0
  assert a.max(b) >= a
  assert a.min(b) <= b
  assert -a < 0
  assert bounds(a % 4 + 2 * (b // 3)) == (0, float("inf"))


@pytest.mark.parametrize("left, right", [("a", "2"), ("a", "b"), ("a - b", "0"), ("mod(a, 3)", "1")])
def test_inconclusive_comparisons(left, right):
  x, y = dims(f"{left}, {right}")
  with pytest.raises(InconclusiveDimensionOperation,
                     match=re.escape(f"Symbolic dimension comparison '{x}' >= '{y}' is inconclusive.")):
    x >= y  # noqa: B015


def test_comparison_operators_name_themselves_in_messages():
  a, = dims("a")
  with pytest.raises(InconclusiveDimensionOperation, match="'a' < '3'"):
    a < 3  # noqa: B015
  with pytest.raises(InconclusiveDimensionOperation, match="'a' <= '3'"):
    a <= 3  # noqa: B015


def test_explicit_constraints_tighten_bounds():
  a, b, c = dims("a, b, c", constraints=["a >= 4", "b <= a", "c >= a + b", "b >= 2"])
  assert a >= 4
  assert a >= b
  assert c >= 6
  assert c >= a
  assert not (c < b)
  with pytest.raises(InconclusiveDimensionOperation, match="Using symbolic scope"):
    a >= 5  # noqa: B015


def test_equality_constraints_rewrite():
  a, b = dims("a, b", constraints=["b == 2*a + 1"])
  assert str(b) == "2*a + 1"
  assert b >= 3
  m, = dims("mod(a, 4)", constraints=["mod(a, 4) == 0"])
  assert m == 0
  a, = dims("a", constraints=["mod(a, 4) == 0"])
  assert 4 * (a // 4) == a


def test_max_min_simplify_when_decided():
  a, b = dims("a, b", constraints=["a >= b"])
  assert a.max(b) is a
  assert a.min(b) is b
  assert str(a.max(b + 1)) == "max(a, b + 1)"


@pytest.mark.parametrize("constraint, message", [
    ("a >= a + 1", "Unsatisfiable explicit constraint: a >= a + 1"),
    ("3 == 4", "Unsatisfiable explicit constraint: 3 == 4"),
    ("a > 2", "Constraint parsing error: must contain one of '==' or '>=' or '<='"),
    ("a + b == 3", "Invalid equality constraint: a + b == 3. The left-hand-side must be of the form"),
    ("a, b >= 2", "each side must be exactly one dimension expression, found 2 in 'a, b '"),
    ("a == 2", None),
])
def test_bad_constraints_are_refused(constraint, message):
  if message is None:  # a valid constraint, for contrast
    a, = jaxport.symbolic_shape("a", scope=jaxport.SymbolicScope([constraint]))
    assert a == 2
    return
  with pytest.raises(ShapeError, match=re.escape(message)):
    jaxport.SymbolicScope([constraint])


def test_contradictory_constraints_are_refused():
  with pytest.raises(ShapeError, match="Unsatisfiable constraint"):
    jaxport.SymbolicScope(["a <= 2", "a >= 5"])
  with pytest.raises(ShapeError, match="Unsatisfiable constraint"):
    jaxport.SymbolicScope(["a >= b + 3", "b >= a"])
  with pytest.raises(ShapeError, match="should be a sequence of strings"):
    jaxport.SymbolicScope("a >= 2")


def test_scope_reports_its_constraints():
  scope = jaxport.SymbolicScope(["a >= 2", "b <= a"])
  assert scope.constraints == ("a >= 2", "b <= a")
  assert "with constraints:" in str(scope) and "b <= a" in str(scope)


EXPRS = ["a", "b", "a - b", "2*a - 3", "a*b - a", "mod(a, 3)", "floordiv(a, 2) - b",
         "max(a, b) - a", "min(a, 4) - 2", "a*b - 2*b", "mod(a + b, 4) - 3", "floordiv(a*b, 3) - a"]


@pytest.mark.parametrize("spec", EXPRS)
def test_bounds_are_sound_against_brute_force(spec):
  e, = dims(spec, constraints=["a >= b"])
  lb, ub = bounds(e)
  values = [evaluate(e, {"a": va, "b": vb}) if not isinstance(e, int) else e
            for va, vb in itertools.product(range(1, 13), repeat=2) if va >= vb]
  assert lb <= min(values)
  assert ub >= max(values)
