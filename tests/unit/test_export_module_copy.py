"""The copy of a lowered module that export wraps: the same IR as its source, which stays untouched."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxlib.mlir import ir

import jaxport
from jaxport.export import _mlir

F32 = np.float32


def _mlp(w, x):
  return jnp.tanh(x @ w).sum(0) * x.shape[0]


def _lowered_module(spec: str):
  w = jax.ShapeDtypeStruct((4, 4), F32)
  x = jax.ShapeDtypeStruct(jaxport.symbolic_shape(spec), F32)
  return jax.jit(_mlp).trace(w, x).lower().compiler_ir("stablehlo")


@pytest.mark.parametrize("spec", ["8, 4", "b, 4"])
def test_module_copy_has_the_source_ir_and_artifact(spec):
  source = _lowered_module(spec)
  copy = _mlir.copy_module(source)
  assert copy is not source
  assert (copy.operation.get_asm(enable_debug_info=True)
          == source.operation.get_asm(enable_debug_info=True))
  assert _mlir.module_to_portable_artifact(copy) == _mlir.module_to_portable_artifact(source)


def test_changing_the_module_copy_leaves_the_source_unchanged():
  source = _lowered_module("b, 4")
  before = source.operation.get_asm(enable_debug_info=True)
  copy = _mlir.copy_module(source)
  with copy.context:
    copy.operation.attributes["jaxport.test_mark"] = ir.UnitAttr.get()
    for op in list(copy.body.operations):
      op.erase()
  assert "jaxport.test_mark" in str(copy)
  assert source.operation.get_asm(enable_debug_info=True) == before


def test_module_copy_is_made_in_the_source_context():
  source = _lowered_module("b, 4")
  assert _mlir.copy_module(source).context is source.context


@pytest.mark.parametrize("platforms", [None, ("cpu", "cuda")])
def test_exporting_one_jitted_function_twice_gives_the_same_bytes(platforms):
  # The second export lowers from jit's caches: had the first wrapped the cached module
  # itself, the second would find no public main to wrap, or wrap it twice.
  jitted = jax.jit(_mlp)
  w = jax.ShapeDtypeStruct((4, 4), F32)
  x = jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 4"), F32)
  first = jaxport.export(jitted, platforms=platforms)(w, x)
  second = jaxport.export(jitted, platforms=platforms)(w, x)
  assert bytes(second.mlir_module_serialized) == bytes(first.mlir_module_serialized)
  assert first.mlir_module().count("func.func public @main(") == 1
  out = jaxport.call(second)(np.ones((4, 4), F32), np.ones((3, 4), F32))
  np.testing.assert_allclose(out, np.full((4,), 3 * 3 * np.tanh(4.0), F32), rtol=1e-6)
