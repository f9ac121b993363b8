"""The parts of a symbolic dimension expression: factors (a dimension variable, or an operation
of two expressions) and terms (products of factors with exponents), each with a structural
sort ``key`` (size first, then contents), and the merge of two sorted lists of pairs that
sums and products are made of. Nothing here decides comparisons or normalizes: that is
``jaxport.shapes._expr``'s and its scope's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from jaxport.shapes._jaxerr import inconclusive


class Expression(Protocol):
  """What the parts, the budgets and the array hooks need of a whole expression
  (``jaxport.shapes._expr.DimExpr``, which is made of these parts and so sits above them)."""

  @property
  def key(self) -> tuple: ...

  @property
  def size(self) -> int: ...

  @property
  def terms(self) -> tuple[tuple[Term, int], ...]: ...

  def _get_vars(self) -> set[str]: ...


FLOORDIV = "floordiv"
MOD = "mod"
MAX = "max"
MIN = "min"
OPERATIONS = (FLOORDIV, MOD, MAX, MIN)


class _Keyed:
  """Hashed, compared and ordered by ``key``, the structural sort key (size first, then
  contents), whose hash is kept in ``_hash``: objects of one class with equal keys are equal."""

  __slots__ = ()

  def __hash__(self):
    return self._hash

  def __eq__(self, other):
    return self is other or (type(other) is type(self) and self.key == other.key)

  def __lt__(self, other):
    return self.key < other.key


class Factor(_Keyed):
  """A dimension variable, or ``operation(e1, e2)`` of two expressions."""

  __slots__ = ("var", "operation", "operands", "key", "size", "_hash")

  def __init__(self, var: str | None = None, operation: str | None = None,
               operands: tuple[Expression, ...] = ()):
    self.var = var
    self.operation = operation
    self.operands = operands
    if var is not None:
      self.size = 1
      self.key = (1, var)
    else:
      self.size = 1 + sum(o.size for o in operands)
      self.key = (self.size, operation, tuple(o.key for o in operands))
    self._hash = hash(self.key)

  def __str__(self):
    if self.var is not None:
      return self.var
    return f"{self.operation}({', '.join(map(str, self.operands))})"

  __repr__ = __str__

  def get_vars(self) -> set[str]:
    if self.var is not None:
      return {self.var}
    acc: set[str] = set()
    for o in self.operands:
      acc.update(o._get_vars())
    return acc


class Term(_Keyed):
  """A product of ``(factor, exponent)`` pairs, largest factor first; ``()`` is 1."""

  __slots__ = ("factors", "key", "size", "_hash")

  def __init__(self, factors: tuple[tuple[Factor, int], ...]):
    self.factors = factors
    self.size = sum(1 + e * f.size for f, e in factors)
    self.key = (self.size, tuple((f.key, e) for f, e in factors))
    self._hash = hash(self.key)

  def __str__(self):
    return "*".join(str(f) if e == 1 else f"{f}^{e}" for f, e in reversed(self.factors))

  __repr__ = __str__

  @property
  def is_constant(self) -> bool:
    return not self.factors

  def to_factor(self) -> Factor | None:
    if len(self.factors) != 1 or self.factors[0][1] != 1:
      return None
    return self.factors[0][0]

  def to_var(self) -> str | None:
    f = self.to_factor()
    return None if f is None else f.var

  def get_vars(self) -> set[str]:
    acc: set[str] = set()
    for f, _ in self.factors:
      acc.update(f.get_vars())
    return acc

  def mul(self, other: Term) -> Term:
    if not other.factors:
      return self
    if not self.factors:
      return other
    if len(other.factors) == 1:
      return self._times(*other.factors[0])
    if len(self.factors) == 1:
      return other._times(*self.factors[0])
    return Term(tuple(merge_sorted(self.factors, 1, other.factors, 1)))

  def _times(self, f: Factor, e: int) -> Term:
    """``self * f^e``, from this term's factors and key without walking them in Python, so
    that a product built one factor at a time (``math.prod`` of n dimensions) is not n^2
    Python steps."""
    factors = self.factors
    key = f.key
    lo, hi = 0, len(factors)
    while lo < hi:  # the first factor not larger than f (factors are largest first)
      mid = (lo + hi) // 2
      if factors[mid][0].key > key:
        lo = mid + 1
      else:
        hi = mid
    parts = self.key[1]
    if lo < len(factors) and factors[lo][0].key == key:
      merged = factors[lo][1] + e
      new_factors = factors[:lo] + ((factors[lo][0], merged),) + factors[lo + 1:]
      new_parts = parts[:lo] + ((key, merged),) + parts[lo + 1:]
      size = self.size + e * f.size
    else:
      new_factors = factors[:lo] + ((f, e),) + factors[lo:]
      new_parts = parts[:lo] + ((key, e),) + parts[lo:]
      size = self.size + 1 + e * f.size
    t = Term.__new__(Term)
    t.factors = new_factors
    t.size = size
    t.key = (size, new_parts)
    t._hash = hash(t.key)
    return t

  def divide(self, divisor: Term) -> Term:
    """The exact quotient; raises InconclusiveDimensionOperation if there is none."""
    factors = merge_sorted(self.factors, 1, divisor.factors, -1)
    if any(e <= 0 for _, e in factors):
      raise inconclusive(f"Cannot divide {self} by {divisor}.")
    return Term(tuple(factors))


ONE = Term(())


def merge_sorted(pairs1: Sequence[tuple[Any, int]], k1: int,
                 pairs2: Sequence[tuple[Any, int]], k2: int) -> list[tuple[Any, int]]:
  """``pairs1*k1 + pairs2*k2`` for pair lists sorted largest key first."""
  acc = []
  i1 = i2 = 0
  n1, n2 = len(pairs1), len(pairs2)
  while i1 < n1 and i2 < n2:
    x1, c1 = pairs1[i1]
    x2, c2 = pairs2[i2]
    key1, key2 = x1.key, x2.key
    if key1 > key2:
      acc.append((x1, c1 * k1))
      i1 += 1
    elif key1 < key2:
      acc.append((x2, c2 * k2))
      i2 += 1
    else:
      c = c1 * k1 + c2 * k2
      i1 += 1
      i2 += 1
      if c != 0:
        acc.append((x1, c))
  acc.extend((x, c * k1) for x, c in pairs1[i1:] if c != 0)
  acc.extend((x, c * k2) for x, c in pairs2[i2:] if c != 0)
  return acc


def sorted_pairs(coeffs: dict) -> list[tuple[Any, int]]:
  """Nonzero ``(key object, coefficient)`` pairs of ``coeffs``, largest first."""
  return sorted(((t, c) for t, c in coeffs.items() if c != 0),
                key=lambda p: p[0].key, reverse=True)


def rule_updates(t: Term, k: int, rules: dict) -> list[tuple[Term, int]] | None:
  """The changes the scope's rewrite rules make to the term ``k*t``, or None."""
  rule = rules.get(t)
  if rule is not None:
    after, k_after = rule
    if k % k_after == 0:
      return [(t, -k)] + [(t2, c2 * (k // k_after)) for t2, c2 in after.terms]
  if len(t.factors) <= 1:
    return None
  for f, e in t.factors:
    single = Term(((f, e),))
    rule = rules.get(single)
    if rule is not None:
      after, k_after = rule
      if k % k_after == 0:
        rest = t.divide(single)
        return [(t, -k)] + [(t2.mul(rest), c2 * (k // k_after)) for t2, c2 in after.terms]
  return None
