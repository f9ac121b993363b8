"""jaxport's symbolic dimensions flow through jax tracing like jax's own.

Each function is traced with ``jax.jit(f).trace`` on a jaxport symbolic shape
and on the same spec built by ``jax.export.symbolic_shape``; the output
shapes must print the same.
"""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

FUNCS = {
    "sin": lambda x: jnp.sin(x),
    "add_scalar_dim": lambda x: x + x.shape[0],
    "reshape_minus_one": lambda x: x.reshape(-1),
    "reshape_split": lambda x: x.reshape((x.shape[0], 2, 2)),
    "concatenate": lambda x: jnp.concatenate([x, x], axis=0),
    "broadcast": lambda x: x[:, None, :] * jnp.ones((1, 3, 1), x.dtype),
    "matmul": lambda x: x @ x.T,
    "einsum": lambda x: jnp.einsum("bi,ci->bc", x, x),
    "einsum_three": lambda x: jnp.einsum("bi,bj,bk->ijk", x, x, x),
    "sum": lambda x: jnp.sum(x, axis=0),
    "mean": lambda x: jnp.mean(x),
    "slice_step": lambda x: x[1::2],
    "slice_neg": lambda x: x[:-1],
    "pad": lambda x: jnp.pad(x, ((1, 2), (0, 0))),
    "iota": lambda x: jnp.arange(x.shape[0]),
    "cumsum": lambda x: jnp.cumsum(x, axis=0),
    "sort": lambda x: jnp.sort(x, axis=0),
    "argsort": lambda x: jnp.argsort(x, axis=0),
    "where": lambda x: jnp.where(x > 0, x, 0.0),
    "zeros_like_shape": lambda x: jnp.zeros((x.shape[0] * 2, 3)),
    "dynamic_slice": lambda x: jax.lax.dynamic_slice_in_dim(x, 1, 2, axis=0),
    "take": lambda x: x[jnp.array([0, 1])],
    "repeat": lambda x: jnp.repeat(x, 2, axis=0),
    "tile": lambda x: jnp.tile(x, (2, 1)),
    "transpose": lambda x: x.T,
    "max_dim": lambda x: jnp.ones((jax.core.max_dim(x.shape[0], 3),)),
    "floordiv_shape": lambda x: jnp.zeros((x.shape[0] // 2,)),
    "dim_as_array": lambda x: jnp.float32(x.shape[0]) * x,
    "top_k": lambda x: jax.lax.top_k(x.T, 2)[0],
    "conv": lambda x: jax.lax.conv_general_dilated(
        x[:, None, :], jnp.ones((1, 1, 2), x.dtype), (1,), "VALID"),
}


def traced(f, shape):
  """The output shape and dtype as text, or the error class name."""
  try:
    out = jax.jit(f).trace(jax.ShapeDtypeStruct(shape, jnp.float32)).out_info
  except Exception as e:
    return type(e).__name__
  return f"{out.dtype}{tuple(out.shape)}"


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("constraints", [(), ("b >= 2",)])
def test_output_shape_matches_jax(name, constraints):
  f = FUNCS[name]
  mine = traced(f, jaxport.symbolic_shape("b, 4", constraints=constraints))
  theirs = traced(f, jax.export.symbolic_shape("b, 4", constraints=constraints))
  assert mine == theirs
  if constraints:
    assert "(" in mine, mine  # with b >= 2 every function traces


def test_symbolic_args_specs_shares_one_scope():
  args = (np.zeros((3, 4), np.float32), {"w": np.zeros((4,), np.int32)})
  specs = jaxport.symbolic_args_specs(args, ("b, _", {"w": "..."}), constraints=["b >= 2"])
  x, w = specs[0], specs[1]["w"]
  b = x.shape[0]
  assert str(x.shape) == "(b, 4)" and w.shape == (4,) and w.dtype == np.int32
  assert b >= 2
  same = jaxport.symbolic_args_specs(args, "b, ...")
  assert same[0].shape[0].scope is same[1]["w"].shape[0].scope


def test_symbolic_args_specs_rejects_a_bad_prefix():
  with pytest.raises(jaxport.ShapeError, match="pytree prefix"):
    jaxport.symbolic_args_specs((np.zeros(3), np.zeros(3)), ("a", "b", "c"))


def test_dimension_as_value_outside_tracing_explains():
  b, = jaxport.symbolic_shape("b")
  with pytest.raises(jaxport.ShapeError, match="no concrete value"):
    jnp.array(b)


def test_export_emits_shape_assertions():
  b, = jaxport.symbolic_shape("2*b")
  exp = jaxport.export(jax.jit(lambda x: x[::2]))(jax.ShapeDtypeStruct((b,), jnp.float32))
  text = exp.mlir_module()
  assert "stablehlo.custom_call @shape_assertion" in text
  assert "has_side_effect = true" in text and "api_version = 2" in text
  assert "Division had remainder {0} when computing the value of 'b'" in text
  assert np.array_equal(jaxport.call(exp)(np.arange(6, dtype=np.float32)), [0.0, 2.0, 4.0])
  with pytest.raises(ValueError, match="Division had remainder 1"):
    jaxport.call(exp)(np.arange(5, dtype=np.float32))
