"""One AdamW step of a linear regression, with optax: parameters, optimizer state and a batch
in, updated parameters, state and the loss out."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

OPTIMIZER = optax.adamw(learning_rate=1e-2, weight_decay=1e-4)


def _loss(params, x, y):
  return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


def initial_params() -> dict:
  rng = np.random.RandomState(3)
  return {"w": rng.standard_normal((4, 3)).astype(np.float32) / 2,
          "b": np.zeros((3,), np.float32)}


# optax keeps its state in its own named tuples; the exported step takes and returns the
# state's leaves, so that a caller needs no optax type to call the artifact.
_STATE = jax.tree.structure(OPTIMIZER.init(initial_params()))


def initial_state() -> list:
  return [np.asarray(x) for x in jax.tree.leaves(OPTIMIZER.init(initial_params()))]


def train_step(params: dict, state: list, x, y):
  """The updated parameters, the optimizer state's leaves and the loss before the step."""
  loss, grads = jax.value_and_grad(_loss)(params, x, y)
  updates, new_state = OPTIMIZER.update(grads, jax.tree.unflatten(_STATE, state), params)
  return optax.apply_updates(params, updates), jax.tree.leaves(new_state), loss
