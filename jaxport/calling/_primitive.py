"""The ``call_exported`` primitive: checks, abstract evaluation, eager impl and lowering.

The only module of ``jaxport.calling`` that touches jax internals. The record
is duck-typed (any object with the attributes of ``jax.export.Exported``
works), so this module never imports ``jaxport.export._exported``.

Lowering inlines the callee: its serialized module is parsed into the caller's
MLIR context, its symbols are renamed to avoid clashes and made private, and
its public ``main`` is called with the callee's platform index (when it was
exported for several platforms), one token per ordered effect, and the array
arguments it kept. ``main`` computes the dimension variables itself from the
argument shapes, so none are passed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxport._jaxcompat._lowering import func_dialect, hlo, ir, mlir, passmanager, sdy
from jaxport._jaxcompat._shardings import mesh_lib, sharding_impls
from jaxport._jaxcompat._tracing import config, core, dispatch, dtypes, source_info_util

from jaxport._jaxcompat import _lapack as jax_lapack
from jaxport._jaxcompat import _mlir as jax_mlir_compat
from jaxport.calling import _signature
from jaxport.errors import CallError, DeserializationError
from jaxport.export import _mlir as export_mlir
from jaxport.shapes import _api as shapes_api
from jaxport.shapes import _bridge
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._platforms import any_is_host

if TYPE_CHECKING:
  from jaxport.export._exported import Exported

# Source locations in lowered modules should name the user's code, not ours.
source_info_util.register_exclusion(os.path.dirname(__file__))

call_exported_p = core.Primitive("call_exported")
call_exported_p.multiple_results = True

_MESH_SYMBOLS = ("mesh", "empty_mesh", "maximal_mesh_0")
# Callee symbols renamed on inlining whether or not they clash, to these bases.
_ALWAYS_RENAMED = {"main": "{main}", "_wrapped_jax_export_main": "{main}_wrapped"}


class _Callee:
  """The primitive's ``exported`` parameter: the record, compared by identity.

  Parameters must be hashable and cheap to compare; hashing a record's fields
  would hash its module bytes and needs every field to be hashable. Other
  attributes read through to the record: jax itself reads
  ``params["exported"].out_avals`` of any ``call_exported`` equation to learn
  the memory spaces of its results.
  """

  __slots__ = ("exported",)

  def __init__(self, exported: "Exported"):
    self.exported = exported

  def __hash__(self) -> int:
    return id(self.exported)

  def __eq__(self, other) -> bool:
    return isinstance(other, _Callee) and other.exported is self.exported

  def __getattr__(self, name: str) -> Any:
    if name == "exported":  # the slot is unset (copy, unpickling): do not recurse
      raise AttributeError(name)
    return getattr(self.exported, name)

  def __repr__(self) -> str:
    return str(self.exported)


def bind(exported: "Exported", args_flat: Sequence[Any]) -> list[Any]:
  """Apply ``call_exported`` to the flat arguments; returns the flat results."""
  return call_exported_p.bind(*args_flat, exported=_Callee(exported))


def callee_of(params: dict[str, Any]) -> "Exported":
  """The record bound in a ``call_exported`` equation's parameters."""
  return params["exported"].exported


# ---------------------------------------------------------------- abstract eval

def _dtype_name(dtype: Any) -> str:
  """``float32``, ``key<fry>``; ``float0`` rather than numpy's ``[('float0', 'V')]``."""
  return "float0" if dtype == dtypes.float0 else str(dtype)


