"""The replay contract: what recording and replaying a golden entry mean, written once.

An entry stores flat numeric leaves. Recording exports a function, serializes
it, reads the blob back and calls it on the case's inputs; the outputs are the
entry's expected results. Replaying reads the blob and calls it on the stored
inputs. When the blob carries a VJP, both also call the VJP with one cotangent
per output (ones for inexact outputs, ``float0`` zeros for the others) and
append its outputs, so the blob alone defines what is compared. An integer, bool
or PRNG key input has no cotangent (the VJP gives ``float0`` for it, which holds
nothing): its VJP output is left out.

Two kinds of process load this module: jaxport's harness worker (an ordinary
import) and the scripts that record and replay inside an older jax release's
virtual environment, where jaxport is not installed (they load this file by its
path). It therefore imports only numpy and jax's public API as it stands from
jax 0.4.26 on, and takes the export module of the process at hand as an argument
instead of importing one.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

# ``place(exported, leaves) -> (placed leaves, context to call in)``: puts stored inputs
# where a multi-device record wants them. The default places nothing.
Placement = Callable[[Any, list], "tuple[list, contextlib.AbstractContextManager]"]
# ``call(exported) -> function``: the callable form of an Exported.
Caller = Callable[[Any], Callable[..., Any]]


def is_key(dtype: Any) -> bool:
  """Whether ``dtype`` is a typed PRNG key dtype."""
  return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def storable(x: Any) -> np.ndarray:
  """``x`` as a numeric numpy array (PRNG keys as their raw key data)."""
  if is_key(getattr(x, "dtype", np.float32)):
    return np.asarray(jax.random.key_data(x))
  return np.asarray(x)


def callable_leaves(leaves: Sequence[np.ndarray], in_avals: Sequence[Any]) -> list[Any]:
  """Stored leaves turned back into arguments (raw key data wrapped into typed keys)."""
  return [jax.random.wrap_key_data(leaf, impl=aval.dtype._impl) if is_key(aval.dtype) else leaf
          for leaf, aval in zip(leaves, in_avals)]


def has_cotangent(dtype: Any) -> bool:
  """Whether a value of ``dtype`` has a cotangent that holds numbers: inexact types do;
  integers, bools and PRNG keys get ``float0``, which holds nothing."""
  return not is_key(dtype) and bool(jax.dtypes.issubdtype(dtype, np.inexact))


def cotangent(out: Any) -> np.ndarray:
  """The cotangent the contract feeds the VJP for the output ``out``."""
  dtype = out.dtype
  if not has_cotangent(dtype):
    return np.zeros(np.shape(out), dtype=jax.dtypes.float0)
  return np.ones(np.shape(out), dtype=dtype)


def with_cotangent(grads: Sequence[Any], in_avals: Sequence[Any]) -> list[Any]:
  """The VJP's outputs ``grads`` (one per input of ``in_avals``) of the inputs that have a
  cotangent (:func:`has_cotangent`); the others are ``float0``, stored as nothing."""
  if len(grads) != len(in_avals):
    raise ValueError(f"the VJP gives {len(grads)} outputs for {len(in_avals)} inputs")
  return [g for g, aval in zip(grads, in_avals) if has_cotangent(aval.dtype)]


def _no_placement(exp: Any, leaves: list) -> tuple[list, contextlib.AbstractContextManager]:
  return leaves, contextlib.nullcontext()


def _method_call(exp: Any) -> Callable[..., Any]:
  return exp.call


def run_exported_arrays(exp: Any, leaves: Sequence[np.ndarray], *, place: Placement | None = None,
                        call: Caller | None = None) -> list[Any]:
  """Call ``exp`` on the flat stored inputs, then its VJP if it has one; the flat outputs
