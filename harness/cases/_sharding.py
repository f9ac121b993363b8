"""Multi-device cases: the sharding custom calls, recorded and replayed on eight host CPU devices.

GSPMD lowers sharding constraints to ``Sharding`` custom calls and shard_map
bodies to ``SPMDFullToShardShape``/``SPMDShardToFullShape``; those cases are
exported with ``use_shardy=False`` so that their entries hold these targets
(jax calls them today with Shardy, which imports them). Memory-kind placement
lowers to ``annotate_device_placement`` with either partitioner; that case uses
jax's default. One more case keeps a Shardy shard_map, which has no custom call.

Meshes need the worker's devices, so they are built when a case is exported
(``jit_kwargs``) or traced (shard_map), never at import. Each entry also stores
its output shardings (``shardings.json``), which a replay must reproduce.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

from jaxport.harness import Case, default_tolerance, random_matrix

NUM_DEVICES = 8
_RTOL, _ATOL = default_tolerance(np.float32)


@functools.cache
def _grid() -> jax.sharding.Mesh:
  return jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Auto, AxisType.Auto),
                       devices=jax.devices()[:NUM_DEVICES])


@functools.cache
def _row() -> jax.sharding.Mesh:
  return jax.make_mesh((NUM_DEVICES,), ("x",), axis_types=(AxisType.Explicit,),
                       devices=jax.devices()[:NUM_DEVICES])


@functools.cache
def _explicit_grid() -> jax.sharding.Mesh:
  return jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2,
                       devices=jax.devices()[:NUM_DEVICES])


def _ns(mesh, *spec, memory_kind=None) -> NamedSharding:
  return NamedSharding(mesh, P(*spec), memory_kind=memory_kind)


def _constraint(x, y):
  z = jax.lax.with_sharding_constraint(x @ y, _ns(_grid(), "b", "a"))
  return jnp.tanh(z) + 1


def _constraint_shardings():
  g = _grid()
  return {"in_shardings": (_ns(g, "a", "b"), _ns(g, "b", None)),
          "out_shardings": _ns(g, "a", None)}


def _dense(x, w):
  return jnp.tanh(x @ w)


def _dense_shardings():
  g = _explicit_grid()
  return {"in_shardings": (_ns(g, "data", None), _ns(g, None, "model")),
          "out_shardings": _ns(g, "data", "model")}


def _shard_map_body(x):
  return x * 2 + jax.lax.psum(x, "a") - jax.lax.pmean(x, "b")


def _shard_map(x):
  return shard_map(_shard_map_body, mesh=_grid(), in_specs=P("a", "b"), out_specs=P("a", "b"))(x)


def _partial_shard_map(x):
  body = shard_map(lambda v: v - jax.lax.pmean(v, "b"), mesh=_grid(), in_specs=P(None, "b"),
                   out_specs=P(None, "b"), axis_names={"b"})
  return jnp.sin(body(x))


def _grid_shardings(*spec):
  def make():
    s = _ns(_grid(), *spec)
    return {"in_shardings": s, "out_shardings": s}
  return make


def _placement(x, y):
  return x * 2 + 1, jnp.cos(y)


def _placement_shardings():
  r = _row()
  return {"in_shardings": (_ns(r, "x"), _ns(r, "x", memory_kind="pinned_host")),
          "out_shardings": (_ns(r, "x", memory_kind="pinned_host"), _ns(r, None, "x"))}


def _inputs(*shapes):
  def make():
    return tuple(random_matrix(60 + i, s, np.float32) for i, s in enumerate(shapes)), {}
  return make


def cases() -> list[Case]:
  common = dict(rtol=_RTOL, atol=_ATOL, num_devices=NUM_DEVICES)
  return [
      Case("sharding_constraint_gspmd", "sharding_gspmd", _constraint, _inputs((8, 8), (8, 4)),
           targets=("Sharding",), jit_kwargs=_constraint_shardings, use_shardy=False, **common),
      Case("explicit_mesh_gspmd", "sharding_gspmd", _dense, _inputs((8, 16), (16, 4)),
           jit_kwargs=_dense_shardings, use_shardy=False, **common),
      Case("shard_map_gspmd", "sharding_gspmd", _shard_map, _inputs((4, 8)),
           targets=("SPMDFullToShardShape", "SPMDShardToFullShape", "Sharding"),
           jit_kwargs=_grid_shardings("a", "b"), use_shardy=False, **common),
      Case("shard_map_partial_manual_gspmd", "sharding_gspmd", _partial_shard_map,
           _inputs((4, 8)), targets=("SPMDFullToShardShape", "SPMDShardToFullShape"),
           jit_kwargs=_grid_shardings(None, "b"), use_shardy=False, **common),
      Case("memory_kind_placement", "sharding_memory_kinds", _placement, _inputs((8, 2), (8, 8)),
           targets=("annotate_device_placement",), jit_kwargs=_placement_shardings, **common),
      Case("shard_map_shardy", "sharding_shardy", _shard_map, _inputs((4, 8)),
           jit_kwargs=_grid_shardings("a", "b"), **common),
  ]
