"""Mappings between jax objects and their wire values; serde's only use of jax internals.

Each mapping is written once, in the writing direction, and the reading
direction is derived from it (``invert``), so the two cannot drift. The enum
numbers come from the generated schema module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

import jax.random  # noqa: F401  (registers the PRNG implementations)
import ml_dtypes
import numpy as np
from jax._src import core, dtypes, effects, mesh
from jax._src.random import prng
from jax._src.lib import xla_client
from jax._src.numpy import linalg, setops
from jax._src.scipy.stats import _core as stats_core
from jax.sharding import AxisType

from jaxport._platforms import wire_platform_of_device_kind
from jaxport.serde import _schema_generated as fb

K = TypeVar("K")
V = TypeVar("V")


def invert(forward: Mapping[K, V]) -> dict[V, K]:
  """The reverse of a one-to-one mapping; refuses two keys sharing a value."""
  reverse: dict[V, K] = {}
  for k, v in forward.items():
    if v in reverse:
      raise AssertionError(f"wire value {v} is used for both {reverse[v]} and {k}")
    reverse[v] = k
  return reverse


DTYPE_TO_WIRE: dict[Any, int] = {
    np.dtype(np.bool_): fb.DType.bool,
    np.dtype(np.int8): fb.DType.i8,
    np.dtype(np.int16): fb.DType.i16,
    np.dtype(np.int32): fb.DType.i32,
    np.dtype(np.int64): fb.DType.i64,
    np.dtype(np.uint8): fb.DType.ui8,
    np.dtype(np.uint16): fb.DType.ui16,
    np.dtype(np.uint32): fb.DType.ui32,
    np.dtype(np.uint64): fb.DType.ui64,
    np.dtype(np.float16): fb.DType.f16,
    np.dtype(np.float32): fb.DType.f32,
    np.dtype(np.float64): fb.DType.f64,
    np.dtype(np.complex64): fb.DType.c64,
    np.dtype(np.complex128): fb.DType.c128,
    np.dtype(ml_dtypes.bfloat16): fb.DType.bf16,
    np.dtype(ml_dtypes.int4): fb.DType.i4,
    np.dtype(ml_dtypes.uint4): fb.DType.ui4,
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): fb.DType.f8_e4m3b11fnuz,
    np.dtype(ml_dtypes.float8_e4m3fn): fb.DType.f8_e4m3fn,
    np.dtype(ml_dtypes.float8_e4m3fnuz): fb.DType.f8_e4m3fnuz,
    np.dtype(ml_dtypes.float8_e5m2): fb.DType.f8_e5m2,
    np.dtype(ml_dtypes.float8_e5m2fnuz): fb.DType.f8_e5m2fnuz,
    dtypes.float0: fb.DType.f0,
    np.dtype(ml_dtypes.float8_e4m3): fb.DType.f8_e4m3,
    np.dtype(ml_dtypes.float8_e3m4): fb.DType.f8_e3m4,
    np.dtype(ml_dtypes.float8_e8m0fnu): fb.DType.f8_e8m0fnu,
    np.dtype(ml_dtypes.float4_e2m1fn): fb.DType.f4_e2m1fn,
    prng.KeyTy(prng.prngs["threefry2x32"]): fb.DType.key_fry,
    prng.KeyTy(prng.prngs["rbg"]): fb.DType.key_rbg,
    prng.KeyTy(prng.prngs["unsafe_rbg"]): fb.DType.key_unsafe_rbg,
}
WIRE_TO_DTYPE = invert(DTYPE_TO_WIRE)

MEMORY_SPACE_TO_WIRE: dict[Any, int] = {
    core.MemorySpace.Device: fb.MemorySpace.Device,
    core.MemorySpace.Host: fb.MemorySpace.Host,
    core.MemorySpace.Any: fb.MemorySpace.Any,
}
WIRE_TO_MEMORY_SPACE = invert(MEMORY_SPACE_TO_WIRE)
# Written before the field existed: the default memory space.
WIRE_TO_MEMORY_SPACE[fb.MemorySpace.Missing] = core.MemorySpace.Device

AXIS_TYPE_TO_WIRE: dict[Any, int] = {
    AxisType.Auto: fb.AxisType.Auto,
    AxisType.Explicit: fb.AxisType.Explicit,
    AxisType.Manual: fb.AxisType.Manual,
}
WIRE_TO_AXIS_TYPE = invert(AXIS_TYPE_TO_WIRE)

ShapedArray = core.ShapedArray
AbstractDevice = mesh.AbstractDevice


def aval_with_sharding(aval: Any, sharding: Any) -> Any:
  """``aval`` carrying ``sharding`` (normalized to its rank), as jax's own avals do."""
  return core.update_aval_with_sharding(aval, sharding)


