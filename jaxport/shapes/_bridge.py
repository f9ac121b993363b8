"""Adapts jaxport's symbolic dimensions to jax's tracing and lowering.

The only module of ``jaxport.shapes`` that uses jax internals (through
``jaxport._jaxcompat``). Export and call use the functions below; their
signatures are the contract between the packages.

jax recognizes symbolic dimensions by duck typing (``dimension_as_value``,
``_evaluate``, ``max``/``min``, operators) plus a few registries, filled once
by :func:`_register_with_jax` when this module is imported, each write checked
by ``jaxport._jaxcompat._registries``: ``core.pytype_aval_mappings``, the weak
scalar types, the Python scalar types, the canonicalization handlers and
einsum's contraction-path handlers. The
primitives ``dim_as_value``, ``dimension_size`` and ``shape_assertion`` and
their MLIR lowerings are defined here too.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum

import jax
from jax import ShapeDtypeStruct, tree_util
from jaxport._jaxcompat._tracing import core, effects

from jaxport._jaxcompat._lowering import mlir

from jaxport._jaxcompat import _arg_specs as jax_arg_specs
from jaxport._jaxcompat import _registries as jax_registries
from jaxport._jaxcompat import _mlir as jax_mlir_compat
from jaxport.errors import ShapeError
from jaxport.shapes import _array_hooks, _expr, _solver
from jaxport.shapes._jaxerr import InconclusiveDimensionOperation
from jaxport.shapes._parser import parse_shape
from jaxport.shapes._scope import SymbolicScope

DimExpr = _expr.DimExpr


# ---------------------------------------------------------------- primitives

class ShapeAssertionEffect(effects.Effect):
  """The side effect of a ``shape_assertion``: it may abort the computation."""

  def __str__(self):
    return "ShapeAssertionEffect"


shape_assertion_effect = ShapeAssertionEffect()

shape_assertion_p = core.Primitive("shape_assertion")
shape_assertion_p.multiple_results = True
shape_assertion_p.def_effectful_abstract_eval(lambda *_, **__: ((), {shape_assertion_effect}))


def _shape_assertion_lowering(ctx: mlir.LoweringRuleContext, assert_what, *inputs,
                              error_message: str):
  op = mlir.custom_call(
      "shape_assertion", result_types=[], operands=[assert_what, *inputs],
      has_side_effect=True, api_version=2,
      extra_attributes=dict(error_message=mlir.ir.StringAttr.get(error_message)))
  return op.results


def shape_assertion(assert_what: Any, *inputs: Any, error_message: str) -> None:
  """Abort at run time unless ``assert_what``; ``{i}`` in the message shows ``inputs[i]``."""
  if len(inputs) > _solver.MAX_ERROR_MESSAGE_INPUTS:
    raise ShapeError(f"shape_assertion takes at most {_solver.MAX_ERROR_MESSAGE_INPUTS} "
                     f"message inputs, got {len(inputs)}")
  shape_assertion_p.bind(assert_what, *inputs, error_message=error_message)


dim_as_value_p = core.Primitive("dim_as_value")
dim_as_value_p.def_abstract_eval(lambda dim: core.dim_value_aval())


def _dim_as_value_impl(dim):
  raise ShapeError(f"The symbolic dimension '{dim}' has no concrete value outside of an "
                   "exported function: use it under jaxport.export (or jax.jit tracing for "
                   "export), where its value is computed from the argument shapes.")


dim_as_value_p.def_impl(_dim_as_value_impl)


def _dim_as_value_lowering(ctx: mlir.LoweringRuleContext, *, dim):
  res, = mlir.eval_dynamic_shape(ctx, (dim,))
  out_type = jax_mlir_compat.aval_to_ir_type(ctx, ctx.avals_out[0])
  if res.type != out_type:
    res = mlir.hlo.convert(out_type, res)
  return [res]


def dim_as_value(dim: Any) -> Any:
  """A dimension as a scalar integer jax value."""
  if isinstance(dim, DimExpr):
    return dim_as_value_p.bind(dim=dim)
  return operator.index(dim)


dimension_size_p = core.Primitive("dimension_size")
dimension_size_p.def_abstract_eval(lambda aval, **_: core.dim_value_aval())
dimension_size_p.def_impl(lambda arg, *, dimension: core.dim_constant(arg.shape[dimension]))


def _dimension_size_lowering(ctx: mlir.LoweringRuleContext, arg, *, dimension: int):
  size = mlir.hlo.get_dimension_size(arg, dimension)
  want = jax_mlir_compat.aval_to_ir_type(ctx, core.dim_value_aval())
  if size.type != want:
    size = mlir.hlo.convert(want, size)
  return [size]


# ---------------------------------------------------------------- registration

def _einsum_contract_path(*operands, **kwargs):
  """opt_einsum's contraction path, computed with every symbolic size replaced by 8.

  Only the schedule is taken from opt_einsum; the sizes are checked when the
  contractions are traced.
  """
  fakes = []
  for op in operands:
    if not hasattr(op, "dtype"):
      fakes.append(op)
      continue
    shape = tuple(d if core.is_constant_dim(d) else 8 for d in np.shape(op))
    fakes.append(np.broadcast_to(np.empty((), op.dtype), shape))
  fake_ops, contractions = opt_einsum.contract_path(*fakes, **kwargs)
  by_id = {id(f): op for f, op in zip(fakes, operands)}
  return [by_id[id(f)] if id(f) in by_id else f for f in fake_ops], contractions


def _register_with_jax() -> None:
  """Teach jax's tracing about DimExpr; called once, at import."""
  jax_registries.register_dimension_type(DimExpr, _einsum_contract_path)
  jax_registries.allow_effect_type(ShapeAssertionEffect)
  mlir.register_lowering(shape_assertion_p, _shape_assertion_lowering)
  mlir.register_lowering(dim_as_value_p, _dim_as_value_lowering)
  mlir.register_lowering(dimension_size_p, _dimension_size_lowering)

  _array_hooks.install_array_hooks(
      is_array=lambda x: isinstance(x, core.Tracer),
      as_array=dim_as_value,
      array_max=jax.lax.max, array_min=jax.lax.min)


