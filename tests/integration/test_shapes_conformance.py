"""Shape-polymorphic export of common jnp/lax operations, jaxport against jax.export.

Each operation is exported once with a symbolic batch dimension ``b``, then
called at two concrete batch sizes and compared with ``jax.jit`` on the same
inputs. An operation jaxport fails is taken through ``jax.export`` too; a chunk fails listing every
operation jax.export handles and jaxport does not, then any that neither handles.
"""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

SIZES = (3, 5)
F32 = np.float32


def _spd(x):
  return x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(x.shape[-1], dtype=x.dtype)


# name -> (function, shape spec, concrete shape for batch size n)
OPS = {
    "sin": (jnp.sin, "b, 4", lambda n: (n, 4)),
    "broadcast_add": (lambda x: x + jnp.arange(4, dtype=F32), "b, 4", lambda n: (n, 4)),
    "reshape_minus_one": (lambda x: x.reshape(-1), "b, 4", lambda n: (n, 4)),
    "reshape_merge": (lambda x: x.reshape((x.shape[0] * 2, 2)), "b, 4", lambda n: (n, 4)),
    "concatenate_batch": (lambda x: jnp.concatenate([x, 2 * x]), "b, 4", lambda n: (n, 4)),
    "concatenate_feature": (lambda x: jnp.concatenate([x, x[:, :1]], axis=1), "b, 4", lambda n: (n, 4)),
    "broadcast_to": (lambda x: jnp.broadcast_to(x[:, None, :], (x.shape[0], 3, 4)), "b, 4",
                     lambda n: (n, 4)),
    "matmul": (lambda x: x @ jnp.ones((4, 3), F32), "b, 4", lambda n: (n, 4)),
    "matmul_gram": (lambda x: x @ x.T, "b, 4", lambda n: (n, 4)),
    "einsum_batched": (lambda x: jnp.einsum("bij,bjk->bik", x, x), "b, 3, 3", lambda n: (n, 3, 3)),
    "sum": (lambda x: jnp.sum(x, axis=0), "b, 4", lambda n: (n, 4)),
    "mean": (jnp.mean, "b, 4", lambda n: (n, 4)),
    "max_reduce": (lambda x: jnp.max(x, axis=0), "b, 4", lambda n: (n, 4)),
    "argmax": (lambda x: jnp.argmax(x, axis=0), "b, 4", lambda n: (n, 4)),
    "slice_tail": (lambda x: x[1:], "b, 4", lambda n: (n, 4)),
    "slice_step": (lambda x: x[::2], "b, 4", lambda n: (n, 4)),
    "index_last": (lambda x: x[-1], "b, 4", lambda n: (n, 4)),
    "dynamic_slice": (lambda x: jax.lax.dynamic_slice_in_dim(x, x.shape[0] // 2, 1), "b, 4",
                      lambda n: (n, 4)),
    "dynamic_update_slice": (lambda x: jax.lax.dynamic_update_slice_in_dim(
        x, jnp.zeros((1, 4), F32), 1, axis=0), "b, 4", lambda n: (n, 4)),
    "pad": (lambda x: jnp.pad(x, ((1, 2), (0, 1))), "b, 4", lambda n: (n, 4)),
    "iota": (lambda x: x * jnp.arange(x.shape[0], dtype=F32)[:, None], "b, 4", lambda n: (n, 4)),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), "b, 4", lambda n: (n, 4)),
    "cumprod": (lambda x: jnp.cumprod(x, axis=0), "b, 4", lambda n: (n, 4)),
    "cummax": (lambda x: jax.lax.cummax(x, axis=0), "b, 4", lambda n: (n, 4)),
    "sort": (lambda x: jnp.sort(x, axis=0), "b, 4", lambda n: (n, 4)),
    "argsort": (lambda x: jnp.argsort(x, axis=0), "b, 4", lambda n: (n, 4)),
    "top_k": (lambda x: jax.lax.top_k(x, 2), "b, 4", lambda n: (n, 4)),
    "where": (lambda x: jnp.where(x > 0, x, -x), "b, 4", lambda n: (n, 4)),
    "conv1d": (lambda x: jax.lax.conv_general_dilated(
        x[:, None, :], jnp.ones((2, 1, 3), F32), (1,), "SAME"), "b, 4", lambda n: (n, 4)),
    "gather_index": (lambda x: x[jnp.array([0, 2]), 1:3], "b, 4", lambda n: (n, 4)),
    "take_along_axis": (lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1), "b, 4",
                        lambda n: (n, 4)),
    "scatter_set": (lambda x: x.at[jnp.array([0, 1])].set(0.0), "b, 4", lambda n: (n, 4)),
    "scatter_add": (lambda x: x.at[:, 1].add(x[:, 0]), "b, 4", lambda n: (n, 4)),
    "transpose": (lambda x: jnp.transpose(x, (1, 0)), "b, 4", lambda n: (n, 4)),
    "flip": (lambda x: jnp.flip(x, axis=0), "b, 4", lambda n: (n, 4)),
    "roll": (lambda x: jnp.roll(x, 1, axis=0), "b, 4", lambda n: (n, 4)),
    "tile": (lambda x: jnp.tile(x, (2, 1)), "b, 4", lambda n: (n, 4)),
    "repeat": (lambda x: jnp.repeat(x, 2, axis=0), "b, 4", lambda n: (n, 4)),
    "softmax": (lambda x: jax.nn.softmax(x, axis=0), "b, 4", lambda n: (n, 4)),
    "logsumexp": (lambda x: jax.nn.logsumexp(x, axis=0), "b, 4", lambda n: (n, 4)),
    "clip": (lambda x: jnp.clip(x, -0.5, 0.5), "b, 4", lambda n: (n, 4)),
    "dim_as_value": (lambda x: x / x.shape[0], "b, 4", lambda n: (n, 4)),
    "ones_like_batch": (lambda x: jnp.ones((x.shape[0], 2), F32) + x[:, :2], "b, 4", lambda n: (n, 4)),
    "avg_pool": (lambda x: jax.lax.reduce_window(x, 0.0, jax.lax.add, (2, 1), (1, 1), "VALID"), "b, 4",
                 lambda n: (n, 4)),
    "diff": (lambda x: jnp.diff(x, axis=0), "b, 4", lambda n: (n, 4)),
    "outer": (lambda x: jnp.outer(x[:, 0], x[:, 1]), "b, 4", lambda n: (n, 4)),
    "expand_squeeze": (lambda x: jnp.squeeze(jnp.expand_dims(x, 1), 1) * 2, "b, 4", lambda n: (n, 4)),
    "triu": (lambda x: jnp.triu(x @ x.T), "b, 4", lambda n: (n, 4)),
    "linalg_cholesky": (lambda x: jnp.linalg.cholesky(_spd(x)), "b, 3, 3", lambda n: (n, 3, 3)),
    "linalg_inv": (lambda x: jnp.linalg.inv(_spd(x)), "b, 3, 3", lambda n: (n, 3, 3)),
    "linalg_solve": (lambda x: jnp.linalg.solve(_spd(x), x[..., :1]), "b, 3, 3", lambda n: (n, 3, 3)),
    "linalg_det": (lambda x: jnp.linalg.det(_spd(x)), "b, 3, 3", lambda n: (n, 3, 3)),
    "linalg_qr": (lambda x: jnp.linalg.qr(_spd(x))[1], "b, 3, 3", lambda n: (n, 3, 3)),
    "while_loop_batch_trips": (lambda x: jax.lax.fori_loop(0, x.shape[0], lambda i, c: c + x[i], x[0]),
                               "b, 4", lambda n: (n, 4)),
}


