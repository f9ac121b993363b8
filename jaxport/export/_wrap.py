"""Wrapping the lowered ``main`` so callers never pass dimension variables.

jit lowers a function whose shapes are symbolic, or which has ordered effects,
to a ``main`` that takes (platform index, dimension variables, tokens, arrays).
The calling convention promises callers a ``main`` that takes only
(platform index, tokens, arrays): the dimension variables are computed from the
arrays' sizes. This module renames the lowered function to the private
``_wrapped_jax_export_main`` and adds a public ``main`` that reads the sizes,
solves the dimension variables through ``shapes._bridge``, converts arguments
whose types differ and calls the private function.

Owns the jax internals for lowering code into an existing module
(``jax._src.interpreters.mlir``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any

from jax import tree_util
from jaxport._jaxcompat._lowering import func_dialect, hlo, ir, passmanager
from jaxport._jaxcompat._lowering import mlir as jax_mlir
from jaxport._jaxcompat._shardings import sharding_impls
from jaxport._jaxcompat._tracing import source_info_util

from jaxport.shapes import _bridge

WRAPPED_MAIN = "_wrapped_jax_export_main"


def needs_wrapping(in_avals: Sequence[Any], has_ordered_effects: bool) -> bool:
  """Whether the calling convention requires a wrapper around the lowered main."""
  return has_ordered_effects or bool(_bridge.all_dim_vars(in_avals))


def _flat_values(values) -> list[ir.Value]:
  flat: list[ir.Value] = []
  for v in values:
    if isinstance(v, ir.Value):
      flat.append(v)
    else:
      flat.extend(_flat_values(v))
  return flat


def _dict_attrs(array_attr: ir.ArrayAttr | None, n: int) -> list[dict[str, ir.Attribute]]:
  if array_attr is None:
    return [{} for _ in range(n)]
  return [{named.name: named.attr for named in ir.DictAttr(a)} for a in array_attr]


def _dim_values_context(module: ir.Module, in_avals: Sequence[Any],
                        ignore_forward_compatibility: bool) -> jax_mlir.LoweringRuleContext:
  """A lowering context that emits the dimension computations into ``module``."""
  module_context = jax_mlir.ModuleContext(
      backend=None, platforms=["cpu"],
      axis_context=sharding_impls.ShardingContext(0),
      keepalives=[], channel_iterator=itertools.count(1), host_callbacks=[],
      module=module, context=module.context,
      lowering_parameters=jax_mlir.LoweringParameters(
          global_constant_computation=True, for_export=True,
          hoist_constants_as_args=False,
          export_ignore_forward_compatibility=ignore_forward_compatibility))
  return jax_mlir.LoweringRuleContext(
      module_context=module_context, name_stack=source_info_util.new_name_stack(),
      traceback=None, primitive=None, avals_in=in_avals, avals_out=None,
      tokens_in=jax_mlir.TokenSet(), tokens_out=None, const_lowering={})


def _unused_symbol_name(symbols: ir.SymbolTable, name: str) -> str:
  """``name``, or ``name_1``, ``name_2``... when an inlined callee already took it."""
  candidate, n = name, 0
  while candidate in symbols:
    n += 1
    candidate = f"{name}_{n}"
  return candidate


def wrap_main(module: ir.Module, in_avals: Sequence[Any], *, in_tree: tree_util.PyTreeDef,
              has_platform_index_argument: bool, module_kept_var_idx: Sequence[int],
              ignore_forward_compatibility: bool = False) -> ir.Module:
  """Add the public ``main`` wrapper to ``module`` (mutated and returned)."""
  dim_vars = _bridge.all_dim_vars(in_avals)
  if dim_vars and len(module_kept_var_idx) != len(in_avals):
    raise AssertionError("with symbolic shapes jit must keep every argument")
  context = module.context
  with context, ir.Location.unknown(context):
    symbols = ir.SymbolTable(module.operation)
    inner = symbols["main"]
    inner.attributes["sym_visibility"] = ir.StringAttr.get("private")
    wrapped_name = _unused_symbol_name(symbols, WRAPPED_MAIN)
    symbols.set_symbol_name(inner, wrapped_name)

    in_types = list(inner.type.inputs)
    out_types = list(inner.type.results)
    token_type = hlo.TokenType.get()
    nr_platform = 1 if has_platform_index_argument else 0
    nr_dims = len(dim_vars)
    nr_tokens = sum(1 for t in in_types if t == token_type)
    first_array = nr_platform + nr_dims + nr_tokens
    if any(t == token_type for t in in_types[first_array:]):
      raise AssertionError(f"tokens must precede array arguments in {inner.type}")

    arg_attrs = _dict_attrs(inner.arg_attrs if "arg_attrs" in inner.attributes else None,
                            len(in_types))
    res_attrs = (inner.result_attrs if "res_attrs" in inner.attributes else None)
    kept = [*range(nr_platform), *range(nr_platform + nr_dims, len(in_types))]

    outer = func_dialect.FuncOp(
        "main", ir.FunctionType.get([in_types[i] for i in kept], out_types),
        ip=ir.InsertionPoint.at_block_begin(module.body))
    outer.attributes["sym_visibility"] = ir.StringAttr.get("public")
    # Results are passed through unchanged, so aliasing indices stay valid.
    outer.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(arg_attrs[i]) for i in kept])
    if res_attrs is not None:
      outer.result_attrs = res_attrs

    block = outer.add_entry_block()
    with ir.InsertionPoint(block):
      args = list(outer.arguments)
      platform_args = args[:nr_platform]
      token_args = args[nr_platform:nr_platform + nr_tokens]
      array_args = args[nr_platform + nr_tokens:]
      if dim_vars:
        ctx = _dim_values_context(module, in_avals, ignore_forward_compatibility)
        dim_values = _flat_values(jax_mlir.lower_fun(
            functools.partial(_bridge.compute_dim_vars_from_arg_shapes, in_avals,
                              args_kwargs_tree=in_tree),
            multiple_results=True)(ctx, *array_args))
      else:
        dim_values = []
      call_args = [
          v if v.type == t else hlo.convert(t, v)
          for v, t in zip([*platform_args, *dim_values, *token_args, *array_args], in_types)
      ]
      call = func_dialect.CallOp(out_types, ir.FlatSymbolRefAttr.get(wrapped_name), call_args)
      func_dialect.ReturnOp(list(call.results))
    symbols.insert(outer)
    symbols.set_symbol_name(outer, "main")
    passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)
  return module