def _check_arg_avals(exported: "Exported", in_avals: Sequence[Any]) -> None:
  """Refuse actual arguments whose rank, dtype or constant dimensions differ."""
  if len(in_avals) != len(exported.in_avals):
    raise CallError(
        f"Function '{exported.fun_name}' takes {len(exported.in_avals)} flat "
        f"arguments but call_exported was bound with {len(in_avals)}. Call it "
        "through jaxport.call(exported), which checks the pytree structure.")
  for arg_idx, (exp_aval, aval) in enumerate(zip(exported.in_avals, in_avals)):
    if not isinstance(aval, core.ShapedArray):
      raise CallError(
          f"Expected ShapedArray but got: {aval} for "
          f"{_bridge.arg_descriptor(exported.in_tree, arg_idx)}")
    if len(exp_aval.shape) != len(aval.shape):
      raise CallError(
          f"Rank mismatch for {_bridge.arg_descriptor(exported.in_tree, arg_idx)}: "
          f"expected {exp_aval.shape} and called with {aval.shape}")
    if exp_aval.dtype != aval.dtype:
      hint = ""
      if exp_aval.dtype == dtypes.float0:
        hint = (". This is the cotangent of an integer or boolean value: pass "
                f"np.zeros({tuple(aval.shape)}, jax.dtypes.float0)")
      raise CallError(
          f"Dtype mismatch for {_bridge.arg_descriptor(exported.in_tree, arg_idx)}: "
          f"expected {_dtype_name(exp_aval.dtype)} and called with "
          f"{_dtype_name(aval.dtype)}{hint}")
    for dim_idx, exp_d in enumerate(exp_aval.shape):
      if not core.is_constant_dim(exp_d):
        continue
      d = aval.shape[dim_idx]
      if not core.is_constant_dim(d) or exp_d != d:
        raise CallError(
            f"Shape mismatch for "
            f"{_bridge.arg_descriptor(exported.in_tree, arg_idx, dim_idx)} "
            "(expected same constant): "
            f"expected {exp_aval.shape} and called with {aval.shape}")


def _out_aval(exported: "Exported", idx: int, dim_vars: Sequence[str],
              dim_values: Sequence[Any]) -> core.ShapedArray:
  out = exported.out_avals[idx]
  shape = core.evaluate_shape(out.shape, dim_vars, *dim_values)
  aval = core.ShapedArray(shape, dtype=out.dtype, weak_type=out.weak_type,
                          memory_space=out.memory_space)
  sharding = jax_envelope.out_named_shardings(exported)[idx]
  return core.update_aval_with_sharding(aval, sharding)


def _with_own_dims(avals: Sequence[Any]) -> Sequence[Any]:
  """``avals`` with symbolic dimensions of other libraries (jax's own) re-parsed as jaxport's.

  A record made by ``jax.export`` carries jax's dimension expressions; the
  solver understands jaxport's. Both print in the same grammar, so printing and
  parsing in one shared scope translates them. Like jax's serialization, this
  keeps the shapes but not the scope's explicit constraints.
  """
  def foreign(d):
    return not core.is_constant_dim(d) and not shapes_api.is_symbolic_dim(d)
  if not any(foreign(d) for a in avals for d in a.shape):
    return avals
  scope = shapes_api.SymbolicScope()
  return [a.update(shape=shapes_api.symbolic_shape(
              ", ".join(str(d) for d in a.shape), scope=scope)) if a.shape else a
          for a in avals]


def _abstract_eval(*in_avals: core.AbstractValue, exported: _Callee):
  exp = exported.exported
  _check_arg_avals(exp, in_avals)
  dim_vars = _bridge.all_dim_vars(exp.in_avals)
  dim_values = (_bridge.solve_dim_vars_for_call(_with_own_dims(exp.in_avals), exp.in_tree,
                                                in_avals)
                if dim_vars else [])
  out_avals = tuple(_out_aval(exp, i, dim_vars, dim_values)
                    for i in range(len(exp.out_avals)))
  return out_avals, set(exp.ordered_effects) | set(exp.unordered_effects)


call_exported_p.def_effectful_abstract_eval(_abstract_eval)


def _impl(*args, exported: _Callee):
  return dispatch.apply_primitive(call_exported_p, *args, exported=exported)


call_exported_p.def_impl(_impl)


# ---------------------------------------------------------------- lowering

def _physical(aval):
  if dtypes.issubdtype(aval.dtype, dtypes.extended):
    return core.physical_aval(aval)
  return aval


