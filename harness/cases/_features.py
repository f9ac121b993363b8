"""Cases for export features that use no custom call beyond ``shape_assertion``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from harness.cases import _effects
from jaxport.harness import Case, default_tolerance, random_matrix

_RTOL, _ATOL = default_tolerance(np.float32)


def _poly_sum(x):
  return jnp.sum(jnp.sin(x), axis=0) * x.shape[0]


def _multi_platform(x):
  return jnp.cos(x) * 3 + jnp.tanh(x)


def _ordered_effects(x):
  y = _effects.ordered_double(x)
  return _effects.ordered_double(jnp.sin(y))


def _kwargs_pytree(x, *, params):
  w0, w1 = params["layers"]
  return {"out": jnp.tanh(x @ w0) @ w1 * params["scale"], "norm": jnp.sum(x * x)}


def _vjp(x, y):
  return jnp.sin(x) * y, jnp.sum(jnp.exp(x / 4))


def _prng(key, x):
  k1, k2 = jax.random.split(key)
  return x + jax.random.uniform(k1, x.shape, dtype=x.dtype), k2


def _kwargs_inputs():
  x = random_matrix(21, (2, 3), np.float32)
  params = {"layers": [random_matrix(22, (3, 4), np.float32), random_matrix(23, (4, 2), np.float32)],
            "scale": np.float32(0.5)}
  return (x,), {"params": params}


def _prng_inputs():
  key = jax.random.key(7, impl="threefry2x32")
  return (key, random_matrix(31, (3,), np.float32)), {}


def cases() -> list[Case]:
  common = dict(rtol=_RTOL, atol=_ATOL)
  return [
      Case("shape_poly_sum", "feature_shape_poly", _poly_sum,
           lambda: ((random_matrix(11, (3, 4), np.float32),), {}),
           targets=("shape_assertion",), polymorphic_shapes=("b, 4",),
           constraints=("b <= 64",), **common),
      Case("multi_platform_cpu_cuda", "feature_multi_platform", _multi_platform,
           lambda: ((random_matrix(12, (5,), np.float32),), {}),
           platforms=("cpu", "cuda"), **common),
      Case("ordered_effects", "feature_effects", _ordered_effects,
           lambda: ((random_matrix(13, (4,), np.float32),), {}), **common),
      Case("kwargs_pytree", "feature_pytrees", _kwargs_pytree, _kwargs_inputs, **common),
      Case("vjp_order1", "feature_vjp", _vjp,
           lambda: ((random_matrix(14, (3,), np.float32), random_matrix(15, (3,), np.float32)), {}),
           vjp_order=1, **common),
      Case("prng_key_threefry", "feature_prng", _prng, _prng_inputs, **common),
  ]
