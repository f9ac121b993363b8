"""``vmap`` of a called Exported: the batching rule of ``call_exported``.

An exported module has fixed ranks, so a batch dimension cannot simply be
added to it. Two ways to batch, chosen by ``jaxport.call(exp, vmap_method=...)``:

``"sequential"`` (the default)
    A ``lax.map`` over the batch: the module runs once per batch element inside
    a loop. Correct for every export; the cost is one sequential call per
    element (no parallelism across the batch beyond what each call has).

``"fold_leading_dim"``
    The user declares that the exported function maps independently over the
    leading dimension of every argument and result, which is one symbolic
    dimension variable ``n``. A batch of ``B`` then folds into it: arguments of
    shape ``(B, n, ...)`` become ``(B * n, ...)``, one call, results reshaped
    back. This cannot be inferred from the module: ``sum(x, axis=0)`` is
    polymorphic in ``n`` yet does not map over it, and folding would sum
    across batch elements. :func:`check_foldable` refuses an export whose
    shapes do not allow folding.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax.interpreters import batching

from jaxport.calling import _primitive
from jaxport.errors import CallError

if TYPE_CHECKING:
  from jaxport.export._exported import Exported

# What a batching rule gets as the dimension of an argument without a batch axis.
_NOT_MAPPED = None


class VmapMethod(enum.Enum):
  """How ``vmap`` batches a called Exported (the ``vmap_method`` argument of ``jaxport.call``)."""
  SEQUENTIAL = "sequential"
  FOLD_LEADING_DIM = "fold_leading_dim"


def parse_vmap_method(value: "str | VmapMethod") -> VmapMethod:
  """The method named by ``value``; a CallError listing the valid names otherwise."""
  if isinstance(value, VmapMethod):
    return value
  try:
    return VmapMethod(value)
  except ValueError:
    valid = ", ".join(repr(m.value) for m in VmapMethod)
    raise CallError(f"vmap_method={value!r} is not one of {valid}.") from None


class _FoldingCallee(_primitive._Callee):
  """The primitive's ``exported`` parameter when the caller asked for folding into the leading dimension."""

  __slots__ = ()

  def __hash__(self) -> int:
    return hash((id(self.exported), VmapMethod.FOLD_LEADING_DIM))

  def __eq__(self, other) -> bool:
    return isinstance(other, _FoldingCallee) and other.exported is self.exported


def callee(exported: "Exported", method: VmapMethod) -> _primitive._Callee:
  """The primitive parameter for ``exported`` carrying the batching ``method``."""
  if method is VmapMethod.FOLD_LEADING_DIM:
    return _FoldingCallee(exported)
  return _primitive._Callee(exported)


def _mentions(dim: Any, name: str) -> bool:
  return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", str(dim)) is not None


def check_foldable(exported: "Exported") -> str:
  """The leading dimension variable every argument and result shares; a CallError saying why not.

  Folding needs: every argument and result has rank >= 1 and the same single
  dimension variable as its leading dimension, and that variable appears in no
  other dimension.
  """
  fun = getattr(exported, "fun_name", "?")
  fix = ("Call without vmap_method (the default 'sequential' maps over the batch and is correct "
         "for every export), or export the function with a symbolic leading dimension, e.g. "
         "jaxport.symbolic_shape('n, ...').")
  avals = [("args", i, a) for i, a in enumerate(exported.in_avals)] + \
          [("results", i, a) for i, a in enumerate(exported.out_avals)]
  if not exported.in_avals:
    raise CallError(f"vmap_method='fold_leading_dim' needs arguments, but '{fun}' takes none. {fix}")
  leading = None
  for where, i, aval in avals:
    if not aval.shape:
      raise CallError(f"vmap_method='fold_leading_dim' needs a leading dimension, but flat {where}[{i}] "
                      f"of '{fun}' is a scalar of type {aval.str_short()}. {fix}")
    first = str(aval.shape[0])
    if not re.fullmatch(r"[A-Za-z_]\w*", first):
      raise CallError(f"vmap_method='fold_leading_dim' needs the export to be polymorphic in its leading "
                      f"dimension, but flat {where}[{i}] of '{fun}' has shape {aval.str_short()}, whose "
                      f"leading dimension {first} is not a dimension variable. {fix}")
    if leading is None:
      leading = first
    elif first != leading:
      raise CallError(f"vmap_method='fold_leading_dim' needs one leading dimension variable shared by "
                      f"all arguments and results, but '{fun}' has {leading} and {first} (flat "
                      f"{where}[{i}], {aval.str_short()}). {fix}")
  for where, i, aval in avals:
    if any(_mentions(d, leading) for d in aval.shape[1:]):
      raise CallError(f"vmap_method='fold_leading_dim' cannot fold into {leading}: flat {where}[{i}] "
                      f"of '{fun}' ({aval.str_short()}) uses it in another dimension too. {fix}")
  return leading


def _batch_size(args: Sequence[Any], dims: Sequence[Any]) -> Any:
  return next(a.shape[d] for a, d in zip(args, dims) if d is not _NOT_MAPPED)


def _sequential(args, dims, params):
  """One call per batch element, in a ``lax.map`` loop."""
  mapped = [i for i, d in enumerate(dims) if d is not _NOT_MAPPED]
  xs = [jnp.moveaxis(args[i], dims[i], 0) for i in mapped]

  def one(elements):
    full = list(args)
    for i, x in zip(mapped, elements):
      full[i] = x
    return tuple(_primitive.call_exported_p.bind(*full, **params))

  outs = jax.lax.map(one, xs)
  return list(outs), [0] * len(outs)


def _fold(args, dims, params):
  """Fold the batch into the leading dimension: one call on ``(B * n, ...)``."""
  size = _batch_size(args, dims)
  folded = []
  for a, d in zip(args, dims):
    a = (jnp.broadcast_to(a, (size, *a.shape)) if d is _NOT_MAPPED
         else jnp.moveaxis(a, d, 0))
    folded.append(a.reshape((size * a.shape[1], *a.shape[2:])))
  outs = _primitive.call_exported_p.bind(*folded, **params)
  return [o.reshape((size, o.shape[0] // size, *o.shape[1:])) for o in outs], [0] * len(outs)


def _batch_rule(args, dims, **params):
  if isinstance(params["exported"], _FoldingCallee):
    return _fold(args, dims, params)
  return _sequential(args, dims, params)


def _register() -> None:
  batching.primitive_batchers[_primitive.call_exported_p] = _batch_rule


_register()
