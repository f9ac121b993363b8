"""SymbolicScope: the set of dimension expressions that may be combined, and their constraints.

Each user constraint ``e1 >= e2``, ``e1 <= e2`` or ``e1 == e2`` is parsed in
the scope being built. Equalities ``k*t == e`` (the left side one term) also
become rewrite rules applied whenever an expression is built, so that
``t`` never survives in normal forms; ``mod(e, k) == 0`` additionally yields
``k*floordiv(e, k) == e``. The scope caches bounds and the decision state
seeded with its explicit constraints.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any

from jaxport._jaxcompat import _messages as jax_messages
from jaxport.errors import ShapeError
from jaxport.shapes import _decision
from jaxport.shapes._budget import WorkMeter, spec_work_exceeded
from jaxport.shapes._expr import DimExpr, DimSize, ensure_expr
from jaxport.shapes._parser import ShapeParser
from jaxport.shapes._terms import FLOORDIV, MOD, Factor, Term

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Constraint:
  """``e1 == e2`` or ``e1 >= e2`` as the user wrote it in ``debug_str``.

  ``diff`` is ``e1 - e2`` computed before the constraint's own rewrite rule exists.
  """

  cmp: str
  debug_str: str
  e1: DimSize
  e2: DimSize
  diff: DimSize

  def __repr__(self):
    return f"Constraint({self.debug_str})"


def _user_location() -> str:
  frame = sys._getframe(1)
  while frame is not None:
    filename = frame.f_code.co_filename
    if not os.path.abspath(filename).startswith(_PACKAGE_DIR) and "/jax/" not in filename:
      return f"{filename}:{frame.f_lineno} ({frame.f_code.co_name})"
    frame = frame.f_back
  return "unknown"


class SymbolicScope:
  """Identifies which symbolic expressions may interact, and holds their constraints.

  Args:
    constraints_str: constraints of the form ``e1 >= e2``, ``e1 <= e2`` or
      ``e1 == e2`` over the dimension variables.
  """

  def __init__(self, constraints_str: Sequence[str] = ()):
    if isinstance(constraints_str, str):
      raise ShapeError("The symbolic constraints should be a sequence of strings. "
                       f"Got {constraints_str!r}")
    self._initialized = False
    self._location = _user_location()
    self._explicit_constraints: list[Constraint] = []
    self._bounds_cache: dict[Any, tuple[float, float, int]] = {}
    self._decision_initial_state: _decision.Decision | None = None
    self._normalization_rules: dict[Term, tuple[DimExpr, int]] = {}
    self._constraint_strings: tuple[str, ...] = tuple(constraints_str)
    # The work of every spec parsed in this scope together (a blob's dimensions share one).
    self._parse_meter = WorkMeter("MAX_SPEC_WORK", spec_work_exceeded)
    for c_str in self._constraint_strings:
      self._add_constraint_str(c_str)
      self._bounds_cache.clear()
    self._initialized = True
    if self._explicit_constraints:
      self._decision()  # refuse contradictory constraints now, not at the first comparison

  @property
  def constraints(self) -> tuple[str, ...]:
    """The constraint strings this scope was built from (what serialization stores)."""
    return self._constraint_strings

  def __str__(self) -> str:
    extras = []
    if self._explicit_constraints:
      extras.append(" with constraints:")
      extras.extend(f"  {c.debug_str}" for c in self._explicit_constraints)
    return f"{id(self)} created at {self._location}" + "\n".join(extras)

  __repr__ = __str__

  # ---- constraints --------------------------------------------------------

  def _add_constraint_str(self, c_str: Any) -> None:
    if not isinstance(c_str, str):
      raise ShapeError(f"SymbolicScope constraint must be a string: got {c_str!r}")
    for token, cmp, swap in (("==", _decision.EQ, False), (">=", _decision.GEQ, False),
                             ("<=", _decision.GEQ, True)):
      pos = c_str.find(token)
      if pos >= 0:
        break
    else:
      raise ShapeError("Constraint parsing error: must contain one of '==' or '>=' or '<='")
    e1 = self._parse_side(c_str, c_str[:pos])
    e2 = self._parse_side(c_str, c_str[pos + 2:])
    if swap:
      e1, e2 = e2, e1
    self._add_constraint(Constraint(cmp=cmp, debug_str=c_str, e1=e1, e2=e2, diff=e1 - e2))

  def _parse_side(self, c_str: str, side: str) -> DimSize:
    dims = ShapeParser(side, None, repr(side), self).parse()
    if len(dims) != 1:
      raise ShapeError(f"Constraint parsing error in {c_str!r}: each side must be exactly one "
                       f"dimension expression, found {len(dims)} in {side!r}.")
    return dims[0]

  def _add_constraint(self, c: Constraint) -> None:
    if not isinstance(c.diff, DimExpr):
      if (c.cmp == _decision.EQ and c.diff != 0) or (c.cmp == _decision.GEQ and c.diff < 0):
        raise ShapeError(f"Unsatisfiable explicit constraint: {c.debug_str}")
      return
    # The user's constraint goes first so that a failing check names it.
    self._explicit_constraints.append(c)
    if c.cmp == _decision.EQ:
      self._add_rewrite_rule(c)

  def _add_rewrite_rule(self, c: Constraint) -> None:
    if not isinstance(c.e1, DimExpr) or len(c.e1.terms) != 1:
      raise ShapeError(f"Invalid equality constraint: {c.debug_str}. "
                       "The left-hand-side must be of the form `term * coefficient`, "
                       "e.g. `2*a == b + 1` or `mod(b, 4) == 0`.")
    before, before_k = c.e1.terms[0]
    if before in self._normalization_rules:
      raise ShapeError(f"Found multiple equality constraints with the same left-hand-side: {before}")
    self._normalization_rules[before] = (ensure_expr(c.e2, "parse_constraint", self), before_k)
    f = before.to_factor()
    if (before_k == 1 and type(c.e2) is int and c.e2 == 0 and f is not None
        and f.operation == MOD and f.operands[1].is_constant):
      k = f.operands[1].to_constant()
      floordiv = Factor(operation=FLOORDIV, operands=f.operands)
      k_floordiv = DimExpr.from_term(Term(((floordiv, 1),)), k, self)
      dividend = f.operands[0]
      self._add_constraint(Constraint(cmp=_decision.EQ, debug_str=f"{k_floordiv} == {dividend}",
                                      e1=k_floordiv, e2=dividend, diff=k_floordiv - dividend))

  def _check_same_scope(self, other: DimExpr, when: str = "", self_descr: str = " ",
                        other_descr: str = "unknown") -> None:
    if self is not other.scope:
      raise ShapeError(
          f"Invalid mixing of symbolic scopes {when}.\n"
          f"Expected {self_descr}scope {self}\n"
          f"and found for '{other}' ({other_descr}) scope {other.scope}\n"
          f"See {jax_messages.SHAPE_POLY_PAGE}#user-specified-symbolic-constraints.")

  # ---- decisions ----------------------------------------------------------

  def _decision(self) -> _decision.Decision:
    if not self._initialized or not self._explicit_constraints:
      return _decision.Decision(self).add_explicit(self._explicit_constraints)
    if self._decision_initial_state is None:
      self._decision_initial_state = _decision.Decision(self).add_explicit(self._explicit_constraints)
    return self._decision_initial_state.copy()

  def bounds(self, e: DimSize, stop_at_leq0: bool = False) -> tuple[float, float]:
    """Bounds of ``e``; precise enough to decide ``>= 0`` vs ``< 0`` (or ``<= 0``)."""
    prec = _decision.UNTIL_GEQ0_OR_LEQ0 if stop_at_leq0 else _decision.UNTIL_GEQ0_OR_LT0
    return _decision.bounds(e, prec)

  def _clear_caches(self) -> None:
    self._bounds_cache.clear()

