"""Envelopes of layouts no release case in the store has, built for measuring readers.

jax 0.8.1 to 0.8.3 wrote shardings as HloSharding protos in the per-value
vectors (no named shardings, no ``unique_*`` tables). The store's entries of
those releases are one-device functions without shardings, so the layout is
built here, field by field as those releases wrote it, around a module of
today's export: one input and one output, each with a replicated HloSharding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxport
from jaxport._jaxcompat import _mesh
from jaxport.serde import _builder, _write
from jaxport.serde import _schema_generated as fb

# What those releases stored in the header's serialization_version.
HLO_SHARDINGS_HEADER = 3


def hlo_sharding_envelope(proto: bytes | None = None) -> bytes:
  """A blob of the ``hlo-shardings`` layout: ``sin`` of a float32[3], on one device; each
  sharding is the serialized OpSharding ``proto`` (default: replicated)."""
  rec = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
  if proto is None:
    proto = _mesh.replicated_hlo_sharding_proto()
  b = _builder.Builder(1024)
  name = b.CreateString(rec.fun_name)
  in_tree = _write._pytreedef(b, rec.in_tree, 1, "arguments")
  out_tree = _write._pytreedef(b, rec.out_tree, 1, "results")
  in_avals = _write._vector_of(b, _write._aval, rec.in_avals)
  out_avals = _write._vector_of(b, _write._aval, rec.out_avals)

  def hlo(b: _builder.Builder, _aval) -> int:
    data = b.CreateByteVector(proto)
    fb.ShardingStart(b)
    fb.ShardingAddHloShardingProto(b, data)
    return fb.ShardingEnd(b)

  in_shardings = _write._vector_of(b, hlo, rec.in_avals)
  out_shardings = _write._vector_of(b, hlo, rec.out_avals)
  platforms = _write._vector_of(b, lambda b, p: b.CreateString(p), rec.platforms)
  module = b.CreateByteVector(rec.mlir_module_serialized)
  kept = b.CreateScalarVector("H", rec.module_kept_var_idx)
  fb.ExportedStart(b)
  fb.ExportedAddSerializationVersion(b, HLO_SHARDINGS_HEADER)
  fb.ExportedAddFunctionName(b, name)
  fb.ExportedAddInTree(b, in_tree)
  fb.ExportedAddInAvals(b, in_avals)
  fb.ExportedAddOutTree(b, out_tree)
  fb.ExportedAddOutAvals(b, out_avals)
  fb.ExportedAddNrDevices(b, 1)
  fb.ExportedAddInShardings(b, in_shardings)
  fb.ExportedAddOutShardings(b, out_shardings)
  fb.ExportedAddPlatforms(b, platforms)
  fb.ExportedAddMlirModuleSerialized(b, module)
  fb.ExportedAddCallingConventionVersion(b, rec.calling_convention_version)
  fb.ExportedAddModuleKeptVarIdx(b, kept)
  b.Finish(fb.ExportedEnd(b))
  return bytes(b.Output())
