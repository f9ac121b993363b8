"""The symbolic expression algebra: normal forms, printing, division, equality."""

import pytest
from jaxport._jaxcompat._errors import InconclusiveDimensionOperation  # jax.errors from jax 0.10.1

from jaxport.shapes._expr import DimExpr, evaluate
from jaxport.shapes._parser import parse_shape
from jaxport.shapes._scope import SymbolicScope


def dims(spec, constraints=()):
  return parse_shape(spec, like=None, scope=SymbolicScope(constraints))


@pytest.fixture
def ab():
  return dims("a, b")


@pytest.mark.parametrize("make, printed", [
    (lambda a, b: 2 * b + a, "2*b + a"),
    (lambda a, b: a - b, "- b + a"),
    (lambda a, b: 3 * a * b - 2 * a + 5, "3*a*b - 2*a + 5"),
    (lambda a, b: a * a, "a^2"),
    (lambda a, b: b * a * a * b * b, "a^2*b^3"),
    (lambda a, b: -a, "- a"),
    (lambda a, b: 1 - a, "- a + 1"),
    (lambda a, b: a // 3, "floordiv(a, 3)"),
    (lambda a, b: (a + 1) % 3, "mod(a + 1, 3)"),
    (lambda a, b: a // b, "floordiv(a, b)"),
    (lambda a, b: 8 // a, "floordiv(8, a)"),
    (lambda a, b: a.max(b), "max(a, b)"),
    (lambda a, b: a.rmin(5), "min(5, a)"),
    (lambda a, b: (a // 2) * b + a, "b*floordiv(a, 2) + a"),
])
def test_printing_matches_jax_conventions(ab, make, printed):
  assert str(make(*ab)) == printed


def test_exact_arithmetic_collapses_to_ints(ab):
  a, b = ab
  assert (a + b) - b - a == 0
  assert type((a + b) - b - a) is int
  assert (2 * a) // 2 == a
  assert (2 * a + 1) % 2 == 1
  assert (2 * a + 1) // 2 == a
  assert (a * b + b) // b == a + 1
  assert divmod(6 * a + 4, 3) == (2 * a + 1, 1)
  assert (a + 1) ** 2 == a * a + 2 * a + 1
  assert a ** 0 == 1


def test_inexact_division_builds_factors(ab):
  a, b = ab
  q, r = divmod(a, b)
  assert str(q) == "floordiv(a, b)" and str(r) == "mod(a, b)"
  assert str((a + b) // 2) == "floordiv(b + a, 2)"


def test_equality_never_raises_and_is_syntactic(ab):
  a, b = ab
  assert a == a + 0
  assert not (a == b)
  assert a != b
  assert not (a == "a")
  assert not (a == 2.5)
  other_a, = dims("a")
  assert not (a == other_a)  # a different scope
  assert len({a, a + b - b, b}) == 2


def test_int_of_non_constant_is_inconclusive(ab):
  a, _ = ab
  with pytest.raises(InconclusiveDimensionOperation, match="used in a context that requires a constant"):
    int(a)


def test_powers_must_be_non_negative_integers(ab):
  a, _ = ab
  with pytest.raises(ValueError, match="negative powers"):
    a ** -1
  with pytest.raises(ValueError, match="non-integer powers"):
    a ** 1.5


def test_mixing_scopes_is_refused(ab):
  a, _ = ab
  other, = dims("c")
  with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes"):
    a + other


def test_evaluate_with_ints_and_rewrites():
  a, b = dims("a, b", constraints=["b == 2*a"])
  assert str(b) == "2*a"
  e = (a + 3) * a // 2 + a.max(4) % 3
  for v in range(1, 7):
    assert evaluate(e, {"a": v}) == (v + 3) * v // 2 + max(v, 4) % 3


def test_unknown_variable_names_the_known_ones(ab):
  a, b = ab
  with pytest.raises(ValueError, match="Encountered dimension variable 'b' that is not appearing"):
    evaluate(a + b, {"a": 3})


def test_non_dimension_operands_go_through_arrays_and_fail_outside_tracing(ab):
  a, _ = ab
  with pytest.raises((TypeError, ValueError)):
    a + "x"


def test_size_and_key_order_put_larger_terms_first(ab):
  a, b = ab
  e = a * b + a + 7
  assert isinstance(e, DimExpr)
  terms = [str(t) for t, _ in e.terms]
  assert terms == ["a*b", "a", ""]