_register_with_jax()


# ---------------------------------------------------------------- contract

def all_dim_vars(avals: Sequence[Any]) -> list[str]:
  """The dimension variable names appearing in ``avals``' shapes, sorted."""
  names: set[str] = set()
  for aval in avals:
    for d in getattr(aval, "shape", ()):
      get_vars = getattr(d, "_get_vars", None)
      if get_vars is not None:
        names.update(get_vars())
  return sorted(names)


@functools.lru_cache(maxsize=256)
def _solve(in_avals: tuple[Any, ...], in_tree: tree_util.PyTreeDef):
  """The solution of ``in_avals``' dimension variables over size variables, and the checks."""
  equations = []
  size_vars = []
  specs = []
  for arg_idx, aval in enumerate(in_avals):
    if not any(isinstance(d, DimExpr) for d in aval.shape):
      continue
    foreign = [d for d in aval.shape if not isinstance(d, (DimExpr, int)) and
               not core.is_constant_dim(d)]
    if foreign:
      raise ShapeError(f"{arg_descriptor(in_tree, arg_idx)} mixes jaxport symbolic dimensions "
                       f"with others ({type(foreign[0]).__name__}); build every symbolic "
                       "shape with jaxport.symbolic_shape or jaxport.symbolic_args_specs.")
    specs.append((arg_descriptor(in_tree, arg_idx), str(tuple(aval.shape))))
    for dim_idx, d in enumerate(aval.shape):
      if isinstance(d, DimExpr):
        name = arg_descriptor(in_tree, arg_idx, dim_idx)
        size_vars.append((name, arg_idx, dim_idx))
        equations.append(_solver.Equation(d, name))
  values, checks = _solver.solve(equations, specs)
  return values, tuple(checks), tuple(size_vars)


def compute_dim_vars_from_arg_shapes(in_avals: Sequence[Any], *args: Any,
                                     args_kwargs_tree: tree_util.PyTreeDef) -> list[Any]:
  """Traced inside the wrapped ``main``: solve every dimension variable from ``args``' sizes.

  Emits ``shape_assertion`` custom calls for the checks that cannot be decided
  at export. Returns one value per ``all_dim_vars(in_avals)``, in that order.
  """
  values, checks, size_vars = _solve(tuple(in_avals), args_kwargs_tree)
  env = {name: dimension_size_p.bind(args[arg_idx], dimension=dim_idx)
         for name, arg_idx, dim_idx in size_vars}
  ev = _solver.evaluator(env)
  for check in checks:
    left, right = ev(check.left), ev(check.right)
    if core.is_constant_dim(left) and core.is_constant_dim(right):
      if not check.holds(operator.index(left), operator.index(right)):
        raise check.error(ev)
      continue
    ok = jax.lax.eq(left, right) if check.cmp == "==" else jax.lax.ge(left, right)
    message, inputs = check.message_and_inputs(ev)
    shape_assertion(ok, *inputs, error_message=message)
  return [ev(values[v]) for v in all_dim_vars(in_avals)]


def solve_dim_vars_for_call(exported_in_avals: Sequence[Any], in_tree: tree_util.PyTreeDef,
                            actual_avals: Sequence[Any]) -> list[Any]:
  """At call time: the value of each of ``all_dim_vars(exported_in_avals)`` for ``actual_avals``.

  Raises a ``ShapeError`` naming the argument path when the actual shapes do
  not satisfy the specification or its constraints.
  """
  dim_vars = all_dim_vars(exported_in_avals)
  if not dim_vars:
    return []
  values, checks, size_vars = _solve(tuple(exported_in_avals), in_tree)
  env = {name: actual_avals[arg_idx].shape[dim_idx] for name, arg_idx, dim_idx in size_vars}
  ev = _solver.evaluator(env)
  for check in checks:
    check.check_statically(ev, InconclusiveDimensionOperation)
  return [ev(values[v]) for v in dim_vars]


class _Repeated(tuple):
  """The specs of one subtree's leaves; a pytree leaf, unlike a list or tuple."""


def args_specs(args: Any, shapes_specs: Any, scope: SymbolicScope) -> Any:
  """The pytree of ShapeDtypeStructs for :func:`jaxport.symbolic_args_specs`."""
  flat_args, args_tree = tree_util.tree_flatten(args)
  shapes_dtypes = [jax_arg_specs.shape_and_dtype(a) for a in flat_args]
  if isinstance(args, tuple) and isinstance(shapes_specs, list):
    shapes_specs = tuple(shapes_specs)
  try:
    per_subtree = tree_util.tree_map(
        lambda spec, sub: _Repeated([spec] * tree_util.tree_structure(sub).num_leaves),
        shapes_specs, args, is_leaf=lambda x: x is None)
    flat_specs = [spec for specs in tree_util.tree_leaves(per_subtree) for spec in specs]
  except ValueError as e:
    raise ShapeError("symbolic_args_specs: shapes_specs must be None, one string, or a pytree "
                     f"prefix of args: {e}") from None
  return args_tree.unflatten(
      ShapeDtypeStruct(parse_shape(spec, like=shape, scope=scope), dtype)
      for (shape, dtype), spec in zip(shapes_dtypes, flat_specs))


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
