"""Sharded functions exported by the sharding tests; imported only with eight CPU devices.

Each case is a jitted function with its shardings, numpy arguments, how to
place each argument on the devices before a call (None: pass the numpy array),
and the mesh to call it under (None: no mesh context).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P, SingleDeviceSharding

AUTO, EXPLICIT, MANUAL = AxisType.Auto, AxisType.Explicit, AxisType.Manual

MESH_X8 = jax.make_mesh((8,), ("x",), axis_types=(AUTO,))
MESH_2X4 = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AUTO, AUTO))
MESH_4X2_EXPLICIT = jax.make_mesh((4, 2), ("a", "b"), axis_types=(EXPLICIT, EXPLICIT))
MESH_2X2X2_MIXED = jax.make_mesh((2, 2, 2), ("p", "q", "r"), axis_types=(AUTO, EXPLICIT, AUTO))
MESH_2X4_CD = jax.make_mesh((2, 4), ("c", "d"), axis_types=(AUTO, AUTO))
MESH_2X4_EXPLICIT = jax.make_mesh((2, 4), ("a", "b"), axis_types=(EXPLICIT, EXPLICIT))


def ns(mesh, *spec, memory_kind: str | None = None) -> NamedSharding:
  return NamedSharding(mesh, P(*spec), memory_kind=memory_kind)


def arr(shape, seed: int = 0) -> np.ndarray:
  return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class ShardedCase:
  name: str
  fun: Callable[..., Any]  # a jax.jit result
  args: tuple[Any, ...]
  placements: tuple[Any, ...]  # per argument: a concrete sharding, or None
  mesh: Any = None
  kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
  kwarg_placements: dict[str, Any] = dataclasses.field(default_factory=dict)

  def specs(self):
    """ShapeDtypeStructs of the arguments (args, kwargs), carrying their placements."""
    def spec(x, s):
      return jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype, sharding=s)
    args = tuple(spec(x, s) for x, s in zip(self.args, self.placements))
    kwargs = {k: spec(v, self.kwarg_placements.get(k)) for k, v in self.kwargs.items()}
    return args, kwargs

  def placed(self):
    """The arguments on their devices, as a caller would pass them."""
    def put(x, s):
      return x if s is None else jax.device_put(x, s)
    args = tuple(put(x, s) for x, s in zip(self.args, self.placements))
    kwargs = {k: put(v, self.kwarg_placements.get(k)) for k, v in self.kwargs.items()}
    return args, kwargs


def _explicit_matmul(x, y):
  z = jnp.einsum("ij,jk->ik", x, y, out_sharding=P("a", None))
  return jax.sharding.reshard(z, P(None, "b"))


def _cases() -> list[ShardedCase]:
  m8, m24, m42e, m222 = MESH_X8, MESH_2X4, MESH_4X2_EXPLICIT, MESH_2X2X2_MIXED
  row, grid = ns(m8, "x"), ns(m24, "a", "b")
  host = ns(m8, "x", memory_kind="pinned_host")
  dev1 = SingleDeviceSharding(jax.devices()[3])
  return [
      ShardedCase("row_over_8", jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=row,
                                        out_shardings=ns(m8)),
                  (arr((16, 4)),), (row,), m8),
      ShardedCase("grid_2x4_two_outputs",
                  jax.jit(lambda x, y: (x @ y, x.sum(0)),
                          in_shardings=(grid, ns(m24, "b", None)),
                          out_shardings=(ns(m24, "a", None), ns(m24, "b"))),
                  (arr((8, 8)), arr((8, 4), 1)), (grid, ns(m24, "b", None)), m24),
      ShardedCase("unspecified_mixed",
                  jax.jit(lambda x, y, z: (x + 1, y * z), in_shardings=(ns(m24, "a"), None, None)),
                  (arr((4, 4)), arr((3,), 1), arr((3,), 2)), (ns(m24, "a"), None, None), m24),
      ShardedCase("tuple_of_axes",
                  jax.jit(lambda x: x.T, in_shardings=ns(m24, ("a", "b")),
                          out_shardings=ns(m24, None, ("b", "a"))),
                  (arr((8, 2)),), (ns(m24, ("a", "b")),), m24),
      ShardedCase("explicit_axes",
                  jax.jit(lambda x: x * 3, in_shardings=ns(m42e, "a", "b"),
                          out_shardings=ns(m42e, "b", "a")),
                  (arr((8, 8)),), (ns(m42e, "a", "b"),), m42e),
      ShardedCase("mixed_axis_types",
                  jax.jit(jnp.cos, in_shardings=ns(m222, "p", ("q", "r")),
                          out_shardings=ns(m222, "q")),
                  (arr((4, 8)),), (ns(m222, "p", ("q", "r")),), m222),
      ShardedCase("sharding_in_types",
                  jax.jit(_explicit_matmul),
                  (arr((8, 8)), arr((8, 8), 1)),
                  (ns(MESH_2X4_EXPLICIT, "a", "b"), ns(MESH_2X4_EXPLICIT, "b", None)),
                  MESH_2X4_EXPLICIT),
      ShardedCase("constraint_inside",
                  jax.jit(lambda x: jax.lax.with_sharding_constraint(x * 2, ns(m24, "b", "a")) + 1,
                          in_shardings=ns(m24, "a")),
                  (arr((8, 8)),), (ns(m24, "a"),), m24),
      ShardedCase("shard_map_all_axes",
                  jax.jit(shard_map(lambda x: x * 2 + jax.lax.psum(x, "a"), mesh=m24,
                                    in_specs=P("a", "b"), out_specs=P("a", "b"))),
                  (arr((4, 8)),), (grid,), m24),
      ShardedCase("shard_map_partial_manual",
                  jax.jit(shard_map(lambda x: x - jax.lax.pmean(x, "b"), mesh=m24,
                                    in_specs=P(None, "b"), out_specs=P(None, "b"),
                                    axis_names={"b"})),
                  (arr((4, 8)),), (ns(m24, None, "b"),), m24),
      ShardedCase("pinned_host_output",
                  jax.jit(lambda x: x * 2, in_shardings=row, out_shardings=host),
                  (arr((8, 2)),), (row,), m8),
      ShardedCase("pinned_host_input",
                  jax.jit(lambda x: x + 1, in_shardings=host,
                          out_shardings=ns(m8, "x", memory_kind="device")),
                  (arr((8, 2)),), (host,), m8),
      ShardedCase("two_meshes",
                  jax.jit(lambda x, y: (x * 2, y + 1), in_shardings=(ns(m24, "a"), row),
                          out_shardings=(ns(MESH_2X4_CD, "c"), ns(m8))),
                  (arr((8, 4)), arr((8,), 1)), (ns(m24, "a"), row), m24),
      ShardedCase("replicated_scalar",
                  jax.jit(lambda x, s: x * s, in_shardings=(row, ns(m8)), out_shardings=row),
                  (arr((8,)), np.float32(3)), (row, ns(m8)), m8),
      ShardedCase("kwargs_and_unused_argument",
                  jax.jit(lambda x, unused, *, w: x * w,
                          in_shardings=None, out_shardings=grid),
                  (arr((4, 8)), arr((2,), 1)), (grid, None), m24,
                  kwargs={"w": arr((4, 8), 2)}, kwarg_placements={"w": ns(m24, None, "b")}),
      ShardedCase("single_device",
                  jax.jit(lambda x: x + 1, in_shardings=dev1, out_shardings=dev1),
                  (arr((3,)),), (dev1,), None),
  ]


CASES: dict[str, ShardedCase] = {c.name: c for c in _cases()}
