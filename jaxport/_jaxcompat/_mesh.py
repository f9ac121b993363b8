"""Meshes and partition specs across releases.

``AbstractDevice`` with or without a platform; ``Mesh.is_scalar``; the entries
of a ``PartitionSpec`` (``spec.partitions`` from jax 0.10.2, which refuses
``*spec`` when the spec has reduced or unreduced axes; private before), and those
axes (absent before jax added them); and
whether jax.export records HLO shardings besides the named ones.

jax 0.10.1 added ``AbstractDevice.platform``; 0.10.0 and 0.9.x describe a
device by kind and core count only. Reading a blob that names the platform
under such a jax drops it (the mesh still works); writing takes the platform
from the device when it has one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
from jax._src import mesh

from jaxport._jaxcompat import _version

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


def partition_spec_reduced(spec: Any) -> tuple[frozenset[str], frozenset[str]]:
  """The ``(unreduced, reduced)`` axes of a ``PartitionSpec`` (empty under a jax without them)."""
  return (frozenset(getattr(spec, "unreduced", None) or ()),
          frozenset(getattr(spec, "reduced", None) or ()))


# jax.export records each sharding a second time as an HloSharding
# (``in_shardings_hlo``/``out_shardings_hlo``) up to jax 0.9.x and records None
# there from 0.10.0 on. No attribute tells the two apart, so this one
# behaviour is keyed on the release; a newer jax gets the newer behaviour.
EXPORT_RECORDS_HLO_SHARDINGS = _version.release_tuple(jax.__version__) < (0, 10, 0)


def export_hlo_shardings(named: Sequence[Any], avals: Sequence[Any]) -> tuple[Any, ...]:
  """What this jax's export records as HLO shardings for the given named shardings."""
  if not EXPORT_RECORDS_HLO_SHARDINGS:
    return (None,) * len(named)
  return tuple(None if s is None else s._to_xla_hlo_sharding(a.ndim) for s, a in zip(named, avals))


def replicated_hlo_sharding_proto() -> bytes:
  """A replicated sharding as the serialized OpSharding proto older envelopes stored."""
  from jax._src.lib import xla_client  # local: only building such an envelope needs it
  return xla_client.HloSharding.replicate().to_proto().SerializeToString()
