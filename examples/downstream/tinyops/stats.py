"""Running statistics: a pytree type of tinyops' own, passed into and out of exported functions.

A serialized function records the tree structure of its arguments and results.
A type of one's own must be registered twice: as a pytree node with jax, and
for serialization under a stable name, through jaxport, which registers it with
``jax.export`` too, so that both can read the artifact back (a consumer loading
it with plain jax registers it with ``jax.export`` under the same name). The
registration runs when this module is imported, which happens whenever
``tinyops`` is: the harness's worker imports the case module, which imports
``tinyops``.
"""

import dataclasses

import jax
import jax.numpy as jnp
import jaxport


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class RunningStats:
  """Count, mean and sum of squared deviations of the samples seen so far (Welford)."""

  count: jax.Array
  mean: jax.Array
  m2: jax.Array


# register_dataclass's auxiliary data is empty (RunningStats has no static fields).
jaxport.register_pytree_node_serialization(
    RunningStats, serialized_name="tinyops.RunningStats",
    serialize_auxdata=lambda aux: b"", deserialize_auxdata=lambda data: ())


def update_stats(stats: RunningStats, batch: jax.Array) -> RunningStats:
  """``stats`` after also seeing the rows of ``batch`` (Chan's parallel update)."""
  n = jnp.asarray(batch.shape[0], stats.count.dtype)
  batch_mean = jnp.mean(batch, axis=0)
  batch_m2 = jnp.sum((batch - batch_mean) ** 2, axis=0)
  total = stats.count + n
  delta = batch_mean - stats.mean
  return RunningStats(count=total, mean=stats.mean + delta * n / total,
                      m2=stats.m2 + batch_m2 + delta ** 2 * stats.count * n / total)
