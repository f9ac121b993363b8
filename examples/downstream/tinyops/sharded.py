"""A layer sharded over eight devices: a 4 x 2 mesh, batch over ``data``, features over
``model``, and a ``shard_map`` that centres each shard's features across ``model``.

tinyops ships it as a ``jax.jit`` object (:func:`sharded_dense`) over a mesh of the devices
of the process that builds it, so it is built when called, never at import: on a machine of
fewer devices, jax's host platform simulates them
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``, which the compat harness sets for
a case of ``num_devices=8``).
"""

import functools

import jax
import jax.numpy as jnp
from jax import shard_map
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

NUM_DEVICES = 8


@functools.cache
def mesh() -> jax.sharding.Mesh:
  """The 4 x 2 mesh of the first eight devices (``data``, ``model``)."""
  return jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto),
                       devices=jax.devices()[:NUM_DEVICES])


def _centred(block):
  return block - jax.lax.pmean(block, "model")


def dense(x, w):
  """``tanh(x @ w)``, each row's features centred over the ``model`` axis of the mesh."""
  y = jnp.tanh(x @ w)
  return shard_map(_centred, mesh=mesh(), in_specs=P("data", "model"),
                   out_specs=P("data", "model"))(y)


def sharded_dense():
  """:func:`dense` as tinyops ships it: jitted with its inputs' and output's shardings."""
  m = mesh()
  return jax.jit(dense, in_shardings=(NamedSharding(m, P("data", None)),
                                      NamedSharding(m, P(None, "model"))),
                 out_shardings=NamedSharding(m, P("data", "model")))
