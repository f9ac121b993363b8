"""Algebra and decisions checked against brute-force evaluation at concrete points."""

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jaxport._jaxcompat._errors import InconclusiveDimensionOperation  # jax.errors from jax 0.10.1

import jaxport
from jaxport.shapes._decision import bounds
from jaxport.shapes._expr import DimExpr, evaluate

VARS = ("a", "b", "c")

atoms = st.one_of(st.sampled_from(VARS), st.integers(1, 6).map(str))


def _combine(children):
  ops = st.sampled_from(["+", "-", "*"])
  binary = st.tuples(children, ops, children).map(lambda t: f"{t[0]} {t[1]} {t[2]}")
  wrapped = st.tuples(st.sampled_from(["mod", "floordiv", "max", "min"]), children,
                      st.one_of(children, st.integers(1, 4).map(str))
                      ).map(lambda t: f"{t[0]}({t[1]}, {t[2]})")
  return st.one_of(binary, wrapped)


# Products of sums would need parentheses, which the grammar lacks; a factor is
# an atom or an operation, so build sums of products of those.
factors = st.recursive(atoms, lambda c: _combine(c).filter(lambda s: "(" in s or " " not in s),
                       max_leaves=4)
terms = st.lists(factors, min_size=1, max_size=2).map("*".join)
exprs = st.lists(st.tuples(st.sampled_from([" + ", " - "]), terms), min_size=1, max_size=3).map(
    lambda parts: "".join(op + t for op, t in parts).removeprefix(" + "))
points = st.fixed_dictionaries({v: st.integers(1, 9) for v in VARS})


def value(e, env):
  try:
    return evaluate(e, env) if isinstance(e, DimExpr) else e
  except ZeroDivisionError:
    assume(False)  # mod/floordiv by an expression that is 0 at this point


def parse_pair(s1, s2):
  try:
    return jaxport.symbolic_shape(f"{s1}, {s2}")
  except InconclusiveDimensionOperation:
    assume(False)


@settings(max_examples=300, deadline=None)
@given(exprs, exprs, points)
def test_arithmetic_agrees_with_integers(s1, s2, env):
  e1, e2 = parse_pair(s1, s2)
  v1, v2 = value(e1, env), value(e2, env)
  assert value(e1 + e2, env) == v1 + v2
  assert value(e1 - e2, env) == v1 - v2
  assert value(e1 * e2, env) == v1 * v2
  for k in (1, 2, 3):
    assert value(e1 // k, env) == v1 // k
    assert value(e1 % k, env) == v1 % k
  if v2 != 0:
    q, r = divmod(e1, e2)
    assert value(q, env) == v1 // v2 and value(r, env) == v1 % v2


@settings(max_examples=300, deadline=None)
@given(exprs, exprs, points)
def test_decisions_and_bounds_are_sound(s1, s2, env):
  e1, e2 = parse_pair(s1, s2)
  v1, v2 = value(e1, env), value(e2, env)
  try:
    ge = e1 >= e2
  except InconclusiveDimensionOperation:
    ge = None
  if ge is not None:
    assert ge == (v1 >= v2)
  try:
    lb, ub = bounds(e1 - e2)
  except InconclusiveDimensionOperation:  # a divisor that may be 0
    return
  assert lb <= v1 - v2 <= ub
  assert not (math.isnan(lb) or math.isnan(ub))
  try:
    m = jaxport.shapes._expr.dim_max(e1, e2)
  except InconclusiveDimensionOperation:
    return
  assert value(m, env) == max(v1, v2)


@settings(max_examples=200, deadline=None)
@given(exprs)
def test_printing_round_trips(s):
  try:
    e, = jaxport.symbolic_shape(s)
  except InconclusiveDimensionOperation:
    assume(False)
  scope = e.scope if isinstance(e, DimExpr) else jaxport.SymbolicScope()
  again, = jaxport.symbolic_shape(str(e), scope=scope)
  assert str(again) == str(e)
