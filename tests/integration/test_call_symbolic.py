"""Records with symbolic shapes called with concrete shapes, and nested in symbolic exports."""

import re

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

X = np.linspace(-1.0, 1.0, 10, dtype=np.float32).reshape(2, 5)


def _f(x):
  return jnp.sin(x).sum(axis=0) * 2.0, x[:, :1] + 1.0


@pytest.fixture(scope="module")
def exp(exporter):
  export, symbolic_shape = exporter.export, exporter.symbolic_shape
  return export(jax.jit(_f))(jax.ShapeDtypeStruct(symbolic_shape("a, 2*b + 1"), np.float32))


def _assert_close(got, want):
  for g, w in zip(got, want):
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=1e-6)


def test_called_with_concrete_shapes_eagerly_and_under_jit(exp):
  assert str(exp.out_avals[0].shape[0]) == "2*b + 1"
  _assert_close(jaxport.call(exp)(X), _f(X))
  _assert_close(jax.jit(jaxport.call(exp))(X), _f(X))
  other = X[:1, :3]
  _assert_close(jaxport.call(exp)(other), _f(other))


def test_out_shapes_are_evaluated_from_the_solved_dimensions(exp):
  out = jax.eval_shape(jaxport.call(exp), jax.ShapeDtypeStruct((4, 7), np.float32))
  assert [o.shape for o in out] == [(7,), (4, 1)]


def test_shapes_that_do_not_fit_the_specification_are_refused(exp):
  with pytest.raises(jaxport.ShapeError, match=re.escape(
      "Division had remainder 1 when computing the value of 'b'")):
    jaxport.call(exp)(X[:, :4])


def test_constant_dimension_in_a_symbolic_spec_is_checked(exporter):
  export, symbolic_shape = exporter.export, exporter.symbolic_shape
  e = export(jax.jit(_f))(jax.ShapeDtypeStruct(symbolic_shape("a, 5"), np.float32))
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Shape mismatch for args[0].shape[1] (expected same constant): "
      "expected (a, 5) and called with (2, 4)")):
    jaxport.call(e)(X[:, :4])


def test_grad_through_a_symbolic_record_matches_jax(exp):
  loss = lambda fn: lambda x: (fn(x)[0] ** 2).sum() + fn(x)[1].sum()
  np.testing.assert_allclose(jax.grad(loss(jaxport.call(exp)))(X), jax.grad(loss(_f))(X),
                             rtol=1e-5)


def test_nested_in_a_symbolic_export(exp, exporter):
  export, symbolic_shape = exporter.export, exporter.symbolic_shape
  outer = export(jax.jit(lambda x: jaxport.call(exp)(x)[0] + 1.0))(
      jax.ShapeDtypeStruct(symbolic_shape("c, 2*d + 1"), np.float32))
  assert str(outer.out_avals[0].shape[0]) == "2*d + 1"
  assert outer.uses_global_constants
  np.testing.assert_allclose(outer.call(X), _f(X)[0] + 1.0, rtol=1e-6)
  np.testing.assert_allclose(jaxport.call(outer)(X), _f(X)[0] + 1.0, rtol=1e-6)


def test_jaxport_reads_a_symbolic_jax_blob_and_calls_it():
  e = jax.export.export(jax.jit(_f))(
      jax.ShapeDtypeStruct(jax.export.symbolic_shape("a, 2*b + 1"), np.float32))
  rec = jaxport.deserialize(e.serialize())
  assert jaxport.is_symbolic_dim(rec.in_avals[0].shape[0])
  _assert_close(jaxport.call(rec)(X), _f(X))
  _assert_close(jaxport.call(jax.export.deserialize(e.serialize()))(X), _f(X))
