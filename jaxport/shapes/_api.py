"""Public entry points for symbolic shapes: ``symbolic_shape``, ``symbolic_args_specs``,
``SymbolicScope`` and ``is_symbolic_dim``.

Importing this module connects jaxport's dimensions to jax (see ``_bridge``),
so the shapes it returns can be traced by ``jax.jit``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from jaxport.errors import ShapeError, ShapeTypeError
from jaxport.shapes import _bridge, _decision
from jaxport.shapes._expr import DimExpr, DimSize
from jaxport.shapes._parser import parse_shape
from jaxport.shapes._scope import SymbolicScope

__all__ = ["SymbolicScope", "is_symbolic_dim", "symbolic_args_specs", "symbolic_dim_bounds",
           "symbolic_shape"]


def is_symbolic_dim(p: Any) -> bool:
  """Whether ``p`` is a jaxport symbolic dimension (not an int)."""
  return isinstance(p, DimExpr)


def symbolic_dim_bounds(dimension: Any) -> tuple[float, float]:
  """Inclusive bounds ``(lb, ub)`` that can be proved for a dimension (an int or a symbolic one).

  Bounds are conservative: ``-inf``/``inf`` mean no finite bound was found,
  not that there is none. The implicit facts (every variable is at least 1)
  and the scope's explicit constraints are used. As ``jax.export``'s (jax 0.12).
  """
  if isinstance(dimension, DimExpr):
    return _decision.bounds(dimension, _decision.BEST)
  if isinstance(dimension, bool) or not hasattr(dimension, "__index__"):
    raise ShapeTypeError(
        f"symbolic_dim_bounds takes an int or a symbolic dimension, got "
        f"{type(dimension).__name__} {dimension!r}. Build symbolic dimensions with "
        "jaxport.symbolic_shape.")
  value = operator.index(dimension)
  return value, value


def _scope_for(constraints: Sequence[str], scope: SymbolicScope | None) -> SymbolicScope:
  if scope is None:
    return SymbolicScope(constraints)
  if constraints:
    raise ShapeError("Cannot specify both a `scope` and `constraints`: the constraints of a "
                     "scope are fixed when it is created; pass them to SymbolicScope(...).")
  if not isinstance(scope, SymbolicScope):
    raise ShapeError(f"scope must be a jaxport.SymbolicScope, got {type(scope).__name__}")
  return scope


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[DimSize, ...]:
  """The shape described by ``shape_spec``, e.g. ``"b, 2*h + 1"``, as ints and symbolic dims.

  ``None`` stands for ``"..."``. ``constraints`` (``"a >= b"``, ``"mod(a, 4) == 0"``)
  create a new scope; pass ``scope`` instead to share one between shapes. ``like``
  supplies the sizes for the placeholders ``_`` and ``...``.
  """
  if like is not None and (isinstance(like, (str, bytes)) or not isinstance(like, Sequence)):
    raise ShapeError(
        f"like must be None or a sequence of ints and Nones (a shape such as x.shape), got "
        f"{type(like).__name__} {like!r} for the symbolic shape {shape_spec!r}. Pass e.g. "
        "like=(2, None, 3).")
  return parse_shape(shape_spec, like=like, scope=_scope_for(constraints, scope))


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None) -> Any:
  """ShapeDtypeStructs for ``args`` with shapes from ``shapes_specs``, all in one scope.

  ``shapes_specs`` is None, one spec string for every argument, or a pytree
  prefix of ``args``; placeholders take their sizes from the arguments.
  """
  return _bridge.args_specs(args, shapes_specs, _scope_for(constraints, scope))
