"""jaxport.call under jit, nested in another export, under grad and vjp, and on
records deserialized from jax's blobs; multi-platform records pick the caller's branch."""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport

X = np.linspace(-1.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
I = np.arange(6, dtype=np.int32).reshape(2, 3)


def _f(p, i, *, scale):
  """Several outputs, a pytree argument, an integer input and output, a kwarg."""
  y = jnp.sin(p["a"]) * p["b"] * scale
  return {"y": y, "n": i * 2, "s": jnp.cos(p["a"] * i).sum()}


def _args():
  return ({"a": X, "b": X + 0.5}, I), {"scale": np.float32(1.5)}


def _specs():
  args, kwargs = _args()
  return jax.tree.map(lambda v: jax.ShapeDtypeStruct(np.shape(v), np.asarray(v).dtype),
                      (args, kwargs))


@pytest.fixture(scope="module")
def exp(exporter):
  export = exporter.export
  args, kwargs = _specs()
  return export(jax.jit(_f))(*args, **kwargs)


def _loss(fn):
  def loss(a):
    (p, i), kwargs = _args()
    out = fn({"a": a, "b": p["b"]}, i, **kwargs)
    return (out["y"] ** 2).sum() + out["s"]
  return loss


def _assert_tree_close(got, want):
  assert jax.tree.structure(got) == jax.tree.structure(want)
  for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
    assert np.asarray(g).dtype == np.asarray(w).dtype
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_eager_and_jit_match_the_original(exp):
  args, kwargs = _args()
  want = _f(*args, **kwargs)
  _assert_tree_close(jaxport.call(exp)(*args, **kwargs), want)
  _assert_tree_close(jax.jit(jaxport.call(exp))(*args, **kwargs), want)


def test_first_and_second_order_grad_match_jax(exp):
  _assert_tree_close(jax.grad(_loss(jaxport.call(exp)))(X), jax.grad(_loss(_f))(X))
  second = lambda fn: jax.grad(lambda a: jax.grad(_loss(fn))(a).sum())
  _assert_tree_close(second(jaxport.call(exp))(X), second(_f)(X))


def test_grad_under_jit(exp):
  _assert_tree_close(jax.jit(jax.grad(_loss(jaxport.call(exp))))(X), jax.grad(_loss(_f))(X))


def test_vjp_with_integer_cotangents_matches_jax(exp):
  """Integer outputs take float0 cotangents; an integer array of zeros is accepted too."""
  args, kwargs = _args()
  out, pullback = jax.vjp(lambda p, i: jaxport.call(exp)(p, i, **kwargs), *args)
  _, want_pullback = jax.vjp(lambda p, i: _f(p, i, **kwargs), *args)
  ct = {"y": np.ones_like(X), "n": np.zeros_like(I), "s": np.float32(2.0)}
  got, want = pullback(ct), want_pullback({**ct, "n": np.zeros(I.shape, jax.dtypes.float0)})
  _assert_tree_close(got[0], want[0])
  assert got[1].dtype == jax.dtypes.float0 and got[1].shape == I.shape


def test_grad_through_records_deserialized_from_jax_blobs():
  args, kwargs = _specs()
  exp = jax.export.export(jax.jit(_f))(*args, **kwargs)
  twice = jax.export.deserialize(exp.serialize(vjp_order=2))
  second = lambda fn: jax.grad(lambda a: jax.grad(_loss(fn))(a).sum())
  _assert_tree_close(second(jaxport.call(twice))(X), second(_f)(X))
  once = jax.export.deserialize(exp.serialize(vjp_order=1))
  _assert_tree_close(jax.grad(_loss(jaxport.call(once)))(X), jax.grad(_loss(_f))(X))
  with pytest.raises(ValueError, match="No VJP is available"):
    second(jaxport.call(once))(X)


def test_jaxport_deserialized_record_of_a_jax_blob_can_be_called():
  specs_args, specs_kwargs = _specs()
  exp = jax.export.export(jax.jit(_f))(*specs_args, **specs_kwargs)
  rec = jaxport.deserialize(exp.serialize(vjp_order=1))
  args, kwargs = _args()
  _assert_tree_close(jaxport.call(rec)(*args, **kwargs), _f(*args, **kwargs))
  _assert_tree_close(jax.grad(_loss(jaxport.call(rec)))(X), jax.grad(_loss(_f))(X))


def test_jax_calls_a_blob_serialized_by_jaxport():
  """The other direction: a blob written by jaxport, read by jax.export.deserialize, called with jaxport.call."""
  specs_args, specs_kwargs = _specs()
  mine = jaxport.export(jax.jit(_f))(*specs_args, **specs_kwargs)
  theirs = jax.export.deserialize(mine.serialize())
  args, kwargs = _args()
  _assert_tree_close(jaxport.call(theirs)(*args, **kwargs), _f(*args, **kwargs))


def test_nesting_inside_another_export(exp, exporter):
  export = exporter.export
  args, kwargs = _args()
  specs_args, specs_kwargs = _specs()
  outer = export(jax.jit(lambda p, i, *, scale: jaxport.call(exp)(p, i, scale=scale)))(
      *specs_args, **specs_kwargs)
  assert "call_exported__f" in outer.mlir_module()
  _assert_tree_close(outer.call(*args, **kwargs), _f(*args, **kwargs))
  _assert_tree_close(jaxport.call(outer)(*args, **kwargs), _f(*args, **kwargs))


def test_callees_with_clashing_names_are_renamed_apart(exporter):
  """Two different modules whose functions share names get distinct private names."""
  export = exporter.export
  sin_exp = export(jax.jit(lambda x: jnp.sin(x)))(X)
  cos_exp = export(jax.jit(lambda x: jnp.cos(x)))(X)
  both = lambda x: (jaxport.call(sin_exp)(x), jaxport.call(cos_exp)(x))
  text = jax.jit(both).lower(X).as_text()
  assert "func.func private @call_exported__lambda_(" in text
  assert "func.func private @call_exported__lambda__0(" in text
  got_sin, got_cos = jax.jit(both)(X)
  np.testing.assert_allclose(got_sin, np.sin(X), rtol=1e-6)
  np.testing.assert_allclose(got_cos, np.cos(X), rtol=1e-6)


def _by_platform(x):
  return lax.platform_dependent(x, cpu=lambda x: x + 1.0, default=lambda x: x - 1.0)


def test_multi_platform_record_runs_the_cpu_branch_on_cpu(exporter):
  export = exporter.export
  e = export(jax.jit(_by_platform), platforms=["tpu", "cpu", "cuda"])(X)
  caller_main = jax.jit(jaxport.call(e)).lower(X).as_text().split("func.func private")[0]
  assert "stablehlo.case" not in caller_main
  assert "stablehlo.constant dense<1> : tensor<i32>" in caller_main
  np.testing.assert_allclose(jaxport.call(e)(X), X + 1.0)


def test_multi_platform_caller_selects_the_callee_branch_with_a_case(exporter):
  export = exporter.export
  inner = export(jax.jit(_by_platform), platforms=["tpu", "cpu", "cuda"])(X)
  outer = export(jax.jit(jaxport.call(inner)), platforms=["cuda", "cpu"])(X)
  text = outer.mlir_module()
  assert "stablehlo.case" in text
  np.testing.assert_allclose(outer.call(X), X + 1.0)
  with pytest.raises(jaxport.CallError, match="exported for platforms"):
    export(jax.jit(jaxport.call(inner)), platforms=["cpu", "rocm"])(X)


def test_disabled_platform_check_runs_the_first_platform(exporter):
  export, disabled = exporter.export, exporter.DisabledSafetyCheck
  e = export(jax.jit(_by_platform), platforms=["tpu", "cuda"],
             disabled_checks=[disabled.platform()])(X)
  np.testing.assert_allclose(jaxport.call(e)(X), X - 1.0)
