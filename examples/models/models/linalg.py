"""Linear algebra a model service ships: on CPU each lowers to LAPACK custom calls."""

import jax.numpy as jnp


def spectrum(a):
  """Eigenvalues (ascending) and eigenvectors of a symmetric matrix."""
  return tuple(jnp.linalg.eigh(a))


def cholesky(a):
  return jnp.linalg.cholesky(a)


def qr(a):
  return tuple(jnp.linalg.qr(a))


def solve(a, b):
  return jnp.linalg.solve(a, b)
