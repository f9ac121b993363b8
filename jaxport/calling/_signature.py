"""Checking a callee module's ``main`` against its own record before it is inlined.

A record states what its module computes (``in_avals``, ``out_avals``,
``module_kept_var_idx``, ``platforms``, ``ordered_effects``); the module's
public ``main`` states it again as MLIR types. jax 0.10.2 trusts the record:
a result whose element type differs is converted, and a module with more
results than the record ends in an internal length error (or, with more
arguments, in an MLIR verifier error). Such a record
contradicts itself (no exporter writes one), so jaxport refuses it and names
both sides. This is a deliberate difference from jax (``docs/calling.md``).

What ``main`` takes is the same for every calling convention version jax
0.10.2 calls (4 to 10): an optional platform index (when the record has
several platforms), one token per ordered effect (records older than version
9 have none), then the kept array arguments. Dimension variables are never
passed: ``main`` computes them from its argument shapes. A module that still
takes dimension arguments (version 4 modules made with ``dim_args_spec``
before 2023-03-28) is reported as taking more arguments than its record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jaxport._jaxcompat._lowering import ir, mlir
from jaxport._jaxcompat._tracing import core, dtypes

from jaxport.errors import CallError

if TYPE_CHECKING:
  from jaxport.export._exported import Exported


@dataclasses.dataclass(frozen=True)
class MainLayout:
  """The arguments and results a record says its module's ``main`` has, in order."""

  platform_index: bool      # a leading i32/i64 scalar: the record has several platforms
  tokens: int               # one token per ordered effect, in arguments and results
  arg_avals: tuple[Any, ...]   # physical avals of the kept array arguments
  arg_indices: tuple[int, ...]  # their flat argument indices, for messages
  result_avals: tuple[Any, ...]  # physical avals of the array results

  @property
  def num_args(self) -> int:
    return int(self.platform_index) + self.tokens + len(self.arg_avals)

  @property
  def num_results(self) -> int:
    return self.tokens + len(self.result_avals)


def _physical(aval: Any) -> Any:
  if dtypes.issubdtype(aval.dtype, dtypes.extended):
    return core.physical_aval(aval)
  return aval


def layout_of(exported: "Exported") -> MainLayout:
  """What ``exported``'s record says ``main`` takes and returns."""
  kept = tuple(sorted(exported.module_kept_var_idx))
  n = len(exported.in_avals)
  if any(not 0 <= i < n for i in kept):
    raise CallError(
        f"The record of the exported function '{exported.fun_name}' keeps arguments "
        f"{list(kept)} (module_kept_var_idx), but it has {n} flat argument(s) (in_avals). "
        "The record is corrupted; rebuild it from the original serialized blob.")
  return MainLayout(
      platform_index=len(exported.platforms) > 1,
      tokens=len(exported.ordered_effects),
      arg_avals=tuple(_physical(exported.in_avals[i]) for i in kept),
      arg_indices=kept,
      result_avals=tuple(_physical(a) for a in exported.out_avals))


def _aval_str(aval: Any) -> str:
  return aval.str_short(short_dtypes=True)


def _mismatch(exported: "Exported", what: str, module_side: str, record_side: str) -> CallError:
  return CallError(
      f"The module of the exported function '{exported.fun_name}' (calling convention "
      f"version {exported.calling_convention_version}) contradicts its own record: {what}: "
      f"the module's main has {module_side}, but the record says {record_side}. One of the "
      "two is wrong, so jaxport refuses the record rather than convert or drop values. Re-export the function, or rebuild the record from the "
      "original serialized blob.")


def _tensor(t: ir.Type) -> ir.RankedTensorType | None:
  try:
    return ir.RankedTensorType(t)
  except ValueError:  # a token or another non-tensor type
    return None


