"""Symbolic dimension expressions: normalized sums of products of factors.

An expression is a sum of ``(term, coefficient)`` pairs; a term is a product of
``(factor, exponent)`` pairs; a factor is a dimension variable or one of
``floordiv``, ``mod``, ``max``, ``min`` applied to two expressions. Every
object carries a structural sort ``key`` (size first, then contents) so that
ordering, hashing and syntactic equality are plain tuple operations; the order
is the one jax prints in (largest term first, constant last).

Constant results are plain Python ints. Comparisons and ``max``/``min`` ask
the expression's scope, which owns the decision procedure.

This module imports nothing from jax. Values that are not dimensions (traced
arrays) are delegated to the hooks the jax bridge installs (``jaxport.shapes._array_hooks``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from jaxport import _limits
from jaxport.shapes._array_hooks import hooks, is_int_like
from jaxport.shapes._budget import charge_parsing, exponent_too_large, product_too_large
from jaxport.shapes._evaluate import UnknownVariable, add, mul, value_max_min
from jaxport.shapes._jaxerr import InconclusiveDimensionOperation, inconclusive
from jaxport.shapes._terms import (FLOORDIV, MAX, MIN, MOD, ONE, Factor, Term, merge_sorted,
                                   rule_updates, sorted_pairs)


# Units of work (about a microsecond each, see jaxport._limits) of forming one product of
# two terms, normalizing included.
_PAIR_WORK = 3


def _is_dim_operand(x: Any) -> bool:
  """Whether ``x`` combines symbolically (an expression or an integer, not an array)."""
  if type(x) is int or isinstance(x, DimExpr):
    return True
  return not hooks.is_array(x) and is_int_like(x)


class DimExpr:
  """A symbolic dimension size: an integer expression over dimension variables."""

  __array_priority__ = 1000
  __slots__ = ("terms", "scope", "_key", "_hash")

  def __init__(self, terms: Sequence[tuple[Term, int]], scope: Any):
    """``terms`` must be sorted largest first, with no zero coefficient (see ``normalize``)."""
    self.terms = tuple(terms) or ((ONE, 0),)
    self.scope = scope
    self._key = None
    self._hash = None

  @property
  def key(self) -> tuple:
    """The structural sort key ``(size, ((term key, coefficient), ...))``, computed once."""
    if self._key is None:
      size = 0
      parts = []
      for t, c in self.terms:
        size += 1 + abs(c) * t.size
        parts.append((t.key, c))
      self._key = (size, tuple(parts))
    return self._key

  @property
  def size(self) -> int:
    return self.key[0]

  # ---- construction -------------------------------------------------------

  @staticmethod
  def constant(k: int, scope: Any) -> DimExpr:
    """A non-normalized constant expression, used as an operand of a factor."""
    return DimExpr(((ONE, operator.index(k)),), scope)

  @staticmethod
  def from_var(name: str, scope: Any) -> DimSize:
    return normalize(((Term(((Factor(var=name), 1),)), 1),), scope)

  @staticmethod
  def from_term(t: Term, k: int, scope: Any) -> DimSize:
    return normalize(((t, k),), scope)

  @staticmethod
  def from_operation(operation: str, e1: DimSize, e2: DimSize, scope: Any) -> DimSize:
    f = Factor(operation=operation,
               operands=(ensure_expr(e1, operation, scope), ensure_expr(e2, operation, scope)))
    return normalize(((Term(((f, 1),)), 1),), scope)

  # ---- inspection ---------------------------------------------------------

  @property
  def leading_term(self) -> tuple[Term, int]:
    return self.terms[0]

  def to_constant(self) -> int | None:
    t, c = self.terms[0]
    return c if t.is_constant else None

  @property
  def is_constant(self) -> bool:
    return self.terms[0][0].is_constant

  def to_term(self) -> Term | None:
    if len(self.terms) != 1 or self.terms[0][1] != 1:
      return None
    return self.terms[0][0]

  def to_factor(self) -> Factor | None:
    t = self.to_term()
    return None if t is None else t.to_factor()

  def to_var(self) -> str | None:
    f = self.to_factor()
    return None if f is None else f.var

  def to_single_term(self) -> tuple[int, int, Term] | None:
    """``(n, k, t)`` when the expression is ``n + k*t``, else None."""
    n = 0
    found = None
    for t, c in self.terms:
      if t.is_constant:
        n = c
      elif found is None:
        found = (c, t)
      else:
        return None
    assert found is not None
    return n, found[0], found[1]

  def _get_vars(self) -> set[str]:
    acc: set[str] = set()
    for t, _ in self.terms:
      acc.update(t.get_vars())
    return acc

  get_vars = _get_vars

  def __str__(self):
    parts = []
    for t, c in self.terms:
      sign = "+" if c > 0 else "-"
      if t.is_constant:
        parts.append(f"{sign} {abs(c)}" if c != 0 else "0")
      elif abs(c) == 1:
        parts.append(f"{sign} {t}")
      else:
        parts.append(f"{sign} {abs(c)}*{t}")
    res = " ".join(parts)
    return res[2:] if res.startswith("+ ") else res

  __repr__ = __str__

  def __hash__(self):
    if self._hash is None:
      self._hash = hash((self.key, id(self.scope)))
    return self._hash

  def __deepcopy__(self, memo):
    return self

  def __copy__(self):
    return self

  # ---- arithmetic ---------------------------------------------------------

  def __add__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__add__(other)
    if type(other) is int and other == 0:
      return self
    return linear_combination(self, 1, other, 1, self.scope)

  def __radd__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__radd__(other)
    if type(other) is int and other == 0:
      return self
    return linear_combination(self, 1, other, 1, self.scope)

  def __sub__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__sub__(other)
    if type(other) is int and other == 0:
      return self
    return linear_combination(self, 1, other, -1, self.scope)

  def __rsub__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__rsub__(other)
    return linear_combination(self, -1, other, 1, self.scope)

  def __neg__(self):
    return linear_combination(self, -1, 0, 0, self.scope)

  def __pos__(self):
    return self

  def __mul__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__mul__(other)
    if not isinstance(other, DimExpr):
      k = operator.index(other)
      if k == 1:
        return self
      if k == 0:
        return 0
      return linear_combination(self, k, 0, 0, self.scope)
    self.scope._check_same_scope(other, when="for operation mul")
    pairs = len(self.terms) * len(other.terms)
    if pairs > _limits.MAX_PRODUCT_TERMS:
      raise product_too_large(self, other)
    charge_parsing(_PAIR_WORK * pairs)
    coeffs: dict[Term, int] = {}
    for t1, c1 in self.terms:
      for t2, c2 in other.terms:
        t = t1.mul(t2)
        coeffs[t] = coeffs.get(t, 0) + c1 * c2
    return normalize(sorted_pairs(coeffs), self.scope)

  def __rmul__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__rmul__(other)
    return self.__mul__(other)

  def __pow__(self, power, modulo=None):
    if modulo is not None:
      raise NotImplementedError("__pow__ modulo not implemented")
    if isinstance(power, DimExpr):
      return power.__rpow__(self)
    if power != int(power):
      raise ValueError(f"Symbolic dimension cannot be raised to non-integer powers: '{self}' ** '{power}'")
    power = int(power)
    if power < 0:
      raise ValueError(f"Symbolic dimension cannot be raised to negative powers: '{self}' ** '{power}'")
    if power > _limits.MAX_DIM_EXPONENT:
      raise exponent_too_large(str(self), power)
    acc: DimSize = 1
    for _ in range(power):
      acc = acc * self
    return acc

  def __rpow__(self, other, modulo=None):
    if modulo is not None:
      raise NotImplementedError("__rpow__ modulo not implemented")
    return self.__jax_array__().__rpow__(other)

  def __floordiv__(self, divisor):
    if not _is_dim_operand(divisor):
      return self.__jax_array__().__floordiv__(divisor)
    return self.divmod(divisor)[0]

  def __rfloordiv__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__rfloordiv__(other)
    return ensure_expr(other, "floordiv", self.scope).__floordiv__(self)

  def __mod__(self, divisor):
    if not _is_dim_operand(divisor):
      return self.__jax_array__().__mod__(divisor)
    return self.divmod(divisor)[1]

  def __rmod__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__rmod__(other)
    return ensure_expr(other, "mod", self.scope).__mod__(self)

  def __divmod__(self, divisor):
    if not _is_dim_operand(divisor):
      return self.__jax_array__().__divmod__(divisor)
    return self.divmod(divisor)

  def __rdivmod__(self, other):
    if not _is_dim_operand(other):
      return self.__jax_array__().__rdivmod__(other)
    return ensure_expr(other, "divmod", self.scope).__divmod__(self)

  def __truediv__(self, divisor):
    return self.__jax_array__().__truediv__(divisor)

  def __rtruediv__(self, dividend):
    return self.__jax_array__().__rtruediv__(dividend)

  def divmod(self, divisor: DimSize) -> tuple[DimSize, DimSize]:
    """Exact polynomial division when it divides, else ``floordiv``/``mod`` factors.

    A constant divisor may leave an integer remainder, as for ints.
    """
    quotient = _exact_divmod(self, divisor)
    if quotient is not None:
      return quotient
    return (DimExpr.from_operation(FLOORDIV, self, divisor, self.scope),
            DimExpr.from_operation(MOD, self, divisor, self.scope))

  def __int__(self):
    c = self.to_constant()
    if c is not None:
      return c
    raise inconclusive(f"Symbolic dimension '{self}' used in a context that requires a constant")

  # ---- comparisons --------------------------------------------------------

  def __eq__(self, other):
    if isinstance(other, DimExpr):
      if self.scope is not other.scope:
        return False
    elif not (type(other) is int or (not hooks.is_array(other) and is_int_like(other))):
      return False
    diff = self - other
    return not isinstance(diff, DimExpr) and diff == 0

  def __ne__(self, other):
    return not self.__eq__(other)

  def __ge__(self, other):
    return geq(self, other, lambda: f"'{self}' >= '{other}'")

  def __le__(self, other):
    return geq(other, self, lambda: f"'{self}' <= '{other}'")

  def __gt__(self, other):
    return not geq(other, self, lambda: f"'{self}' > '{other}'")

  def __lt__(self, other):
    return not geq(self, other, lambda: f"'{self}' < '{other}'")

  def max(self, other: DimSize) -> DimSize:
    lb, ub = self.scope.bounds(self - other, stop_at_leq0=True)
    if lb >= 0:
      return self
    if ub <= 0:
      return other
    return DimExpr.from_operation(MAX, self, other, self.scope)

  def rmax(self, other: DimSize) -> DimSize:
    lb, ub = self.scope.bounds(self - other, stop_at_leq0=True)
    if lb >= 0:
      return self
    if ub <= 0:
      return other
    return DimExpr.from_operation(MAX, other, self, self.scope)

  def min(self, other: DimSize) -> DimSize:
    lb, ub = self.scope.bounds(self - other, stop_at_leq0=True)
    if lb >= 0:
      return other
    if ub <= 0:
      return self
    return DimExpr.from_operation(MIN, self, other, self.scope)

  def rmin(self, other: DimSize) -> DimSize:
    lb, ub = self.scope.bounds(self - other, stop_at_leq0=True)
    if lb >= 0:
      return other
    if ub <= 0:
      return self
    return DimExpr.from_operation(MIN, other, self, self.scope)

  # ---- evaluation and jax duck-typing -------------------------------------

  def _evaluate(self, env: dict[str, Any]) -> Any:
    """The value under ``env`` (variable name -> int, expression or array)."""
    return evaluate(self, env)

  def dimension_as_value(self) -> Any:
    """This dimension as a jax integer scalar value."""
    return self.__jax_array__()

  def __jax_array__(self):
    if hooks.as_array is None:
      raise TypeError(f"Symbolic dimension '{self}' cannot be used as an array value "
                      "before jaxport.shapes is connected to jax; import jaxport first.")
    return hooks.as_array(self)


DimSize = int | DimExpr


def normalize(terms: Sequence[tuple[Term, int]], scope: Any) -> DimSize:
  """An int or a DimExpr from sorted nonzero terms, applying the scope's rewrite rules.

  As in jax, the rules are applied to the first term that has one.
  """
  rules = scope._normalization_rules
  if rules:
    for t, k in terms:
      updates = rule_updates(t, k, rules)
      if updates:
        coeffs = dict(terms)
        for t1, k1 in updates:
          if k1:
            coeffs[t1] = coeffs.get(t1, 0) + k1
        terms = sorted_pairs(coeffs)
        break
  if not terms:
    return 0
  t0, k0 = terms[0]
  if t0.is_constant:
    return k0
  return DimExpr(terms, scope)


def total(parts: Sequence[DimSize], scope: Any) -> DimSize:
  """``parts[0] + parts[1] + ...``, as adding them left to right gives it.

  Without rewrite rules the normal form of a sum does not depend on the order of the
  additions, so the terms are added up in one pass (a sum of n variables costs n log n,
  not n^2); with rules each step is normalized, as jax does, so the parts go left to right.
  """
  if len(parts) == 1:
    return parts[0]
  if scope._normalization_rules:
    acc = parts[0]
    for p in parts[1:]:
      charge_parsing(len(_terms_of(acc)) + len(_terms_of(p)))
      acc = acc + p
    return acc
  coeffs: dict[Term, int] = {}
  for p in parts:
    for t, c in _terms_of(p):
      coeffs[t] = coeffs.get(t, 0) + c
  charge_parsing(len(parts) + len(coeffs))
  return normalize(sorted_pairs(coeffs), scope)


def product(factors: Sequence[DimSize], scope: Any) -> DimSize:
  """``factors[0] * factors[1] * ...``, as multiplying them left to right gives it.

  Without rewrite rules the normal form of a product does not depend on the order of
  the multiplications, so the single terms are merged in one pass (a product of n
  variables costs n log n, not n^2) and the longer factors multiplied after them.
  With rules each step is normalized, as jax does, so the factors go left to right.
  """
  if len(factors) == 1:
    return factors[0]
  if scope._normalization_rules:
    acc = factors[0]
    for f in factors[1:]:
      acc = acc * f
    return acc
  k = 1
  exponents: dict[Factor, int] = {}
  longer: list[DimExpr] = []
  for f in factors:
    if not isinstance(f, DimExpr):
      k *= operator.index(f)
    elif len(f.terms) == 1:
      t, c = f.terms[0]
      k *= c
      for factor, e in t.factors:
        exponents[factor] = exponents.get(factor, 0) + e
    else:
      longer.append(f)
  charge_parsing(len(factors) + len(exponents))
  if k == 0:
    return 0
  acc: DimSize = DimExpr.from_term(Term(tuple(sorted_pairs(exponents))), k, scope)
  for f in longer:
    acc = acc * f
  return acc


def ensure_expr(p: Any, operation: str, scope: Any) -> DimExpr:
  """``p`` as a DimExpr of ``scope`` (ints become constant expressions)."""
  if isinstance(p, DimExpr):
    scope._check_same_scope(p, when=f"for operation {operation}")
    return p
  if is_int_like(p):
    return DimExpr.constant(operator.index(p), scope)
  raise TypeError(f"Symbolic dimension {operation} not supported for {p}.")


def _terms_of(e: Any) -> Sequence[tuple[Term, int]]:
  if isinstance(e, DimExpr):
    return e.terms
  k = operator.index(e)
  return ((ONE, k),) if k else ()


def linear_combination(e1: DimSize, k1: int, e2: DimSize, k2: int, scope: Any) -> DimSize:
  """``e1*k1 + e2*k2``, normalized."""
  if isinstance(e1, DimExpr):
    if isinstance(e2, DimExpr):
      e1.scope._check_same_scope(e2, when="for linear combination")
  elif not isinstance(e2, DimExpr):
    return operator.index(e1) * k1 + operator.index(e2) * k2
  return normalize(merge_sorted(_terms_of(e1), k1, _terms_of(e2), k2), scope)


def _exact_divmod(e: DimExpr, divisor: DimSize) -> tuple[DimSize, DimSize] | None:
  """``(q, r)`` with ``e == divisor*q + r`` found by polynomial division, or None."""
  dividend: DimSize = e
  quotient: DimSize = 0
  div_is_expr = isinstance(divisor, DimExpr)
  try:
    while isinstance(dividend, DimExpr) and not dividend.is_constant:
      t, k = dividend.leading_term
      if div_is_expr:
        dt, dk = divisor.leading_term
        qt = t.divide(dt)
      else:
        qt, dk = t, operator.index(divisor)
      qk, rk = divmod(k, dk)
      if rk != 0:
        return None
      q = DimExpr.from_term(qt, qk, e.scope)
      quotient = quotient + q
      dividend = dividend - q * divisor
  except InconclusiveDimensionOperation:
    return None
  rest = int(dividend)
  if div_is_expr:
    if rest != 0:
      return None
    return quotient, 0
  q, r = divmod(rest, operator.index(divisor))
  return quotient + q, r


def geq(e1: DimSize, e2: DimSize, describe: Callable[[], str]) -> bool:
  """``e1 >= e2``, or InconclusiveDimensionOperation when it depends on the variables."""
  if isinstance(e1, DimExpr):
    scope = e1.scope
    if isinstance(e2, DimExpr):
      scope._check_same_scope(e2, when=f"when comparing {describe()}")
  elif isinstance(e2, DimExpr):
    scope = e2.scope
  else:
    return int(e1) >= int(e2)
  lb, ub = scope.bounds(e1 - e2)
  if lb >= 0:
    return True
  if ub < 0:
    return False
  extra = f"\nUsing symbolic scope {scope}" if scope._explicit_constraints else ""
  raise inconclusive(f"Symbolic dimension comparison {describe()} is inconclusive.{extra}")


def dim_max(d1: DimSize, d2: DimSize) -> DimSize:
  """``max`` for ints and expressions."""
  if isinstance(d1, DimExpr):
    return d1.max(d2)
  if isinstance(d2, DimExpr):
    return d2.rmax(d1)
  return max(d1, d2)


def dim_min(d1: DimSize, d2: DimSize) -> DimSize:
  """``min`` for ints and expressions."""
  if isinstance(d1, DimExpr):
    return d1.min(d2)
  if isinstance(d2, DimExpr):
    return d2.rmin(d1)
  return min(d1, d2)


def _eval_factor(f: Factor, env: dict[str, Any], scope: Any) -> Any:
  if f.var is not None:
    if f.var in env:
      return env[f.var]
    rewritten = DimExpr.from_var(f.var, scope)
    if not isinstance(rewritten, DimExpr):
      return rewritten
    if rewritten.to_var() != f.var:
      return evaluate(rewritten, env)
    raise UnknownVariable(f.var, env.keys())
  v1, v2 = (evaluate(o, env) for o in f.operands)
  if f.operation == FLOORDIV:
    return divmod(v1, v2)[0]
  if f.operation == MOD:
    return divmod(v1, v2)[1]
  if isinstance(v1, (int, DimExpr)) and isinstance(v2, (int, DimExpr)):
    return dim_max(v1, v2) if f.operation == MAX else dim_min(v1, v2)
  return value_max_min(f.operation, v1, v2)


def evaluate_term(t: Term, env: dict[str, Any], scope: Any) -> Any:
  """The value of the term ``t`` with variables taken from ``env``."""
  acc: Any = 1
  for f, e in t.factors:
    v = _eval_factor(f, env, scope)
    for _ in range(e):
      acc = mul(acc, v)
  return acc


def evaluate(e: DimSize, env: dict[str, Any]) -> Any:
  """The value of ``e`` with variables taken from ``env`` (name -> int, expression or traced
  array); raises ``UnknownVariable`` for a variable it leaves out."""
  if not isinstance(e, DimExpr):
    return operator.index(e)
  acc: Any = 0
  for t, k in e.terms:
    acc = add(acc, mul(evaluate_term(t, env, e.scope), k))
  return acc
