"""A small convolutional classifier and a transformer block, written with flax's linen API."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class CNN(nn.Module):
  """Two convolutions, pooling and a dense head: 8x8 single-channel images to 10 logits."""

  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Conv(8, (3, 3))(x))
    x = nn.avg_pool(x, (2, 2), strides=(2, 2))
    x = nn.relu(nn.Conv(16, (3, 3))(x))
    return nn.Dense(10)(x.reshape((x.shape[0], -1)))


class Block(nn.Module):
  """A pre-norm transformer block: self-attention, then a GELU feed-forward layer."""

  dim: int = 16
  heads: int = 2

  @nn.compact
  def __call__(self, x):
    h = nn.LayerNorm()(x)
    x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
    h = nn.Dense(4 * self.dim)(nn.LayerNorm()(x))
    return x + nn.Dense(self.dim)(nn.gelu(h))


def _params(module: nn.Module, example) -> dict:
  """The module's parameters as nested dicts of numpy arrays (what a service ships)."""
  params = module.init(jax.random.key(0), jnp.asarray(example))["params"]
  return jax.tree.map(np.asarray, params)


def cnn_params() -> dict:
  return _params(CNN(), np.zeros((1, 8, 8, 1), np.float32))


def classify(params: dict, images):
  """Logits of a batch of images."""
  return CNN().apply({"params": params}, images)


def block_params() -> dict:
  return _params(Block(), np.zeros((1, 6, 16), np.float32))


def encode(params: dict, tokens):
  """One transformer block over a batch of token embeddings."""
  return Block().apply({"params": params}, tokens)
