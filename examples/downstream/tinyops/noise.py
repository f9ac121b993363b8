"""Functions with a gradient rule of their own and with a random key: a clipped activation
whose backward pass lets gradients through where it clips, and a noisy step taking its key
first, as JAX code usually does."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def soft_clip(x: jax.Array) -> jax.Array:
  """``x`` squashed into (-1, 1) by tanh."""
  return jnp.tanh(x)


def _soft_clip_fwd(x: jax.Array) -> tuple[jax.Array, jax.Array]:
  return jnp.tanh(x), x


def _soft_clip_bwd(x: jax.Array, g: jax.Array) -> tuple[jax.Array]:
  # Straight through where tanh saturates: never less than a tenth of the incoming gradient.
  return (g * jnp.maximum(1 - jnp.tanh(x) ** 2, 0.1),)


soft_clip.defvjp(_soft_clip_fwd, _soft_clip_bwd)


def jitter(key: jax.Array, x: jax.Array) -> jax.Array:
  """``x`` moved by Gaussian noise of scale 0.1 drawn from ``key``."""
  return x + 0.1 * jax.random.normal(key, x.shape, x.dtype)