def _caller_num_devices(ctx: mlir.LoweringRuleContext) -> int:
  axis_context = ctx.module_context.axis_context
  if isinstance(axis_context, sharding_impls.ShardingContext):
    return axis_context.num_devices
  if isinstance(axis_context, sharding_impls.SPMDAxisContext):
    return axis_context.mesh.size
  raise CallError(
      f"Calling an Exported is not supported under the axis context "
      f"{type(axis_context).__name__}; call it under jax.jit or shard_map instead.")


def _check_devices(ctx: mlir.LoweringRuleContext, exported: "Exported") -> None:
  if exported.nr_devices == 1:
    return
  num_devices = _caller_num_devices(ctx)
  if num_devices != exported.nr_devices:
    raise CallError(
        f"Function {exported.fun_name} was exported for "
        f"{exported.nr_devices} devices and is called in a context with "
        f"{num_devices} devices, which is not allowed.")


def _platform_check_disabled(exported: "Exported") -> bool:
  # Both jaxport's and jax's DisabledSafetyCheck print as their wire form.
  return any(str(c) == "platform" for c in exported.disabled_safety_checks)


def callee_platform_indices(exported: "Exported",
                            lowering_platforms: Sequence[str]) -> list[int]:
  """For each caller platform, the index of the callee's branch to run.

  Every caller platform must be one the callee was exported for, unless the
  platform check was disabled; then unknown platforms run branch 0.
  """
  indices = []
  for platform in lowering_platforms:
    if platform in exported.platforms:
      indices.append(exported.platforms.index(platform))
    elif _platform_check_disabled(exported):
      indices.append(0)
    else:
      raise CallError(
          f"Function '{exported.fun_name}' was exported for "
          f"platforms '{tuple(exported.platforms)}' but it is used "
          f"on '{tuple(lowering_platforms)}'. Export it for these platforms, "
          "or export with disabled_checks=[DisabledSafetyCheck.platform()] to "
          "run its first platform's code anyway.")
  return indices


def _i32_scalar(value: int) -> ir.Value:
  return mlir.ir_constant(np.int32(value))


def _callee_platform_index(ctx: mlir.LoweringRuleContext, exported: "Exported",
                           param_type: ir.Type) -> ir.Value:
  """The callee's platform index argument, chosen by the caller's own index."""
  lowering_platforms = ctx.module_context.platforms
  indices = callee_platform_indices(exported, lowering_platforms)
  i32 = ir.RankedTensorType.get((), ir.IntegerType.get_signless(32))
  if len(lowering_platforms) == 1:
    index = _i32_scalar(indices[0])
  else:
    caller_index = ctx.dim_var_values[0]
    if caller_index.type != i32:
      caller_index = hlo.convert(i32, caller_index)
    case = hlo.CaseOp([i32], index=caller_index, num_branches=len(indices))
    for region, callee_idx in zip(case.regions, indices):
      with ir.InsertionPoint(region.blocks.append()):
        hlo.return_([_i32_scalar(callee_idx)])
    index = case.result
  if index.type != param_type:
    index = hlo.convert(param_type, index)
  return index


def _has_sdy_mesh(symtab: ir.SymbolTable, module: ir.Module) -> bool:
  for name in _MESH_SYMBOLS:
    if name in symtab:
      return isinstance(symtab[name], sdy.MeshOp)
  return _has_frontend_meshes(module)


def _has_frontend_meshes(module: ir.Module) -> bool:
  attrs = module.operation.attributes
  if "mhlo.frontend_attributes" not in attrs:
    return False
  return "xla.sdy.meshes" in ir.DictAttr(attrs["mhlo.frontend_attributes"])


def _run_pass(module: ir.Module, pipeline: str) -> None:
  with module.context:
    passmanager.PassManager.parse(f"builtin.module({pipeline})").run(module.operation)


def _abstract_mesh(symtab: ir.SymbolTable) -> mesh_lib.AbstractMesh:
  if "mesh" not in symtab:
    return mesh_lib.empty_abstract_mesh
  axes = [sdy.MeshAxisAttr(a) for a in sdy.MeshAttr(symtab["mesh"].mesh).axes]
  if not axes:
    return mesh_lib.empty_abstract_mesh
  return mesh_lib.AbstractMesh(tuple(a.size for a in axes), tuple(a.name for a in axes))