(the VJP's of the inputs that have a cotangent: :func:`with_cotangent`).

  ``exp`` is any Exported (jaxport's or a jax release's). ``place`` puts the
  arguments of the call and of the VJP call where they must be (default:
  nowhere in particular); ``call`` turns an Exported into a function (default:
  its ``call`` method, which releases before 0.4.30 lack).
  """
  place = place or _no_placement
  call = call or _method_call
  if len(leaves) != len(exp.in_avals):
    raise ValueError(f"{len(leaves)} stored inputs but the Exported takes {len(exp.in_avals)}")
  args_flat = callable_leaves(leaves, exp.in_avals)
  placed, context = place(exp, args_flat)
  args, kwargs = exp.in_tree.unflatten(placed)
  with context:
    outs = list(jax.tree_util.tree_leaves(call(exp)(*args, **kwargs)))
  if exp.has_vjp():
    vjp = exp.vjp()
    vjp_args, vjp_context = place(vjp, [*args_flat, *(cotangent(o) for o in outs)])
    with vjp_context:
      outs += with_cotangent(jax.tree_util.tree_leaves(call(vjp)(*vjp_args)), exp.in_avals)
  return outs


def run_exported(exp: Any, leaves: Sequence[np.ndarray], *, place: Placement | None = None,
                 call: Caller | None = None) -> list[np.ndarray]:
  """:func:`run_exported_arrays`, each output as a storable numpy array."""
  return [storable(o) for o in run_exported_arrays(exp, leaves, place=place, call=call)]


@dataclasses.dataclass(frozen=True)
class Exporter:
  """How the process at hand exports: ``export(jitted, platforms=, disabled_checks=)`` returning
  a function of argument specs, and ``symbolic_args_specs(args, polymorphic_shapes,
  constraints)`` for shape-polymorphic arguments."""

  export: Callable[..., Callable[..., Any]]
  symbolic_args_specs: Callable[[Any, Any, Sequence[str]], Any]


def _spec(x: Any) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(np.shape(x), x.dtype)


def export_function(exporter: Exporter, fun: Callable, args: tuple, kwargs: dict, *,
                    polymorphic_shapes: Sequence[str] | None = None,
                    constraints: Sequence[str] = (), platforms: Sequence[str] | None = None,
                    disabled_checks: Sequence[Any] = (),
                    jit_kwargs: dict[str, Any] | None = None) -> Any:
  """Export ``jax.jit(fun)`` for the shapes of ``args``/``kwargs`` (symbolic where
  ``polymorphic_shapes`` says) with ``exporter``; the Exported."""
  if polymorphic_shapes is not None:
    arg_specs = exporter.symbolic_args_specs(args, polymorphic_shapes, tuple(constraints))
  else:
    arg_specs = jax.tree_util.tree_map(_spec, args)
  kwarg_specs = jax.tree_util.tree_map(_spec, kwargs)
  exported = exporter.export(jax.jit(fun, **(jit_kwargs or {})), platforms=platforms,
                             disabled_checks=tuple(disabled_checks))
  return exported(*arg_specs, **kwarg_specs)


class ReleaseExport:
  """A jax release's export module (``jax.export``; ``jax.experimental.export`` before
  0.4.30) behind the spellings every release the harness drives understands."""

  def __init__(self, module: Any):
    self.module = module

  @property
  def exporter(self) -> Exporter:
    return Exporter(self._export, self._symbolic_args_specs)

  def _export(self, jitted: Callable, *, platforms: Sequence[str] | None,
              disabled_checks: Sequence[Any]) -> Callable[..., Any]:
    kwargs: dict[str, Any] = {"disabled_checks": list(disabled_checks)} if disabled_checks else {}
    if platforms is None:
      return self.module.export(jitted, **kwargs)
    try:
      return self.module.export(jitted, platforms=tuple(platforms), **kwargs)
    except TypeError:  # releases before 0.4.30 name it lowering_platforms
      return self.module.export(jitted, lowering_platforms=tuple(platforms), **kwargs)

  def _symbolic_args_specs(self, args: Any, polymorphic_shapes: Any,
                           constraints: Sequence[str]) -> Any:
    extra = {"constraints": list(constraints)} if constraints else {}
    if hasattr(self.module, "symbolic_args_specs"):
      return self.module.symbolic_args_specs(args, list(polymorphic_shapes), **extra)
    if constraints:
      raise ValueError("this jax release cannot export with symbolic constraints")
    return [jax.ShapeDtypeStruct(self.module.symbolic_shape(spec), x.dtype)
            for x, spec in zip(args, polymorphic_shapes)]

  def serialize(self, exp: Any, vjp_order: int) -> bytes:
    """The blob of ``exp`` with ``vjp_order`` levels of VJP."""
    if hasattr(exp, "serialize"):
      return bytes(exp.serialize(vjp_order=vjp_order))
    return bytes(self.module.serialize(exp, vjp_order=vjp_order))

  def deserialize(self, blob: bytes) -> Any:
    """The Exported read back from ``blob`` by this release."""
    return self.module.deserialize(bytearray(blob))

  def call(self, exp: Any) -> Callable[..., Any]:
    """``exp`` as a function (the ``Caller`` of :func:`run_exported_arrays`)."""
    return exp.call if hasattr(exp, "call") else self.module.call(exp)
