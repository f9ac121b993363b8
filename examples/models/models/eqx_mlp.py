"""An equinox MLP. The exported function takes the model's arrays as a list (its leaves) and
rebuilds the model from its static part, so a caller needs no equinox type."""

import equinox as eqx
import jax
import numpy as np

_MODEL = eqx.nn.MLP(in_size=4, out_size=2, width_size=16, depth=2, key=jax.random.key(1))
_ARRAYS, _STATIC = eqx.partition(_MODEL, eqx.is_array)
_TREE = jax.tree.structure(_ARRAYS)


def weights() -> list:
  return [np.asarray(x) for x in jax.tree.leaves(_ARRAYS)]


def predict(leaves: list, x):
  """The MLP on each row of ``x``."""
  model = eqx.combine(jax.tree.unflatten(_TREE, leaves), _STATIC)
  return jax.vmap(model)(x)