def _prepare_callee(exported: "Exported", ctx: mlir.LoweringRuleContext):
  """Parse the callee module in the caller's context; returns it and its Shardy mesh."""
  if any_is_host(exported.platforms):
    jax_lapack.initialize_lapack()
  with ctx.module_context.module.context:
    module = export_mlir.module_from_bytes(exported.mlir_module_serialized, exported.fun_name)
  symtab = ir.SymbolTable(module.operation)
  if "main" not in symtab:
    raise DeserializationError(
        f"The StableHLO module of the exported function '{exported.fun_name}' has no "
        "function named 'main', the entry point every Exported is called through. Its "
        "mlir_module_serialized bytes are corrupted or were not produced by export; export "
        "the function again or reload the original serialized blob.")
  mesh = None
  if _has_sdy_mesh(symtab, module):
    if not config.use_shardy_partitioner.value:
      raise CallError(
          "The function was exported with shardy enabled but you are calling "
          "it with Shardy disabled. Please enable Shardy using "
          "`--jax_use_shardy_partitioner=True`.\n"
          f"The function is '{exported.fun_name}'; in Python, enable Shardy with "
          "jax.config.update('jax_use_shardy_partitioner', True).")
    if _has_frontend_meshes(module):
      _run_pass(module, "xla-sdy-round-trip-import-shardy-attrs")
    mesh = _abstract_mesh(symtab)
  _run_pass(module, "sdy-lift-inlined-meshes")
  return module, mesh


def _inline_module(dst: ir.Module, dst_symtab: ir.SymbolTable, src: ir.Module,
                   main_name: str) -> str:
  """Move every symbol of ``src`` into ``dst`` as private; returns the new name of main.

  ``main``, the wrapped main, and any symbol whose name is taken in ``dst`` get
  a fresh name that is free in both modules; uses inside ``src`` are rewritten
  first. The wrapped main is renamed even without a clash because an export of
  the caller later wraps the caller's own main under that name.
  """
  src_symtab = ir.SymbolTable(src.operation)
  ops = list(src.body.operations)
  taken: set[str] = set()
  renames: dict[str, str] = {}
  for op in ops:
    name = ir.StringAttr(op.attributes["sym_name"]).value
    if name not in _ALWAYS_RENAMED and name not in dst_symtab:
      continue
    base = _ALWAYS_RENAMED.get(name, name).format(main=main_name)
    fresh, n = base, 0
    while fresh in src_symtab or fresh in dst_symtab or fresh in taken:
      fresh, n = f"{base}_{n}", n + 1
    taken.add(fresh)
    renames[name] = fresh
  private = ir.StringAttr.get("private")
  for op in ops:
    name = ir.StringAttr(op.attributes["sym_name"]).value
    if name in renames:
      src_symtab.set_symbol_name(op, renames[name])
    op.attributes["sym_visibility"] = private
  for old, new in renames.items():
    for op in ops:
      src_symtab.replace_all_symbol_uses(old, new, op)
  for op in ops:
    dst.body.append(op)
    dst_symtab.insert(op)
  return renames["main"]


def _wrap_sharding(ctx, x: ir.Value, aval, sharding, use_shardy: bool) -> ir.Value:
  if sharding is None:
    return x
  if use_shardy:
    proto = sharding._to_sdy_sharding(aval.ndim)
  elif isinstance(sharding, sharding_impls.NamedSharding):
    proto = sharding._to_xla_hlo_sharding(aval.ndim).to_proto()
  else:
    proto = sharding.to_proto()
  return mlir.wrap_with_sharding_op(ctx, x, aval, proto, allow_shardy_lowering=use_shardy)


