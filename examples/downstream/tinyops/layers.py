"""Dense layers: a two-layer perceptron, a row normalization for any batch size and the ranking
scores the serving fleets load."""

import jax
import jax.numpy as jnp


def mlp(w1: jax.Array, w2: jax.Array, x: jax.Array) -> jax.Array:
  """Two dense layers with an activation in between."""
  return jax.nn.relu(x @ w1) @ w2


def normalize_rows(x: jax.Array) -> jax.Array:
  """Each row scaled to zero mean and unit variance (a layer norm without parameters)."""
  mean = jnp.mean(x, axis=-1, keepdims=True)
  var = jnp.var(x, axis=-1, keepdims=True)
  return (x - mean) * jax.lax.rsqrt(var + 1e-5)


def scores(w: jax.Array, x: jax.Array) -> jax.Array:
  """Ranking scores: a linear layer's softmax over the candidates of each row."""
  return jax.nn.softmax(x @ w, axis=-1)
