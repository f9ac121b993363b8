"""Adapts jaxport's symbolic dimensions to jax's tracing and lowering.

The only module of ``jaxport.shapes`` that imports jax. Export and call use the
functions below; their signatures are the contract between the packages.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from jax import tree_util


def all_dim_vars(avals: Sequence[Any]) -> list[str]:
  """The dimension variable names appearing in ``avals``' shapes, sorted."""
  names: set[str] = set()
  for aval in avals:
    for d in getattr(aval, "shape", ()):
      get_vars = getattr(d, "_get_vars", None)
      if get_vars is not None:
        names.update(get_vars())
  return sorted(names)


def compute_dim_vars_from_arg_shapes(in_avals: Sequence[Any], *args: Any,
                                     args_kwargs_tree: tree_util.PyTreeDef) -> list[Any]:
  """Traced inside the wrapped ``main``: solve every dimension variable from ``args``' sizes.

  Emits ``shape_assertion`` custom calls for the checks that cannot be decided
  at export. Returns one value per ``all_dim_vars(in_avals)``, in that order.
  """
  raise NotImplementedError("symbolic shapes are being built")


def solve_dim_vars_for_call(exported_in_avals: Sequence[Any], in_tree: tree_util.PyTreeDef,
                            actual_avals: Sequence[Any]) -> list[Any]:
  """At call time: the value of each of ``all_dim_vars(exported_in_avals)`` for ``actual_avals``.

  Raises a ``ShapeError`` naming the argument path when the actual shapes do
  not satisfy the specification or its constraints.
  """
  if not all_dim_vars(exported_in_avals):
    return []
  raise NotImplementedError("symbolic shapes are being built")


def args_kwargs_path_to_str(path: tree_util.KeyPath) -> str:
  """``args[0]['w']`` or ``kwargs['b']`` for a key path into the pair ``(args, kwargs)``."""
  head, rest = path[0], path[1:]
  root = "args" if head == tree_util.SequenceKey(0) else "kwargs"
  return root + tree_util.keystr(rest)


@functools.lru_cache(maxsize=256)
def _flat_arg_paths(in_tree: tree_util.PyTreeDef) -> tuple[str, ...]:
  placeholder = in_tree.unflatten(range(in_tree.num_leaves))
  return tuple(args_kwargs_path_to_str(path)
               for path, _ in tree_util.tree_flatten_with_path(placeholder)[0])


def arg_descriptor(in_tree: tree_util.PyTreeDef, arg_idx: int, dim_idx: int | None = None) -> str:
  """``args[0]``, ``kwargs['b'].shape[1]``: where a flat argument sits in ``(args, kwargs)``."""
  where = _flat_arg_paths(in_tree)[arg_idx]
  return where if dim_idx is None else f"{where}.shape[{dim_idx}]"
