"""The value of a symbolic dimension expression once its variables are bound.

The bound values may be ints, other expressions, or traced arrays (for the latter, the
arithmetic of ``max`` and ``min`` goes through the hooks the jax bridge installs,
``jaxport.shapes._array_hooks``). Evaluating a variable that the bindings leave out raises
:class:`UnknownVariable`, with jax's message.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from jaxport._jaxcompat import _messages as jax_messages
from jaxport.errors import ShapeError
from jaxport.shapes._array_hooks import hooks, is_int_like
from jaxport.shapes._expr import DimExpr, DimSize, dim_max, dim_min
from jaxport.shapes._terms import FLOORDIV, MAX, MOD, Factor, Term


class UnknownVariable(ShapeError):
  """Evaluation met a dimension variable that ``env`` does not bind."""

  def __init__(self, var: str, known: Iterable[str]):
    super().__init__(
        f"Encountered dimension variable '{var}' that is not appearing in the shapes of the "
        "function arguments.\nThe following dimension variables are appearing in the shapes of "
        f"the function arguments: {list(known)}.\nPlease see {jax_messages.SHAPE_POLY_PAGE}"
        "#dimension-variables-must-be-solvable-from-the-input-shapes "
        "for more details.")
    self.var = var


def _mul(v1: Any, v2: Any) -> Any:
  if type(v1) is int and v1 == 1:
    return v2
  if type(v2) is int and v2 == 1:
    return v1
  return v1 * v2


def _add(v1: Any, v2: Any) -> Any:
  if type(v1) is int and v1 == 0:
    return v2
  if type(v2) is int and v2 == 0:
    return v1
  return v1 + v2


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
  if is_int_like(v1) and is_int_like(v2) and not (hooks.is_array(v1) or hooks.is_array(v2)):
    v1, v2 = operator.index(v1), operator.index(v2)
    return max(v1, v2) if f.operation == MAX else min(v1, v2)
  return hooks.array_max(v1, v2) if f.operation == MAX else hooks.array_min(v1, v2)


def evaluate_term(t: Term, env: dict[str, Any], scope: Any) -> Any:
  acc: Any = 1
  for f, e in t.factors:
    v = _eval_factor(f, env, scope)
    for _ in range(e):
      acc = _mul(acc, v)
  return acc


def evaluate(e: DimSize, env: dict[str, Any]) -> Any:
  """The value of ``e`` with variables taken from ``env``; raises UnknownVariable."""
  if not isinstance(e, DimExpr):
    return operator.index(e)
  acc: Any = 0
  for t, k in e.terms:
    acc = _add(acc, _mul(evaluate_term(t, env, e.scope), k))
  return acc
