"""Sharding records over abstract meshes, and rebuilding them on a mesh."""

import dataclasses

import jax
import jax.export
import numpy as np
import pytest
from jax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

import jaxport
from _jax_releases import as_jax_record, jax_keeps_hlo_sharding_records

MESH = Mesh(jax.devices()[:1], ("a",))
X = np.ones(4, np.float32)
Y = np.ones((2, 2), np.float32)


def _g(x, y):
  return x * 2, y.sum()


def _export(module, in_shardings, out_shardings=None):
  return module.export(jax.jit(_g, in_shardings=in_shardings, out_shardings=out_shardings))(X, Y)


def _both(in_shardings, out_shardings=None):
  return [_export(m, in_shardings, out_shardings) for m in (jaxport, jax.export)]


def test_named_shardings_are_recorded_over_the_abstract_mesh():
  ours, theirs = _both((NamedSharding(MESH, P("a")), None), (NamedSharding(MESH, P("a")), None))
  (x_rec, y_rec) = ours._in_named_shardings
  assert isinstance(x_rec.mesh, AbstractMesh)
  assert x_rec.mesh.axis_names == ("a",) and x_rec.mesh.axis_sizes == (1,)
  assert x_rec.spec == P("a")
  assert y_rec is None
  assert ours._in_named_shardings == theirs._in_named_shardings
  assert ours._out_named_shardings == theirs._out_named_shardings


def test_single_device_sharding_is_replicated_over_the_empty_mesh():
  ours, theirs = _both((SingleDeviceSharding(jax.devices()[0]), None))
  rec = ours._in_named_shardings[0]
  assert rec.mesh.axis_names == () and rec.spec == P(None)
  assert ours._in_named_shardings == theirs._in_named_shardings


def test_in_and_out_shardings_on_a_matching_mesh():
  ours, theirs = _both((NamedSharding(MESH, P("a")), None), (NamedSharding(MESH, P("a")), None))
  assert ours.in_shardings_jax(MESH) == theirs.in_shardings_jax(MESH)
  assert ours.out_shardings_jax(MESH) == theirs.out_shardings_jax(MESH)
  got = ours.in_shardings_jax(MESH)[0]
  assert got.mesh is MESH and got.spec == P("a")
  np.testing.assert_allclose(jaxport.call(ours)(jax.device_put(X, got), Y)[0], 2 * X)


def test_a_mismatched_mesh_is_refused_with_jaxs_message_and_where():
  ours = _export(jaxport, (NamedSharding(MESH, P("a")), None))
  wrong = AbstractMesh((2,), ("a",))
  with pytest.raises(jaxport.ExportError) as info:
    ours.in_shardings_jax(wrong)
  msg = str(info.value)
  assert msg.startswith(f"NamedSharding new mesh {wrong} does not match the mesh used for export ")
  assert "For args[0]: expected axis names ('a',), sizes (1,)" in msg
  assert "got ('a',), (2,)" in msg


@jax_keeps_hlo_sharding_records
def test_legacy_hlo_shardings_are_rebuilt_like_jax():
  from jax._src.lib import xla_client
  ours = _export(jaxport, None)
  n_in, n_out = len(ours.in_avals), len(ours.out_avals)
  legacy = dataclasses.replace(
      ours, _in_named_shardings=(None,) * n_in, _out_named_shardings=(None,) * n_out,
      in_shardings_hlo=(xla_client.HloSharding.replicate(), None),
      out_shardings_hlo=(None, xla_client.HloSharding.replicate()))
  assert not legacy._has_named_shardings
  as_jax = as_jax_record(legacy)
  assert legacy.in_shardings_jax(MESH) == as_jax.in_shardings_jax(MESH)
  assert legacy.out_shardings_jax(MESH) == as_jax.out_shardings_jax(MESH)
  assert legacy.in_shardings_jax(MESH)[1] is None
