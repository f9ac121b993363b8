"""The arithmetic of the values a symbolic dimension expression takes once its variables are
bound, and the refusal of a variable the bindings leave out.

The bound values may be ints, other expressions, or traced arrays (for the latter, the
arithmetic of ``max`` and ``min`` goes through the hooks the jax bridge installs,
``jaxport.shapes._array_hooks``). The walk over an expression's terms and factors is the
expression's own (``jaxport.shapes._expr.evaluate``); evaluating a variable that the
bindings leave out raises :class:`UnknownVariable`, with jax's message.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

from jaxport._jaxcompat import _messages as jax_messages
from jaxport.errors import ShapeError
from jaxport.shapes._array_hooks import hooks, is_int_like
from jaxport.shapes._terms import MAX


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


def mul(v1: Any, v2: Any) -> Any:
  """``v1 * v2``, leaving out a factor of 1 (so an array or expression is not rebuilt)."""
  if type(v1) is int and v1 == 1:
    return v2
  if type(v2) is int and v2 == 1:
    return v1
  return v1 * v2


def add(v1: Any, v2: Any) -> Any:
  """``v1 + v2``, leaving out a term of 0."""
  if type(v1) is int and v1 == 0:
    return v2
  if type(v2) is int and v2 == 0:
    return v1
  return v1 + v2


def value_max_min(operation: str, v1: Any, v2: Any) -> Any:
  """``max`` (``operation`` MAX) or ``min`` of two bound values that are not both dimensions:
  integers as Python does it, arrays through the bridge's hooks."""
  if is_int_like(v1) and is_int_like(v2) and not (hooks.is_array(v1) or hooks.is_array(v2)):
    v1, v2 = operator.index(v1), operator.index(v2)
    return max(v1, v2) if operation == MAX else min(v1, v2)
  return hooks.array_max(v1, v2) if operation == MAX else hooks.array_min(v1, v2)
