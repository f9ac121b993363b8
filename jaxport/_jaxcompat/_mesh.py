"""Meshes and partition specs across releases.

``AbstractDevice`` with or without a platform; ``Mesh.is_scalar``; the entries
of a ``PartitionSpec`` (``spec.partitions`` from jax 0.10.2, which refuses
``*spec`` when the spec has reduced or unreduced axes; private before).

jax 0.10.1 added ``AbstractDevice.platform``; 0.10.0 and 0.9.x describe a
device by kind and core count only. Reading a blob that names the platform
under such a jax drops it (the mesh still works); writing takes the platform
from the device when it has one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jax._src import mesh

HAS_PLATFORM = "platform" in {f.name for f in dataclasses.fields(mesh.AbstractDevice)}


def make_abstract_device(device_kind: str, num_cores: int | None, platform: str | None) -> Any:
  """An ``AbstractDevice``; ``platform`` is kept where this jax has the field."""
  if HAS_PLATFORM:
    return mesh.AbstractDevice(device_kind, num_cores, platform)
  return mesh.AbstractDevice(device_kind, num_cores)


def device_platform(device: Any) -> str | None:
  """The platform an ``AbstractDevice`` names, or None under a jax whose devices have none."""
  return getattr(device, "platform", None)


def is_scalar_mesh(m: Any) -> bool:
  """Whether a concrete ``Mesh`` is one device with no axes (jax 0.10 calls it ``is_scalar``)."""
  found = getattr(m, "is_scalar", None)
  if found is not None:
    return bool(found)
  return m.size == 1 and not m.axis_names


def partition_spec_entries(spec: Any) -> tuple[Any, ...]:
  """The per-dimension entries of a ``PartitionSpec``, without its reduced/unreduced axes."""
  found = getattr(spec, "partitions", None)
  if found is None:
    found = getattr(spec, "_partitions", None)
  return tuple(spec) if found is None else tuple(found)
