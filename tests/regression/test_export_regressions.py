"""Regressions found in export, each named after what broke."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxport


def test_exporting_a_call_to_a_jax_wrapped_module_keeps_both_wrapped_mains_apart():
  # jax's call inlines its callee's private `_wrapped_jax_export_main`; jaxport's own
  # wrapper must then pick another name instead of producing a self-recursive main.
  spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b"), np.float32)
  inner = jax.export.export(jax.jit(lambda x: jnp.sin(x) * 2))(spec)
  outer = jaxport.export(jax.jit(lambda x: inner.call(x) + 1))(
      jax.ShapeDtypeStruct(jaxport.symbolic_shape("b"), np.float32))
  x = np.arange(5, dtype=np.float32)
  np.testing.assert_allclose(jaxport.call(outer)(x), np.sin(x) * 2 + 1, rtol=1e-6)
  text = outer.mlir_module()
  assert "func.func private @_wrapped_jax_export_main(" in text
  assert "func.func private @_wrapped_jax_export_main_1(" in text