def _on_mesh(hlo_sharding, aval, mesh):
  """An HLO sharding of a legacy record as a NamedSharding on the callee's mesh."""
  if hlo_sharding is None:
    return None
  memory_kind = (core.mem_space_to_kind(aval.memory_space)
                 if aval.memory_space is not None else None)
  spec = sharding_impls.parse_flatten_op_sharding(hlo_sharding, mesh)[0]
  return sharding_impls.cached_named_sharding(mesh, spec, memory_kind=memory_kind)


def _apply_shardings(ctx, values, avals, exported: "Exported", mesh, which: str):
  """Constrain ``values`` with the callee's input or output shardings, as at export."""
  if jax_envelope.has_named_shardings(exported):
    named = (jax_envelope.in_named_shardings(exported) if which == "in"
             else jax_envelope.out_named_shardings(exported))
    # jax always emits Shardy constraints here, which fail to verify when the
    # caller lowers with GSPMD; follow the caller's partitioner instead.
    use_shardy = config.use_shardy_partitioner.value
    return [_wrap_sharding(ctx, x, a, s, use_shardy=use_shardy)
            for x, a, s in zip(values, avals, named)]
  hlo_shardings = exported.in_shardings_hlo if which == "in" else exported.out_shardings_hlo
  if mesh:
    return [_wrap_sharding(ctx, x, a, _on_mesh(s, a, mesh), use_shardy=True)
            for x, a, s in zip(values, avals, hlo_shardings)]
  return [_wrap_sharding(ctx, x, a, s, use_shardy=False)
          for x, a, s in zip(values, avals, hlo_shardings)]


def _convert_to(ctx, x: ir.Value, aval) -> ir.Value:
  """``x`` converted to ``aval``'s type when the shapes differ (static vs dynamic)."""
  want = jax_mlir_compat.aval_to_ir_type(ctx, aval)
  return x if x.type == want else hlo.convert(want, x)


def _lowering(ctx: mlir.LoweringRuleContext, *args: ir.Value, exported: _Callee):
  exp = exported.exported
  if exp.uses_global_constants:
    ctx.module_context.shape_poly_state.uses_dim_vars = True
  module, mesh = _prepare_callee(exp, ctx)
  _check_devices(ctx, exp)

  caller_in_avals = [_physical(a) for a in ctx.avals_in]
  callee_in_avals = [_physical(a) for a in exp.in_avals]
  if jax_envelope.has_named_shardings(exp) or mesh:
    args = _apply_shardings(ctx, args, callee_in_avals, exp, mesh, "in")
  else:
    args = _apply_shardings(ctx, args, caller_in_avals, exp, mesh, "in")

  main_type = ir.SymbolTable(module.operation)["main"].type
  _signature.check_main(exp, main_type)
  callee_args: list[ir.Value] = []
  if len(exp.platforms) > 1:
    callee_args.append(_callee_platform_index(ctx, exp, main_type.inputs[0]))
  else:
    callee_platform_indices(exp, ctx.module_context.platforms)
  callee_args.extend(ctx.tokens_in.get(eff) for eff in exp.ordered_effects)
  kept = set(exp.module_kept_var_idx)
  callee_args.extend(_convert_to(ctx, a, callee_aval)
                     for i, (a, callee_aval) in enumerate(zip(args, callee_in_avals))
                     if i in kept)

  fn_name = _inline_module(ctx.module_context.module, ctx.module_context.symbol_table,
                           module, "call_exported_" + re.sub(r"\W", "_", exp.fun_name))
  call = func_dialect.CallOp(main_type.results, ir.FlatSymbolRefAttr.get(fn_name),
                             callee_args)
  n_tokens = len(exp.ordered_effects)
  if n_tokens:
    ctx.set_tokens_out(mlir.TokenSet(
        {eff: (call.results[i],) for i, eff in enumerate(exp.ordered_effects)}))
  out_avals = [_physical(a) for a in ctx.avals_out]
  results = [_convert_to(ctx, r, a)
             for r, a in zip(list(call.results)[n_tokens:], out_avals)]
  return _apply_shardings(ctx, results, out_avals, exp, mesh, "out")


mlir.register_lowering(call_exported_p, _lowering)
