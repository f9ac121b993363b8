"""Differences from jax found by running JAX's own export_test.py through jaxport.

Each test here failed under jaxport before its fix (tools/conformance/run_jax_suites.py).
"""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src.interpreters import mlir
from jax.sharding import NamedSharding, PartitionSpec as P

import jaxport


def test_registering_an_unregistered_namedtuple_without_from_children_is_refused():
  # jaxport took the namedtuple for a registered pytree node, as every namedtuple flattens.
  T = collections.namedtuple("T", ("a", "b"))
  with pytest.raises(ValueError, match=r"If `from_children` is not present.* must call.*"
                                       r"register_pytree_node"):
    jaxport.register_pytree_node_serialization(
        T, serialized_name="tests.regression.T", serialize_auxdata=lambda aux: b"",
        deserialize_auxdata=lambda b: None)


def test_export_takes_jaxs_private_override_lowering_rules():
  def cosine_rule(ctx, arg, **_):
    return [mlir.hlo.cosine(arg)]
  exp = jaxport.export(jax.jit(jnp.sin), _override_lowering_rules=((lax.sin_p, cosine_rule),))(
      jax.ShapeDtypeStruct((), np.float32))
  assert "stablehlo.cosine" in exp.mlir_module()
  assert exp.call(np.float32(0)) == 1


def test_mixed_scopes_are_refused_with_jaxs_message_first():
  a, b = jaxport.symbolic_shape("w"), jaxport.symbolic_shape("w")
  with pytest.raises(ValueError, match=r"(?s)^Invalid mixing of symbolic scopes when exporting "
                                       r"<lambda>.*Expected current \(from args\[0\]\) scope .*"
                                       r"and found for 'w' \(args\[1\]\) scope .*"):
    jaxport.export(jax.jit(lambda x, y: x + y))(jax.ShapeDtypeStruct(a, np.float32),
                                                 jax.ShapeDtypeStruct(b, np.float32))


def test_a_shardy_record_called_with_shardy_off_is_refused_with_jaxs_message_first():
  mesh = jax.make_mesh((1,), ("x",))
  exp = jaxport.export(jax.jit(jnp.sin, in_shardings=NamedSharding(mesh, P("x"))))(
      jax.ShapeDtypeStruct((2,), np.float32))
  old = jax.config.jax_use_shardy_partitioner
  jax.config.update("jax_use_shardy_partitioner", False)
  try:
    with pytest.raises(jaxport.CallError, match=r"^The function was exported with shardy enabled "
                                                r"but .*Please enable Shardy"):
      exp.call(np.zeros(2, np.float32))
  finally:
    jax.config.update("jax_use_shardy_partitioner", old)
