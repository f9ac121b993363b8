"""Public entry points for symbolic shapes: ``symbolic_shape``, ``symbolic_args_specs``,
``SymbolicScope`` and ``is_symbolic_dim``.

Importing this module connects jaxport's dimensions to jax (see ``_bridge``),
so the shapes it returns can be traced by ``jax.jit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxport.errors import ShapeError
from jaxport.shapes import _bridge
from jaxport.shapes._expr import DimExpr, DimSize
from jaxport.shapes._parser import parse_shape
from jaxport.shapes._scope import SymbolicScope

__all__ = ["SymbolicScope", "is_symbolic_dim", "symbolic_args_specs", "symbolic_shape"]


def is_symbolic_dim(p: Any) -> bool:
  """Whether ``p`` is a jaxport symbolic dimension (not an int)."""
  return isinstance(p, DimExpr)


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