def named_to_hlo_sharding(sharding: Any, ndim: int) -> Any:
  """The HloSharding equivalent of a NamedSharding for a rank-``ndim`` value."""
  return None if sharding is None else sharding._to_xla_hlo_sharding(ndim)


def hlo_sharding_from_proto(proto_bytes: bytes) -> Any:
  """An HloSharding from serialized OpSharding bytes (the pre-2026 layout); a ValueError naming
  the inconsistency for a proto XLA would refuse (checked here first, so that XLA's native
  check never runs and prints its stack trace)."""
  proto = xla_client.OpSharding()
  proto.ParseFromString(proto_bytes)
  _check_op_sharding(proto, "")
  return xla_client.HloSharding.from_proto(proto)


def _check_op_sharding(proto: Any, at: str, depth: int = 0) -> None:
  """Refuse an OpSharding whose fields contradict each other (the checks XLA makes natively)."""
  kinds = xla_client.OpSharding.Type
  dims = [int(d) for d in proto.tile_assignment_dimensions]
  devices = [int(d) for d in proto.tile_assignment_devices]
  reshape = [int(d) for d in proto.iota_reshape_dims]
  perm = [int(d) for d in proto.iota_transpose_perm]
  where = f" (tuple element {at})" if at else ""
  if proto.type == kinds.TUPLE:
    if depth > 8:
      raise ValueError(f"tuple shardings nested more than 8 deep{where}")
    for i, element in enumerate(proto.tuple_shardings):
      _check_op_sharding(element, f"{at}[{i}]" if at else f"[{i}]", depth + 1)
    return
  if any(d < 0 for d in devices):
    raise ValueError(f"negative device ids {devices}{where}")
  if len(set(devices)) != len(devices):
    raise ValueError(f"repeated device ids {devices}{where}")
  if proto.type == kinds.MAXIMAL and len(devices) != 1:
    raise ValueError(f"a maximal sharding names {len(devices)} devices, not one{where}")
  if proto.type != kinds.OTHER:
    return
  if not dims or any(d <= 0 for d in dims):
    raise ValueError(f"tile assignment dimensions {dims} are not all positive{where}")
  if reshape or perm:
    if sorted(perm) != list(range(len(reshape))) or math.prod(reshape) != math.prod(dims):
      raise ValueError(f"iota tile assignment reshape {reshape} and transpose {perm} do not "
                       f"fit the tile dimensions {dims}{where}")
  elif math.prod(dims) != len(devices):
    raise ValueError(f"tile assignment dimensions {dims} hold {math.prod(dims)} devices but "
                     f"{len(devices)} device ids are given{where}")


def sharding_devices(sharding: Any) -> int:
  """How many devices an HloSharding places data on (1 for a replicated or unknown one, which
  fits any count; a maximal sharding counts its device's id + 1, the count it needs)."""
  if sharding.is_replicated() or sharding.is_unknown() or sharding.is_manual():
    return 1
  devices = sharding.tile_assignment_devices()
  if sharding.is_maximal():
    return int(devices[0]) + 1 if len(devices) == 1 else 1
  return max(1, len(devices))


def is_hlo_sharding(s: Any) -> bool:
  return isinstance(s, xla_client.HloSharding)


def platform_from_device_kind(device_kind: str) -> str | None:
  """The platform of a device kind, for meshes written before AbstractDevice.platform."""
  return wire_platform_of_device_kind(device_kind)


def lowerable_effect_types() -> dict[str, type]:
  """``str(cls) -> cls`` for every effect type jax can lower (may grow at runtime)."""
  return {str(t): t for t in effects.lowerable_effects._effect_types}


def jax_result_namedtuples() -> dict[str, type]:
  """JAX's own result namedtuples, by the public name they are serialized under."""
  found = {
      "jax.numpy.linalg.EighResult": getattr(linalg, "EighResult", None),
      "jax.numpy.linalg.EigResult": getattr(linalg, "EigResult", None),
      "jax.numpy.linalg.QRResult": getattr(linalg, "QRResult", None),
      "jax.numpy.linalg.SlogdetResult": getattr(linalg, "SlogdetResult", None),
      "jax.numpy.linalg.SVDResult": getattr(linalg, "SVDResult", None),
      "jax.numpy.UniqueAllResult": getattr(setops, "_UniqueAllResult", None),
      "jax.numpy.UniqueCountsResult": getattr(setops, "_UniqueCountsResult", None),
      "jax.numpy.UniqueInverseResult": getattr(setops, "_UniqueInverseResult", None),
      "jax.scipy.stats.ModeResult": getattr(stats_core, "ModeResult", None),
  }
  return {name: cls for name, cls in found.items() if cls is not None}
