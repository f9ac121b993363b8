"""Linear algebra: whitening a batch of samples through a Cholesky factor (LAPACK on CPU)."""

import jax
import jax.numpy as jnp


def whiten(x: jax.Array) -> jax.Array:
  """The Cholesky factor of the regularized covariance of the rows of ``x``."""
  centered = x - jnp.mean(x, axis=0)
  cov = centered.T @ centered / x.shape[0] + 1e-3 * jnp.eye(x.shape[1], dtype=x.dtype)
  return jnp.linalg.cholesky(cov)
