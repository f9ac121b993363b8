"""Export of sharded functions and their shardings on a mesh (eight host CPU devices).

What the record stores (NamedShardings over abstract meshes with device kind
and platform, None where unspecified, the empty mesh for one device), the
device count, and ``in_shardings_jax``/``out_shardings_jax`` on matching and
mismatching meshes, each compared with jax.export. Runs in a child process
(see ``_sharding_child``).
"""

import _sharding_child
import pytest

if not _sharding_child.in_child():

  @pytest.mark.slow
  def test_sharding_export_in_eight_device_process():
    _sharding_child.run_module_in_child(__file__)

else:
  import jax
  import jax.export
  import numpy as np
  from _sharding_cases import (AUTO, EXPLICIT, MANUAL, MESH_2X4, MESH_4X2_EXPLICIT, MESH_X8, arr,
                               ns)
  from jax.sharding import AbstractMesh, Mesh, PartitionSpec as P, SingleDeviceSharding
  from _jax_releases import as_jax_record, jax_keeps_hlo_sharding_records

  import jaxport
  from jaxport._jaxcompat import _mesh as jax_mesh

  def _spec(x):
    return jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)

  def _both(fun, *args):
    specs = [_spec(a) for a in args]
    return jaxport.export(fun)(*specs), jax.export.export(fun)(*specs)

  def _two_outputs(x, y):
    return x * 2, y.sum(0)

  def test_named_shardings_are_stored_over_abstract_meshes():
    fun = jax.jit(_two_outputs, in_shardings=(ns(MESH_2X4, "a", "b"), ns(MESH_2X4, None, "a")),
                  out_shardings=(ns(MESH_2X4, "b"), ns(MESH_2X4)))
    ours, theirs = _both(fun, arr((8, 8)), arr((4, 4)))
    x_rec = ours._in_named_shardings[0]
    assert isinstance(x_rec.mesh, AbstractMesh)
    assert x_rec.mesh.axis_names == ("a", "b") and x_rec.mesh.axis_sizes == (2, 4)
    assert x_rec.mesh.axis_types == (AUTO, AUTO)
    assert x_rec.mesh.abstract_device.device_kind == jax.devices()[0].device_kind
    assert jax_mesh.device_platform(x_rec.mesh.abstract_device) == ("cpu" if jax_mesh.HAS_PLATFORM else None)
    assert [s.spec for s in ours._in_named_shardings] == [P("a", "b"), P(None, "a")]
    assert [s.spec for s in ours._out_named_shardings] == [P("b"), P()]
    assert ours.nr_devices == 8
    assert ours._in_named_shardings == theirs._in_named_shardings
    assert ours._out_named_shardings == theirs._out_named_shardings
    # jax 0.10 records no HLO shardings; 0.9.x records them too, and jaxport does as the installed jax.
    assert ours.in_shardings_hlo == theirs.in_shardings_hlo
    assert ours.out_shardings_hlo == theirs.out_shardings_hlo
    assert (ours.in_shardings_hlo == (None, None)) == (not jax_mesh.EXPORT_RECORDS_HLO_SHARDINGS)

  @pytest.mark.parametrize("axis_types", [(AUTO, AUTO), (EXPLICIT, EXPLICIT), (AUTO, EXPLICIT),
                                          (MANUAL,)], ids=str)
  def test_axis_types_are_recorded(axis_types):
    # jit refuses a mesh mixing Manual with other axis types at the top level.
    shape, names = ((4, 2), ("i", "j")) if len(axis_types) == 2 else ((8,), ("i",))
    mesh = jax.make_mesh(shape, names, axis_types=axis_types)
    fun = jax.jit(lambda x: x + 1, in_shardings=ns(mesh, *names), out_shardings=ns(mesh, names[-1]))
    ours, theirs = _both(fun, arr((8, 8)))
    assert ours._in_named_shardings[0].mesh.axis_types == axis_types
    assert ours._out_named_shardings[0].mesh.axis_types == axis_types
    assert ours._in_named_shardings == theirs._in_named_shardings
    assert ours._out_named_shardings == theirs._out_named_shardings

  def test_several_meshes_in_one_export():
    other = jax.make_mesh((2, 4), ("c", "d"), axis_types=(AUTO, AUTO))
    fun = jax.jit(_two_outputs, in_shardings=(ns(MESH_2X4, "a"), ns(MESH_X8, "x")),
                  out_shardings=(ns(other, "c"), ns(MESH_X8)))
    ours, theirs = _both(fun, arr((8, 4)), arr((8, 2)))
    meshes = [s.mesh.axis_names for s in ours._in_named_shardings + ours._out_named_shardings]
    assert meshes == [("a", "b"), ("x",), ("c", "d"), ("x",)]
    assert ours._in_named_shardings == theirs._in_named_shardings
    assert ours._out_named_shardings == theirs._out_named_shardings

  def test_unspecified_shardings_are_none():
    fun = jax.jit(_two_outputs, in_shardings=(ns(MESH_X8, "x"), None))
    ours, theirs = _both(fun, arr((8,)), arr((3, 2)))
    assert ours._in_named_shardings[1] is None
    assert ours._out_named_shardings == (None, None)
    assert ours._out_named_shardings == theirs._out_named_shardings
    assert ours.nr_devices == 8

  def test_single_device_sharding_is_replicated_over_the_empty_mesh():
    dev = SingleDeviceSharding(jax.devices()[5])
    fun = jax.jit(lambda x: x * 2, in_shardings=dev, out_shardings=dev)
    ours, theirs = _both(fun, arr((2, 3)))
    rec = ours._in_named_shardings[0]
    assert rec.mesh.axis_names == () and rec.spec == P(None, None)
    assert ours.nr_devices == 1 == theirs.nr_devices
    assert ours._in_named_shardings == theirs._in_named_shardings

  def test_nr_devices_counts_the_mesh_devices():
    four = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4], axis_types=(AUTO,))
    ours, theirs = _both(jax.jit(lambda x: x * 2, in_shardings=ns(four, "x")), arr((8,)))
    assert ours.nr_devices == 4 == theirs.nr_devices
    assert "mhlo.num_partitions = 4" in ours.mlir_module()

  def test_memory_kinds_are_recorded():
    host = ns(MESH_X8, "x", memory_kind="pinned_host")
    fun = jax.jit(lambda x: x * 2, in_shardings=host, out_shardings=ns(MESH_X8, "x"))
    ours, theirs = _both(fun, arr((8,)))
    assert ours._in_named_shardings[0].memory_kind == "pinned_host"
    assert ours._out_named_shardings[0].memory_kind == "device"
    assert ours.in_avals[0].memory_space.name == "Host"
    assert ours.in_avals == theirs.in_avals

  # ---------------------------------------------------------------- on a mesh

  @pytest.fixture(scope="module")
  def grid_export():
    fun = jax.jit(_two_outputs,
                  in_shardings=(ns(MESH_2X4, "a", "b"), None),
                  out_shardings=(ns(MESH_2X4, "b", memory_kind="pinned_host"), ns(MESH_2X4)))
    return _both(fun, arr((8, 8)), arr((4, 4)))

  def test_shardings_on_a_concrete_mesh_with_other_devices(grid_export):
    ours, theirs = grid_export
    reversed_mesh = Mesh(np.array(jax.devices()[::-1]).reshape(2, 4), ("a", "b"))
    ins, outs = ours.in_shardings_jax(reversed_mesh), ours.out_shardings_jax(reversed_mesh)
    assert ins == theirs.in_shardings_jax(reversed_mesh)
    assert outs == theirs.out_shardings_jax(reversed_mesh)
    assert ins[0].mesh is reversed_mesh and ins[0].spec == P("a", "b")
    assert ins[1] is None
    assert outs[0].memory_kind == "pinned_host" and outs[0].spec == P("b")
    placed = jax.device_put(arr((8, 8)), ins[0])
    assert placed.sharding.device_set == set(jax.devices())

  def test_shardings_on_an_abstract_mesh(grid_export):
    ours, theirs = grid_export
    abstract = MESH_2X4.abstract_mesh
    assert ours.in_shardings_jax(abstract) == theirs.in_shardings_jax(abstract)
    assert ours.in_shardings_jax(abstract)[0].mesh == abstract

  @pytest.mark.parametrize("sizes,names,types", [
      ((4, 2), ("a", "b"), (AUTO, AUTO)),
      ((2, 4), ("b", "a"), (AUTO, AUTO)),
      ((2, 4), ("a", "b"), (EXPLICIT, EXPLICIT)),
      ((8,), ("a",), (AUTO,)),
  ], ids=["sizes", "names", "types", "rank"])
  def test_a_mismatched_mesh_is_refused_with_jaxs_message(grid_export, sizes, names, types):
    ours, theirs = grid_export
    wrong = jax.make_mesh(sizes, names, axis_types=types)
    with pytest.raises(ValueError) as jax_err:
      theirs.in_shardings_jax(wrong)
    with pytest.raises(jaxport.ExportError) as ours_err:
      ours.in_shardings_jax(wrong)
    msg = str(ours_err.value)
    assert msg.startswith(str(jax_err.value))
    assert "For args[0]: expected axis names ('a', 'b'), sizes (2, 4) and types" in msg
    assert f"got {names}, {sizes}" in msg
    with pytest.raises(jaxport.ExportError, match=r"For result\[0\] \(flat\)"):
      ours.out_shardings_jax(wrong)

  @pytest.mark.parametrize("axis_types", [(MANUAL,), (EXPLICIT,), (AUTO,)], ids=str)
  def test_records_read_back_keep_axis_types(axis_types):
    mesh = jax.make_mesh((8,), ("i",), axis_types=axis_types)
    ours, theirs = _both(jax.jit(lambda x: x - 1, in_shardings=ns(mesh, "i")), arr((8,)))
    for back in (jaxport.deserialize(ours.serialize()), jax.export.deserialize(ours.serialize()),
                 jaxport.deserialize(theirs.serialize())):
      assert back._in_named_shardings == ours._in_named_shardings
      assert back._in_named_shardings[0].mesh.axis_types == axis_types

  def test_explicit_mesh_export_under_set_mesh():
    mesh = MESH_4X2_EXPLICIT
    with jax.set_mesh(mesh):
      spec = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=ns(mesh, "a", "b"))
      ours = jaxport.export(jax.jit(lambda x: x.T * 2))(spec)
      theirs = jax.export.export(jax.jit(lambda x: x.T * 2))(spec)
    assert ours.out_avals[0].sharding.spec == P("b", "a")
    assert ours.out_avals == theirs.out_avals
    assert ours._out_named_shardings == theirs._out_named_shardings

  def test_vjp_record_shardings():
    fun = jax.jit(lambda x, w: (x * w).sum(0),
                  in_shardings=(ns(MESH_2X4, "a", "b"), ns(MESH_2X4, None, "b")),
                  out_shardings=ns(MESH_2X4, "b"))
    ours, theirs = _both(fun, arr((4, 8)), arr((4, 8)))
    vjp = ours.vjp()
    assert vjp._in_named_shardings == ours._in_named_shardings + ours._out_named_shardings
    assert vjp._out_named_shardings == ours._in_named_shardings
    assert vjp.nr_devices == 8
    their_vjp = theirs.vjp()
    assert vjp._in_named_shardings == their_vjp._in_named_shardings
    assert vjp._out_named_shardings == their_vjp._out_named_shardings

  @jax_keeps_hlo_sharding_records
  def test_legacy_hlo_sharding_records_on_eight_devices():
    import dataclasses
    fun = jax.jit(_two_outputs, in_shardings=(ns(MESH_2X4, "a", "b"), None),
                  out_shardings=(ns(MESH_2X4, "b"), ns(MESH_2X4)))
    ours, _ = _both(fun, arr((8, 8)), arr((4, 2)))

    def hlo(records, avals):
      return tuple(None if s is None else s._to_xla_hlo_sharding(a.ndim)
                   for s, a in zip(records, avals))

    legacy = dataclasses.replace(
        ours, _in_named_shardings=(None, None),
        _out_named_shardings=(None, None),
        in_shardings_hlo=hlo(ours._in_named_shardings, ours.in_avals),
        out_shardings_hlo=hlo(ours._out_named_shardings, ours.out_avals))
    as_jax = as_jax_record(legacy)
    assert legacy.in_shardings_jax(MESH_2X4) == as_jax.in_shardings_jax(MESH_2X4)
    assert legacy.out_shardings_jax(MESH_2X4) == as_jax.out_shardings_jax(MESH_2X4)
    assert legacy.in_shardings_jax(MESH_2X4)[0].spec == P("a", "b")
    x = jax.device_put(arr((8, 8)), ns(MESH_2X4, "a", "b"))
    with jax.set_mesh(MESH_2X4):
      got = jax.jit(jaxport.call(legacy))(x, arr((4, 2)))
      want = jax.jit(lambda *a: as_jax.call(*a))(x, arr((4, 2)))
    assert [g.sharding for g in got] == [w.sharding for w in want]
    with pytest.raises(jaxport.ExportError, match="carries HloShardings only"):
      legacy.serialize()
