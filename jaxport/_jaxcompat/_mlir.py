"""MLIR helpers whose signatures changed across the supported jax releases.

- ``mlir.aval_to_ir_type`` takes the module context first from jax 0.10.1 on.
- jaxlib's ``serialize_portable_artifact`` takes an ``ir.Module`` from jax 0.10.1
  on (extension version 440) and bytecode before.
- ``deserialize_portable_artifact`` returns an ``ir.Module`` in jax 0.10.2 and
  the module's bytecode or text before.
"""

from __future__ import annotations

import inspect
from typing import Any

from jax._src.interpreters import mlir
from jax._src.lib import _jax
from jax._src.lib.mlir import ir

_AVAL_TAKES_CONTEXT = len(inspect.signature(mlir.aval_to_ir_type).parameters) >= 2


def aval_to_ir_type(ctx: mlir.LoweringRuleContext, aval: Any) -> ir.Type:
  """The MLIR type of ``aval`` in the module being lowered by ``ctx``."""
  if _AVAL_TAKES_CONTEXT:
    return mlir.aval_to_ir_type(ctx.module_context, aval)
  return mlir.aval_to_ir_type(aval)


def serialize_portable_artifact(module: ir.Module, target_version: str, with_sdy: bool) -> bytes:
  """``module`` as a StableHLO portable artifact for ``target_version``."""
  try:
    return _jax.mlir.serialize_portable_artifact(module, target_version, with_sdy)
  except TypeError:  # this jaxlib takes the module's bytecode
    return _jax.mlir.serialize_portable_artifact(
        mlir.module_to_bytecode(module), target_version, with_sdy)


def deserialize_portable_artifact(serialized: bytes) -> ir.Module:
  """The module of a portable artifact, parsed in the current MLIR context."""
  module = _jax.mlir.deserialize_portable_artifact(serialized)
  if isinstance(module, ir.Module):
    return module
  return ir.Module.parse(module)


def current_stablehlo_version() -> str | None:
  """The newest StableHLO version this jaxlib writes and reads, such as ``"1.17.0"``."""
  try:
    from jax._src.lib.mlir.dialects import hlo
    return str(hlo.get_current_version())
  except Exception:  # noqa: BLE001 - an older or newer jaxlib spells it otherwise
    return None


def minimum_stablehlo_version() -> str | None:
  """The oldest StableHLO version this jaxlib writes a portable artifact for, such as ``"0.9.0"``."""
  try:
    from jax._src.lib.mlir.dialects import hlo
    return str(hlo.get_minimum_version())
  except Exception:  # noqa: BLE001 - an older or newer jaxlib spells it otherwise
    return None