def _inputs(shape_of):
  rng = np.random.default_rng(0)
  return [rng.standard_normal(shape_of(n)).astype(F32) for n in SIZES]


def _check(export_fn, call_fn, fn, spec, shape_of):
  """None when exported ``fn`` matches jax.jit at both sizes, else what went wrong."""
  try:
    exp = export_fn(jax.jit(fn))(jax.ShapeDtypeStruct(
        jax.export.symbolic_shape(spec) if export_fn is jax.export.export
        else jaxport.symbolic_shape(spec), F32))
    for x in _inputs(shape_of):
      got = call_fn(exp)(x)
      want = jax.jit(fn)(x)
      jax.tree.map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5), got, want)
  except Exception as e:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
  return None


CHUNKS = 4


def test_table_is_large_enough():
  assert len(OPS) >= 40


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_jaxport_exports_what_jax_exports(chunk):
  names = sorted(OPS)[chunk::CHUNKS]
  missing, both_fail = [], []
  for name in names:
    fn, spec, shape_of = OPS[name]
    mine = _check(jaxport.export, jaxport.call, fn, spec, shape_of)
    if mine is None:
      continue
    # Only a failure is taken through jax.export: it says whether jax handles the operation.
    theirs = _check(jax.export.export, lambda e: e.call, fn, spec, shape_of)
    (missing if theirs is None else both_fail).append(f"{name}: {mine}")
  assert not missing, "jax.export handles these and jaxport does not:\n" + "\n".join(missing)
  assert not both_fail, "neither jaxport nor jax.export handles these:\n" + "\n".join(both_fail)