def _type_matches(t: ir.Type, aval: Any, *, symbolic_is_dynamic: bool) -> bool:
  """Element type equal; rank equal; each dimension equal where both sides are constant.

  With ``symbolic_is_dynamic`` (arguments) a symbolic dimension of the record
  must be dynamic (``?``) in the module too: the caller passes a dynamic
  tensor there, which a static parameter cannot take.
  """
  tensor = _tensor(t)
  if tensor is None:
    return False
  if tensor.element_type != mlir.dtype_to_ir_type(aval.dtype):
    return False
  if tensor.rank != len(aval.shape):
    return False
  dynamic = ir.ShapedType.get_dynamic_size()
  for m, d in zip(tensor.shape, aval.shape):
    if not core.is_constant_dim(d):
      if symbolic_is_dynamic and m != dynamic:
        return False
    elif m != dynamic and m != d:
      return False
  return True


def _check_values(exported: "Exported", kind: str, types: Sequence[ir.Type],
                  avals: Sequence[Any], names: Sequence[str]) -> None:
  arguments = kind.endswith("argument")
  for t, aval, name in zip(types, avals, names):
    if not _type_matches(t, aval, symbolic_is_dynamic=arguments):
      raise _mismatch(exported, f"{kind} {name}", f"type {t}",
                      f"{_aval_str(aval)} (from the record's {kind.split()[0]} avals)")


def _is_scalar_index(t: ir.Type) -> bool:
  tensor = _tensor(t)
  return tensor is not None and tensor.rank == 0 and any(tensor.element_type == ir.IntegerType.get_signless(w)
                                  for w in (32, 64))


def check_main(exported: "Exported", main_type: ir.FunctionType) -> None:
  """Refuse a module whose ``main`` does not take and return what the record says.

  Runs in an MLIR context (the caller's, during lowering). Raises ``CallError``
  naming the first difference with both sides.
  """
  layout = layout_of(exported)
  inputs, results = list(main_type.inputs), list(main_type.results)
  if len(inputs) != layout.num_args:
    raise _mismatch(
        exported, "number of arguments",
        f"{len(inputs)} ({', '.join(str(t) for t in inputs) or 'none'})",
        f"{layout.num_args} ({_describe_args(layout)})")
  if len(results) != layout.num_results:
    raise _mismatch(
        exported, "number of results",
        f"{len(results)} ({', '.join(str(t) for t in results) or 'none'})",
        f"{layout.num_results} ({_describe_results(layout)})")
  pos = 0
  if layout.platform_index:
    if not _is_scalar_index(inputs[0]):
      raise _mismatch(exported, "argument 0", f"type {inputs[0]}",
                      f"an i32 or i64 scalar platform index (it lists platforms "
                      f"{tuple(exported.platforms)})")
    pos = 1
  token = mlir.token_type()
  for i in range(layout.tokens):
    for kind, t in (("argument", inputs[pos + i]), ("result", results[i])):
      if t != token:
        raise _mismatch(exported, f"{kind} {pos + i if kind == 'argument' else i}",
                        f"type {t}", f"a token for ordered effect "
                        f"{exported.ordered_effects[i]}")
  pos += layout.tokens
  _check_values(exported, "input argument", inputs[pos:], layout.arg_avals,
                [f"{pos + k} (flat argument {i})" for k, i in enumerate(layout.arg_indices)])
  _check_values(exported, "output result", results[layout.tokens:], layout.result_avals,
                [f"{layout.tokens + k} (flat result {k})"
                 for k in range(len(layout.result_avals))])


def _describe_args(layout: MainLayout) -> str:
  parts = []
  if layout.platform_index:
    parts.append("a platform index")
  if layout.tokens:
    parts.append(f"{layout.tokens} token(s)")
  parts.append(f"{len(layout.arg_avals)} kept array argument(s)"
               + (f": {', '.join(_aval_str(a) for a in layout.arg_avals)}"
                  if layout.arg_avals else ""))
  return ", ".join(parts)


def _describe_results(layout: MainLayout) -> str:
  parts = [f"{layout.tokens} token(s)"] if layout.tokens else []
  parts.append(f"{len(layout.result_avals)} array result(s)"
               + (f": {', '.join(_aval_str(a) for a in layout.result_avals)}"
                  if layout.result_avals else ""))
  return ", ".join(parts)
