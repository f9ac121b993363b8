"""Bounds of symbolic expressions, for deciding ``e1 >= e2`` and simplifying max/min.

The facts known about a scope are kept as constraints ``c >= 0`` or ``c == 0``:
bounds on single terms, and general constraints indexed by their leading
(largest) term. To bound ``e = k*t + rest`` we eliminate ``t`` with every
constraint that mentions ``t`` as its leading term, and recurse on what is
left, which only contains smaller terms; this always terminates.

Implicit facts are added on demand for each term of the queried expression:
variables are ``>= 1``; ``mod(e, k)`` is in ``[0, k-1]`` for ``k > 0``;
``floordiv``, ``max``, ``min`` and products are bounded from their operands.
Explicit constraints come from the scope, in the order the user gave them.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from jaxport import _limits
from jaxport.errors import ShapeError
from jaxport.shapes._budget import charge_parsing
from jaxport.shapes._expr import DimExpr, DimSize, linear_combination
from jaxport.shapes._jaxerr import inconclusive
from jaxport.shapes._terms import FLOORDIV, MAX, MIN, MOD, ONE, Term, merge_sorted

INF = math.inf
EQ = "=="
GEQ = ">="

# Units of work (see jaxport._limits.MAX_DECISION_STEPS) of eliminating a term: one per
# term merged, and ``_FIXED`` for looking up the rest. Combining two facts costs
# ``_COMBINE`` times as much: its result is also normalized, recorded and indexed.
_FIXED = 4
_COMBINE = 3

# Eliminations deep past which a bounds computation makes room on the Python stack
# for the deepest one allowed (most never get there, and skip the cost of making room).
_DEEP = 100

# Precisions: how early a bounds computation may stop.
UNTIL_GEQ0_OR_LEQ0 = 0  # enough to simplify max/min
UNTIL_GEQ0_OR_LT0 = 1   # enough to decide >=
BEST = 2


def _sufficient(prec: int, lb: float, ub: float) -> bool:
  if prec == UNTIL_GEQ0_OR_LEQ0:
    return lb >= 0 or ub <= 0
  if prec == UNTIL_GEQ0_OR_LT0:
    return lb >= 0 or ub < 0
  return False


def _sgn(x: int) -> int:
  return 1 if x >= 0 else -1


def _floor_div(a: float, b: int) -> float:
  return a // b if not math.isinf(a) else (a if b > 0 else -a)


def _ceil_div(a: float, b: int) -> float:
  return -((-a) // b) if not math.isinf(a) else (a if b > 0 else -a)


def _term_minus(t: Term, k: int, const: int, scope: Any, normalized: bool) -> DimExpr:
  """``k*t - const``. ``normalized``: built as jax combines facts, ``k*t`` as it stands and
  then normalized by the subtraction (so the scope's rewrite rules apply) unless ``const``
  is 0; else as it stands, which always still contains ``t``."""
  raw = DimExpr(((t, k),), scope)
  if not const:
    return raw
  if not normalized:
    return DimExpr(((t, k), (ONE, -const)), scope)
  e = linear_combination(raw, 1, const, -1, scope)
  return e if isinstance(e, DimExpr) else DimExpr.constant(e, scope)


def _interval_mul(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
  def m(x, y):
    return 0 if x == 0 or y == 0 else x * y
  cands = [m(x, y) for x, y in itertools.product(a, b)]
  return min(cands), max(cands)


def _interval_pow(b: tuple[float, float], exp: int) -> tuple[float, float]:
  """Bounds of ``x**exp`` for ``x`` in ``b`` (even powers are never negative)."""
  lo, hi = b[0] ** exp, b[1] ** exp
  if exp % 2 == 1 or b[0] >= 0:
    return lo, hi
  if b[1] <= 0:
    return hi, lo
  return 0, max(lo, hi)


def _floor_div_inf(a: float, b: float) -> float:
  """``floor(a / b)`` as a limit when ``a`` or ``b`` is infinite (``b != 0``)."""
  if not math.isinf(b):
    if not math.isinf(a):
      return int(a) // int(b)
    return -INF if (a >= 0) != (b >= 0) else INF
  if not math.isinf(a):
    return -1 if (a >= 0) != (b >= 0) else 0
  return -INF if (a >= 0) != (b >= 0) else INF


class Decision:
  """The mutable state of one bounds query: the known constraints of a scope."""

  __slots__ = ("scope", "processed", "term_bounds", "by_leading", "_lead_rank", "containing",
               "_seq", "_memo", "steps", "_depth")

  def __init__(self, scope: Any):
    self.scope = scope
    self.processed: set[Term] = set()
    self.term_bounds: dict[Term, tuple[float, float]] = {}
    # leading term -> {(cmp, coefficient of the leading term, constraint expr): None}
    self.by_leading: dict[Term, dict[tuple[str, int, DimExpr], None]] = {}
    self._lead_rank: dict[Term, int] = {}  # the order of ``by_leading``'s keys
    # term -> {constraint key: (rank of its leading term, rank of the constraint, coefficient of
    # the term)} for every term of every constraint: the constraints that can eliminate a term,
    # found without scanning them all, and visited in the order of ``by_leading``.
    self.containing: dict[Term, dict[tuple[str, int, DimExpr], tuple[int, int, int]]] = {}
    self._seq = 0
    # Best bounds of sums of terms under the current state; cleared when it changes.
    self._memo: dict[tuple, tuple[float, float]] = {}
    # Work done in this state since it was made or copied (see ``_step``), and how many
    # eliminations deep the bounds computation now is.
    self.steps = 0
    self._depth = 0

  def copy(self) -> Decision:
    """A copy to change, with its own work count."""
    c = Decision(self.scope)
    c.processed = set(self.processed)
    c.term_bounds = dict(self.term_bounds)
    c.by_leading = {t: dict(cs) for t, cs in self.by_leading.items()}
    c._lead_rank = dict(self._lead_rank)
    c.containing = {t: dict(cs) for t, cs in self.containing.items()}
    c._seq = self._seq
    c._memo = dict(self._memo)
    return c

  def _step(self, n: int = 1) -> None:
    """Counts ``n`` units of work against the budget (one per fact added; eliminations and
    combinations by the terms they merge) and against the specs being parsed, if any."""
    self.steps += n
    if self.steps > _limits.MAX_DECISION_STEPS:
      raise decision_budget_exceeded(self.scope, "MAX_DECISION_STEPS")
    charge_parsing(n)

  def add_explicit(self, constraints) -> Decision:
    for c in constraints:
      if isinstance(c.diff, DimExpr):
        self.add_implicit_for_expr(c.diff)
      self.add_constraint(c.cmp, c.diff, 0, c.debug_str)
      self.scope._bounds_cache.clear()
    return self

  # ---- adding constraints --------------------------------------------------

  def add_constraint(self, cmp: str, e1: DimSize | float, e2: DimSize | float,
                     debug_str: str | None = None) -> None:
    """Records ``e1 >= e2`` (or ``==``) and its combinations with what is known."""
    self._step()
    if isinstance(e1, float):
      if e1 == INF and cmp == GEQ:
        return
      e1 = int(e1)
    if isinstance(e2, float):
      if e2 == -INF and cmp == GEQ:
        return
      e2 = int(e2)
    e = e1 - e2
    if not isinstance(e, DimExpr) or e.is_constant:
      const = int(e)
      if const < 0 or (cmp == EQ and const != 0):
        raise ShapeError(f"Unsatisfiable constraint: {debug_str or f'{e1} >= {e2}'}")
      return
    self._record(cmp, e, debug_str)
    for cmp2, e2_ in self._combinations(cmp, e, debug_str):
      self._record(cmp2, e2_, None)

  def _record(self, cmp: str, e: DimExpr, debug_str: str | None) -> None:
    self._memo.clear()
    single = e.to_single_term()
    if single is not None:
      n, k, t = single  # n + k*t >= 0 (or == 0)
      lb, ub = self.term_bounds.get(t, (-INF, INF))
      if cmp == EQ:
        if n % k:
          raise ShapeError(f"Unsatisfiable constraint: {debug_str}")
        val = -(n // k)
        lb, ub = max(lb, val), min(ub, val)
      elif k > 0:
        lb = max(lb, -(n // k))
      else:
        ub = min(ub, n // (-k))
      if lb > ub:
        raise ShapeError(f"Unsatisfiable constraint: {debug_str}")
      self.term_bounds[t] = (lb, ub)
      return
    lead, lead_k = e.leading_term
    group = self.by_leading.get(lead)
    if group is None:
      group = self.by_leading[lead] = {}
      self._lead_rank[lead] = len(self._lead_rank)
    key = (cmp, lead_k, e)
    if key in group:
      return
    group[key] = None
    rank = self._lead_rank[lead]
    self._seq += 1
    for t, k in e.terms:
      if not t.is_constant:
        self.containing.setdefault(t, {})[key] = (rank, self._seq, k)

  def _eliminators(self, t: Term, k: int, only_leading: bool):
    """``(cmp, c, c_s, t_s)`` such that ``c cmp 0`` holds, ``c_s > 0``, and ``k*t*t_s + c*c_s``
    no longer contains ``t`` (for ``only_leading``, for bounds) or is worth recording (else,
    for combining a new fact with every known one that mentions ``t``, as jax does).

    jax builds the facts of a term's bounds normalized by the scope's rewrite rules; when a
    rule rewrites ``t`` such a fact cannot eliminate ``t`` and jax's bounds recurse without
    end, so bounds use the fact as it stands, and the answer is jax's wherever jax has one.
    """
    lb, ub = self.term_bounds.get(t, (-INF, INF))
    scope = self.scope
    normalized = not only_leading
    if lb == ub:
      yield EQ, _term_minus(t, 1, int(lb), scope, normalized), abs(k), -_sgn(k)
    else:
      if lb > -INF:
        yield GEQ, _term_minus(t, 1, int(lb), scope, normalized), abs(k), -_sgn(k)
      if ub < INF:
        yield GEQ, _term_minus(t, -1, -int(ub), scope, normalized), abs(k), _sgn(k)
    if only_leading:
      for c_cmp, _, c in list(self.by_leading.get(t, ())):
        yield c_cmp, c, abs(k), -c.terms[0][1] * _sgn(k)
      return
    found = self.containing.get(t)
    if found:
      for (_, _, ck), (c_cmp, _, c) in sorted(zip(found.values(), found)):
        yield c_cmp, c, abs(k), -ck * _sgn(k)

  def _combinations(self, cmp: str, e: DimExpr, debug_str: str | None) -> dict:
    acc: dict[tuple[str, DimExpr], None] = {}
    for t, k in e.terms:
      if t.is_constant:
        continue
      for c_cmp, c, c_s, t_s in list(self._eliminators(t, k, only_leading=False)):
        if t_s > 0 or cmp == EQ:
          self._step(_COMBINE * (_FIXED + len(e.terms) + len(c.terms)))
          new_cmp = EQ if cmp == c_cmp == EQ else GEQ
          new_e = linear_combination(e, t_s, c, c_s, self.scope)
          if not isinstance(new_e, DimExpr):
            if (new_cmp == GEQ and new_e < 0) or (new_cmp == EQ and new_e != 0):
              raise ShapeError(f"Unsatisfiable constraints: {debug_str or str(e) + ' >= 0'}")
          else:
            acc[(new_cmp, new_e)] = None
    return acc

  # ---- implicit facts -----------------------------------------------------

  def add_implicit_for_expr(self, e: DimExpr) -> None:
    for t, _ in e.terms:
      if not t.is_constant:
        self.add_implicit_for_term(t)

  def add_implicit_for_term(self, t: Term) -> None:
    if t in self.processed:
      return
    self.processed.add(t)
    scope = self.scope
    t_e = DimExpr.from_term(t, 1, scope)
    f = t.to_factor()
    if f is None:
      acc = (1, 1)
      for f1, exp in t.factors:
        f1_t = Term(((f1, 1),))
        self.add_implicit_for_term(f1_t)
        b = self.bounds(DimExpr.from_term(f1_t, 1, scope), BEST)
        acc = _interval_mul(acc, _interval_pow(b, exp))
      self.add_constraint(GEQ, t_e, acc[0])
      self.add_constraint(GEQ, acc[1], t_e)
      return
    if f.var is not None:
      self.add_constraint(GEQ, t_e, 1)
      return
    for o in f.operands:
      self.add_implicit_for_expr(o)
    op1, op2 = f.operands
    if f.operation == MOD:
      lb2, ub2 = self.bounds(op2, UNTIL_GEQ0_OR_LT0)
      if lb2 > 0:
        self.add_constraint(GEQ, t_e, 0)
        self.add_constraint(GEQ, op2 - 1, t_e)
        self.add_constraint(GEQ, ub2 - 1, t_e)
      elif ub2 < 0:
        self.add_constraint(GEQ, t_e, op2 + 1)
        self.add_constraint(GEQ, t_e, lb2 + 1)
        self.add_constraint(GEQ, 0, t_e)
      return
    if f.operation == FLOORDIV:
      lb1, ub1 = self.bounds(op1, BEST)
      lb2, ub2 = self.bounds(op2, BEST)
      if lb2 <= 0 <= ub2:
        raise inconclusive(f"Possible division by 0 in division by {op2}")
      cands = [_floor_div_inf(a, b) for a in (lb1, ub1) for b in (lb2, ub2)]
      self.add_constraint(GEQ, t_e, min(cands))
      self.add_constraint(GEQ, max(cands), t_e)
      if lb2 >= 0:
        if lb1 >= 0:
          self.add_constraint(GEQ, t_e, 0)
        mod_e = DimExpr.from_operation(MOD, op1, op2, scope)
        if isinstance(mod_e, DimExpr):
          self.add_implicit_for_expr(mod_e)
        self.add_constraint(EQ, op1, op2 * t_e + mod_e)
      return
    lb1, ub1 = self.bounds(op1, BEST)
    lb2, ub2 = self.bounds(op2, BEST)
    if f.operation == MAX:
      self.add_constraint(GEQ, t_e, max(lb1, lb2))
      self.add_constraint(GEQ, max(ub1, ub2), t_e)
      self.add_constraint(GEQ, t_e, op1)
      self.add_constraint(GEQ, t_e, op2)
    else:
      assert f.operation == MIN
      self.add_constraint(GEQ, t_e, min(lb1, lb2))
      self.add_constraint(GEQ, min(ub1, ub2), t_e)
      self.add_constraint(GEQ, op1, t_e)
      self.add_constraint(GEQ, op2, t_e)

  # ---- bounds -------------------------------------------------------------

  def bounds(self, e: DimSize, prec: int, add_implicit: bool = False) -> tuple[float, float]:
    """``(lb, ub)`` with ``lb <= e <= ub``; ints or infinities."""
    if not isinstance(e, DimExpr):
      return e, e
    c = e.to_constant()
    if c is not None:
      return c, c
    cache = self.scope._bounds_cache
    cached = cache.get(e.key)
    if cached is not None:
      lb, ub, prev = cached
      if _sufficient(prec, lb, ub) or prev >= prec:
        return lb, ub
    if add_implicit:
      self.add_implicit_for_expr(e)
    lb, ub = self._bounds_of_terms(e.terms, prec)
    cache[e.key] = (lb, ub, prec)
    return lb, ub

  def _best_bounds_of_terms(self, terms) -> tuple[float, float]:
    key = tuple(terms)
    found = self._memo.get(key)
    if found is None:
      self._depth += 1
      try:
        if self._depth > _limits.MAX_DECISION_DEPTH:
          raise decision_budget_exceeded(self.scope, "MAX_DECISION_DEPTH")
        if self._depth == _DEEP:
          with _limits.recursion_room(_limits.MAX_DECISION_DEPTH - _DEEP):
            found = self._bounds_of_terms(terms, BEST)
        else:
          found = self._bounds_of_terms(terms, BEST)
      finally:
        self._depth -= 1
      self._memo[key] = found
    return found

  def _bounds_of_terms(self, terms, prec: int) -> tuple[float, float]:
    if not terms:
      return 0, 0
    t, k = terms[0]
    if t.is_constant:
      return k, k
    lb: float = -INF
    ub: float = INF
    for c_cmp, c, c_s, t_s in list(self._eliminators(t, k, only_leading=True)):
      self._step(_FIXED + len(terms) + len(c.terms))
      rest = merge_sorted(terms, t_s, c.terms, c_s)
      rest_lb, rest_ub = self._best_bounds_of_terms(rest)
      # terms*t_s == rest - c*c_s, and c >= 0 (or == 0)
      if rest_ub < INF:
        if t_s > 0:
          ub = min(ub, _floor_div(rest_ub, t_s))
        else:
          lb = max(lb, _ceil_div(rest_ub, t_s))
      if rest_lb > -INF and c_cmp == EQ:
        if t_s > 0:
          lb = max(lb, _ceil_div(rest_lb, t_s))
        else:
          ub = min(ub, _floor_div(rest_lb, t_s))
      if _sufficient(prec, lb, ub):
        return lb, ub
    f = t.to_factor()
    if f is not None and f.operation in (MAX, MIN):
      self._step(2 * (_FIXED + len(terms)) + len(f.operands[0].terms)
                 + len(f.operands[1].terms))
      # k*max(o1, o2) + rest is between the bounds of k*o1 + rest and k*o2 + rest
      rest1 = merge_sorted(terms[1:], 1, f.operands[0].terms, k)
      rest2 = merge_sorted(terms[1:], 1, f.operands[1].terms, k)
      lb1, ub1 = self._best_bounds_of_terms(rest1)
      lb2, ub2 = self._best_bounds_of_terms(rest2)
      if (k > 0) == (f.operation == MAX):
        lb, ub = max(lb, max(lb1, lb2)), min(ub, max(ub1, ub2))
      else:
        lb, ub = max(lb, min(lb1, lb2)), min(ub, min(ub1, ub2))
    return lb, ub


def bounds(e: DimSize, prec: int = UNTIL_GEQ0_OR_LT0) -> tuple[float, float]:
  """Lower and upper bounds of ``e`` under its scope's implicit and explicit facts."""
  if not isinstance(e, DimExpr):
    return int(e), int(e)
  return e.scope._decision().bounds(e, prec, add_implicit=True)


def decision_budget_exceeded(scope: Any, limit: str) -> ShapeError:
  """The refusal of a scope's constraints or of one comparison past a decision budget."""
  n = len(scope._explicit_constraints)
  what = ("units of work (facts recorded, terms merged combining and eliminating them)"
          if limit == "MAX_DECISION_STEPS" else "eliminations deep")
  return ShapeError(
      f"Deciding bounds of symbolic dimensions went past {_limits.name(limit)} {what}, "
      f"in a scope with {n} explicit constraints. The work grows with every pair of "
      "constraints sharing a term (chains of equalities such as 'a0 == a1 + 1', "
      "'a1 == a2 + 1', ... multiply it) and with the number of terms compared. Use fewer "
      "constraints (substitute chained equalities into one another) or shorter dimensions.")
