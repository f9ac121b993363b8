"""Explicit symbolic constraints survive serialization and give friendly errors at call time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport


@pytest.fixture(scope="module")
def exported():
  c, = jaxport.symbolic_shape("c", constraints=["c >= 4", "mod(c, 2) == 0"])
  exp = jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((c,), jnp.float32))
  return jaxport.deserialize(exp.serialize())


def test_scope_is_rebuilt_with_the_constraints(exported):
  c = exported.in_avals[0].shape[0]
  assert jaxport.is_symbolic_dim(c)
  assert c.scope.constraints[:2] == ("c >= 4", "mod(c, 2) == 0")
  assert c >= 4  # decided by the restored constraint
  assert c % 2 == 0


def test_satisfying_call_runs(exported):
  np.testing.assert_array_equal(jaxport.call(exported)(np.ones(6, np.float32)), np.full(6, 2.0))


@pytest.mark.parametrize("size, message", [
    (2, "Input shapes do not match the symbolic shape constraint c >= 4. "
        "Expected 'c - 4' to be greater or equal to 0, but found -2."),
    (5, "Input shapes do not match the symbolic shape constraint mod(c, 2) == 0. "
        "Expected 'mod(c, 2)' to be equal to 0, but found 1."),
])
def test_violating_call_gets_the_constraint_message(exported, size, message):
  with pytest.raises(jaxport.ShapeError) as info:
    jaxport.call(exported)(np.ones(size, np.float32))
  assert str(info.value).startswith(message)
  assert "args[0].shape = (c,)" in str(info.value)
