"""``jax.vmap`` of a called Exported matches ``jax.vmap`` of the original function.

The default batches with a loop over the batch; ``vmap_method="fold_leading_dim"``
folds the batch into a symbolic leading dimension the caller declares mapped.
Records from both exporters (``exporter`` fixture) are called by jaxport.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

RNG = np.random.default_rng(0)
XS = RNG.normal(size=(4, 5, 3)).astype(np.float32)
YS = RNG.normal(size=(4, 5, 3)).astype(np.float32)


def _rowwise(x, y):
  return jnp.sin(x) * y + jnp.cos(y), jnp.sum(x * y, axis=1)


def _export(exporter, fun, spec, count):
  if spec is None:
    specs = [jax.ShapeDtypeStruct(XS.shape[1:], np.float32)] * count
  else:
    specs = exporter.symbolic_args_specs([XS[0]] * count, spec)
  return exporter.export(jax.jit(fun))(*specs)


def _close(got, want):
  for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spec", [None, "n, 3"], ids=["static", "polymorphic"])
@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (2, 0)], ids=["both0", "axis1_unbatched", "axis2"])
def test_vmap_of_call_matches_vmap_of_function(exporter, spec, in_axes):
  exp = _export(exporter, _rowwise, spec, 2)
  xs = np.moveaxis(XS, 0, in_axes[0])
  ys = YS[0] if in_axes[1] is None else YS
  want = jax.vmap(_rowwise, in_axes=in_axes)(xs, ys)
  _close(jax.vmap(jaxport.call(exp), in_axes=in_axes)(xs, ys), want)
  _close(jax.jit(jax.vmap(jaxport.call(exp), in_axes=in_axes))(xs, ys), want)
  if spec is not None:
    fold = jaxport.call(exp, vmap_method="fold_leading_dim")
    _close(jax.vmap(fold, in_axes=in_axes)(xs, ys), want)
    _close(jax.jit(jax.vmap(fold, in_axes=in_axes))(xs, ys), want)


def test_folding_binds_one_call_on_the_folded_shape():
  exp = _export(jaxport, _rowwise, "n, 3", 2)
  folded = str(jax.make_jaxpr(jax.vmap(jaxport.call(exp, vmap_method="fold_leading_dim")))(XS, YS))
  assert folded.count("call_exported[") == 1 and "f32[20,3] = reshape" in folded
  assert "scan[" not in folded
  loop = str(jax.make_jaxpr(jax.vmap(jaxport.call(exp)))(XS, YS))
  assert "scan[" in loop and "f32[20,3]" not in loop


def test_default_vmap_is_right_for_a_reduction_over_the_polymorphic_dimension(exporter):
  # sum over axis 0 is polymorphic in n but does not map over it: folding would be wrong.
  exp = _export(exporter, lambda x: jnp.sum(x, axis=0), "n, 3", 1)
  _close(jax.vmap(jaxport.call(exp))(XS), jax.vmap(lambda x: jnp.sum(x, axis=0))(XS))


def test_vmap_of_call_under_grad_matches_the_function():
  exp = _export(jaxport, _rowwise, "n, 3", 2)
  loss = lambda g: lambda x: jnp.sum(jax.vmap(g)(x, YS)[0])
  _close(jax.grad(loss(jaxport.call(exp)))(XS), jax.grad(loss(_rowwise))(XS))


def test_vmap_of_call_with_a_symbolic_batch_inside_an_export():
  exp = _export(jaxport, _rowwise, "n, 3", 2)
  outer = jaxport.export(jax.jit(jax.vmap(jaxport.call(exp, vmap_method="fold_leading_dim"))))(
      *jaxport.symbolic_args_specs([XS, YS], "b, n, 3"))
  _close(outer.call(XS, YS), jax.vmap(_rowwise)(XS, YS))


@pytest.mark.parametrize("fun, spec, why", [
    (_rowwise, None, "leading dimension 5 is not a dimension variable"),
    (lambda x, y: (x * 2, y * 2), "n, 3; m, 3", "one leading dimension variable shared"),
    (lambda x: x @ x.T, "n, 3", "uses it in another dimension too"),
    (lambda x: jnp.sum(x), "n, 3", "is a scalar"),
])
def test_folding_is_refused_where_the_export_cannot_fold(exporter, fun, spec, why):
  if spec is None:
    exp = _export(exporter, fun, spec, 2)
  else:
    specs = exporter.symbolic_args_specs([XS[0]] * (spec.count(";") + 1), spec.split("; "))
    exp = exporter.export(jax.jit(fun))(*specs)
  with pytest.raises(jaxport.CallError, match=why):
    jaxport.call(exp, vmap_method="fold_leading_dim")


def test_unknown_vmap_method_lists_the_valid_ones():
  exp = _export(jaxport, _rowwise, None, 2)
  with pytest.raises(jaxport.CallError, match="'sequential', 'fold_leading_dim'"):
    jaxport.call(exp, vmap_method="expand_dims")
