"""Calling an Exported: pytree checks and the custom VJP around ``call_exported``.

Uses only jax's public API; the primitive and its rules live in
``jaxport.calling._primitive``. The record is duck-typed, so a
``jax.export.Exported`` works as well as a ``jaxport.Exported``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
from jax import tree_util

from jaxport._jaxcompat import _trees as jax_trees
from jaxport.calling import _batching, _primitive
from jaxport.errors import CallError
from jaxport.shapes import _bridge

if TYPE_CHECKING:
  from jaxport.export._exported import Exported

_RECORD_ATTRS = ("in_tree", "in_avals", "out_tree", "out_avals", "mlir_module_serialized",
                 "platforms", "module_kept_var_idx", "vjp")


def call(exported: "Exported", *,
         vmap_method: "str | _batching.VmapMethod" = "sequential") -> Callable[..., Any]:
  """A function taking the arguments ``exported`` was exported with and returning its results.

  It checks the pytree structure, then binds the ``call_exported`` primitive,
  which checks shapes and dtypes. It works eagerly, under ``jax.jit``, inside
  another export, under ``jax.grad`` (through ``exported.vjp()``) and under
  ``jax.vmap``: by default as a loop over the batch; with
  ``vmap_method="fold_leading_dim"`` by folding the batch into the leading
  dimension, which the caller declares the function maps over independently
  (see ``docs/calling.md``).
  """
  method = _batching.parse_vmap_method(vmap_method)
  missing = [a for a in _RECORD_ATTRS if not hasattr(exported, a)]
  if missing:
    raise CallError(
        "The exported argument must be an export.Exported. "
        f"Found {exported}.\n"
        f"jaxport.call takes an Exported from jaxport.export, jaxport.deserialize or jax.export; "
        f"a {type(exported).__name__} lacks {', '.join(missing)}. Export the function first: "
        "jaxport.export(jax.jit(f))(*args).")
  if method is _batching.VmapMethod.FOLD_LEADING_DIM:
    _batching.check_foldable(exported)
  param = _batching.callee(exported, method)

  @jax.custom_vjp
  def call_flat(*args_flat):
    return _primitive.call_exported_p.bind(*args_flat, exported=param)

  def call_flat_fwd(*args_flat):
    return call_flat(*args_flat), args_flat

  def call_flat_bwd(args_flat, cts_flat):
    exported_vjp = exported.vjp()
    expected = exported_vjp.in_avals[len(args_flat):]
    cts = [_as_float0(ct) if aval.dtype == jax.dtypes.float0 else ct
           for ct, aval in zip(cts_flat, expected)]
    return tuple(call(exported_vjp)(*args_flat, *cts))

  call_flat.defvjp(call_flat_fwd, call_flat_bwd)

  def call_exported(*args, **kwargs):
    args_flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
      raise _tree_mismatch(exported, in_tree)
    return exported.out_tree.unflatten(call_flat(*args_flat))

  return call_exported


def _as_float0(ct: Any) -> Any:
  """Zeros of dtype float0 shaped like ``ct``: the cotangent an exported VJP takes for an integer output."""
  if getattr(ct, "dtype", None) == jax.dtypes.float0:
    return ct
  return np.zeros(np.shape(ct), dtype=jax.dtypes.float0)


def _bullets(differences) -> str:
  return "\n".join(
      f"   - {_bridge.args_kwargs_path_to_str(path) if path else '(args, kwargs)'} "
      f"is a {got} in the invocation and a {want} when exported, so {why}.\n"
      for path, got, want, why in differences)


def _tree_mismatch(exported: "Exported", in_tree: tree_util.PyTreeDef) -> CallError:
  """jax's message (with jax's own wording of the differences), then jaxport's where they differ."""
  ours = _bullets(_differences((), in_tree, exported.in_tree))
  theirs = jax_trees.equality_errors(in_tree, exported.in_tree)
  details = ours if theirs is None else _bullets(theirs)
  if theirs is not None and ours != details:
    details += f"\nIn detail:\n{ours}"
  return CallError(
      "The invocation args and kwargs must have the same pytree structure as when "
      f"the function '{exported.fun_name}' was exported, but they have the "
      f"following structural differences:\n{details}")


def _node_kind(t: tree_util.PyTreeDef) -> str:
  data = t.node_data()
  if data is None:
    return "pytree leaf"
  node_type, _ = data
  if node_type in (tuple, list):
    return f"{node_type.__name__} of length {len(t.children())}"
  if node_type is dict:
    return f"dict with keys {sorted(data[1], key=repr)}"
  return str(node_type)


def _child_paths(t: tree_util.PyTreeDef) -> list[tree_util.KeyPath]:
  """The key of each child of the root of ``t``, as a one-entry key path."""
  node = t.unflatten([object() for _ in range(t.num_leaves)])
  pairs, _ = tree_util.tree_flatten_with_path(node, is_leaf=lambda x: x is not node)
  return [path for path, _ in pairs]


def _differences(path: tree_util.KeyPath, got: tree_util.PyTreeDef,
                 want: tree_util.PyTreeDef) -> Iterator[tuple[tree_util.KeyPath, str, str, str]]:
  """Where and how the structure ``got`` differs from ``want``, outermost first."""
  if got == want:
    return
  got_data, want_data = got.node_data(), want.node_data()
  if got_data is None or want_data is None or got_data[0] is not want_data[0]:
    yield path, _node_kind(got), _node_kind(want), "their Python types differ"
    return
  if got_data[0] is dict and got_data[1] != want_data[1]:
    missing = sorted(set(want_data[1]) - set(got_data[1]), key=repr)
    extra = sorted(set(got_data[1]) - set(want_data[1]), key=repr)
    yield (path, _node_kind(got), _node_kind(want),
           f"the keys differ (missing {missing}, unexpected {extra})")
    return
  got_children, want_children = got.children(), want.children()
  if len(got_children) != len(want_children):
    why = ("the lengths do not match" if issubclass(got_data[0], (list, tuple))
           else "the numbers of children do not match")
    yield path, _node_kind(got), _node_kind(want), why
    return
  if got_data[1] != want_data[1]:
    yield (path, f"{_node_kind(got)} with pytree metadata {got_data[1]}",
           f"{_node_kind(want)} with pytree metadata {want_data[1]}",
           "the pytree node metadata does not match")
    return
  for (key,), g, w in zip(_child_paths(want), got_children, want_children):
    yield from _differences((*path, key), g, w)
