"""Calling sharded exports (eight host CPU devices), compared with jax.export's call.

Device-count refusals (and the one-device exception), shardings applied as
sharding constraints in the caller, shard_map bodies on both sides of a call,
memory kinds through export, serialization and call, grad of a called sharded
record, and re-exporting a caller. Runs in a child process (see
``_sharding_child``).
"""

import _sharding_child
import pytest

if not _sharding_child.in_child():

  @pytest.mark.slow
  def test_sharding_call_in_eight_device_process():
    _sharding_child.run_module_in_child(__file__)

else:
  import jax
  import jax.export
  import jax.numpy as jnp
  import numpy as np
  from _jax_releases import skip_without_memory_kinds_on_cpu_mesh
  from _sharding_cases import MESH_2X4, MESH_X8, arr, ns
  from jax import shard_map
  from jax.sharding import PartitionSpec as P

  import jaxport

  def _spec(x):
    return jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)

  def _both(fun, *args):
    specs = [_spec(a) for a in args]
    return jaxport.export(fun)(*specs), jax.export.export(fun)(*specs)

  def _jax_call(exp):
    return lambda *a, **k: exp.call(*a, **k)

  GRID = ns(MESH_2X4, "a", "b")

  @pytest.fixture(scope="module")
  def grid_export():
    fun = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=GRID, out_shardings=ns(MESH_2X4, "b"))
    return fun, *_both(fun, arr((8, 8)))

  # ------------------------------------------------------------ device count

  def test_a_different_device_count_is_refused_like_jax(grid_export):
    _, ours, theirs = grid_export
    four = jax.make_mesh((4,), ("x",), devices=jax.devices()[:4])
    x = jax.device_put(arr((8, 8)), ns(four, "x"))
    with pytest.raises(ValueError) as jax_err:
      jax.jit(_jax_call(theirs))(x)
    with pytest.raises(jaxport.CallError) as ours_err:
      jax.jit(jaxport.call(ours))(x)
    assert str(ours_err.value) == str(jax_err.value)
    assert str(ours_err.value) == (
        "Function <lambda> was exported for 8 devices and is called in a context with 4 "
        "devices, which is not allowed.")

  def test_an_unplaced_call_of_a_multi_device_record_is_refused(grid_export):
    _, ours, _ = grid_export
    with pytest.raises(jaxport.CallError, match="exported for 8 devices and is called in a "
                       "context with 1 devices"):
      jaxport.call(ours)(arr((8, 8)))

  def test_a_one_device_record_runs_on_sharded_arguments():
    ours, theirs = _both(jax.jit(lambda x: jnp.cos(x) + 1), arr((8, 4)))
    assert ours.nr_devices == 1
    x = jax.device_put(arr((8, 4)), ns(MESH_X8, "x"))
    got = jax.jit(jaxport.call(ours))(x)
    want = jax.jit(_jax_call(theirs))(x)
    np.testing.assert_allclose(got, np.cos(arr((8, 4))) + 1, rtol=1e-6)
    assert got.sharding == want.sharding
    assert len(got.sharding.device_set) == 8

  # ------------------------------------------------------------ constraints

  def test_shardings_become_constraints_in_the_caller(grid_export):
    _, ours, theirs = grid_export
    x = jax.device_put(arr((8, 8)), GRID)
    with jax.set_mesh(MESH_2X4):
      ours_text = jax.jit(jaxport.call(ours)).lower(x).as_text()
      jax_text = jax.jit(_jax_call(theirs)).lower(x).as_text()
    caller = ours_text.split("func.func private")[0]
    assert 'sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {"b"}]>' in caller
    assert '<@mesh, [{"b"}, {}]>' in caller
    assert caller.count("sdy.sharding_constraint") == 2
    jax_caller = jax_text.split("func.func private")[0]
    assert caller.count("sdy.sharding_constraint") == jax_caller.count("sdy.sharding_constraint")

  def test_output_sharding_follows_the_record_not_the_input(grid_export):
    fun, ours, _ = grid_export
    x = jax.device_put(arr((8, 8)), ns(MESH_2X4, None, "a"))  # not the exported placement
    with jax.set_mesh(MESH_2X4):
      got = jax.jit(jaxport.call(ours))(x)
    want = fun(jax.device_put(x, GRID))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.sharding.spec == P("b") == want.sharding.spec

  # ------------------------------------------------------------ shard_map

  def test_an_exported_shard_map_is_called_inside_jit():
    body = shard_map(lambda x: x * 2 + jax.lax.psum(x, "b"), mesh=MESH_2X4,
                     in_specs=P("a", "b"), out_specs=P("a", "b"))
    fun = jax.jit(body)
    ours, theirs = _both(fun, arr((4, 8)))
    x = jax.device_put(arr((4, 8)), GRID)
    with jax.set_mesh(MESH_2X4):
      got = jax.jit(lambda v: jaxport.call(ours)(v) + 1)(x)
      want_jax = jax.jit(lambda v: theirs.call(v) + 1)(x)
    np.testing.assert_allclose(got, fun(x) + 1, rtol=1e-6)
    assert got.sharding == want_jax.sharding

  def test_a_one_device_record_is_called_in_a_shard_map_body():
    ours, theirs = _both(jax.jit(lambda x: x * 3 - 1), arr((1, 4)))
    x = jax.device_put(arr((8, 4)), ns(MESH_X8, "x"))

    def sharded(call):
      return jax.jit(shard_map(lambda v: call(v) + 1, mesh=MESH_X8, in_specs=P("x"),
                               out_specs=P("x")))

    got = sharded(jaxport.call(ours))(x)
    want = sharded(_jax_call(theirs))(x)
    np.testing.assert_allclose(got, arr((8, 4)) * 3, rtol=1e-6)
    assert got.sharding == want.sharding

  def test_a_multi_device_record_in_a_shard_map_body_is_refused_like_jax(grid_export):
    _, ours, theirs = grid_export
    x = jax.device_put(arr((16, 8)), ns(MESH_X8, "x"))

    def sharded(call):
      return jax.jit(shard_map(call, mesh=MESH_X8, in_specs=P("x"), out_specs=P("x")))

    with pytest.raises(ValueError) as jax_err:
      sharded(_jax_call(theirs))(x)
    with pytest.raises(ValueError) as ours_err:
      sharded(jaxport.call(ours))(x)
    assert str(ours_err.value) == str(jax_err.value)

  # ------------------------------------------------------------ memory kinds

  @pytest.mark.parametrize("in_kind,out_kind", [("pinned_host", "device"),
                                                ("device", "pinned_host"),
                                                ("pinned_host", "pinned_host")])
  def test_memory_kinds_survive_export_serialization_and_call(in_kind, out_kind):
    skip_without_memory_kinds_on_cpu_mesh()
    fun = jax.jit(lambda x: x * 2 + 1, in_shardings=ns(MESH_X8, "x", memory_kind=in_kind),
                  out_shardings=ns(MESH_X8, "x", memory_kind=out_kind))
    ours, theirs = _both(fun, arr((8, 2)))
    x = jax.device_put(arr((8, 2)), ns(MESH_X8, "x", memory_kind=in_kind))
    want = fun(x)
    assert want.sharding.memory_kind == out_kind
    for label, rec in (("fresh", ours), ("jaxport blob", jaxport.deserialize(ours.serialize())),
                       ("jax blob", jaxport.deserialize(theirs.serialize()))):
      assert rec._in_named_shardings[0].memory_kind == in_kind, label
      assert rec._out_named_shardings[0].memory_kind == out_kind, label
      assert rec.out_shardings_jax(MESH_X8)[0].memory_kind == out_kind, label
      got = jax.jit(jaxport.call(rec))(x)
      np.testing.assert_allclose(got, want, err_msg=label)
      assert got.sharding == want.sharding, label
    by_jax = jax.export.deserialize(ours.serialize())
    assert jax.jit(_jax_call(by_jax))(x).sharding == want.sharding

  # ------------------------------------------------------------ grad

  @pytest.fixture(scope="module")
  def loss_export():
    fun = jax.jit(lambda x, w: jnp.sum(jnp.sin(x) * w),
                  in_shardings=(GRID, ns(MESH_2X4, None, "b")), out_shardings=ns(MESH_2X4))
    return fun, *_both(fun, arr((4, 8)), arr((4, 8), 1))

  @pytest.mark.parametrize("source", ["fresh", "jaxport_blob", "jax_blob"])
  def test_grad_of_a_called_sharded_record(loss_export, source):
    fun, ours, theirs = loss_export
    rec = {"fresh": ours, "jaxport_blob": jaxport.deserialize(ours.serialize(vjp_order=1)),
           "jax_blob": jaxport.deserialize(theirs.serialize(vjp_order=1))}[source]
    x = jax.device_put(arr((4, 8)), GRID)
    w = jax.device_put(arr((4, 8), 1), ns(MESH_2X4, None, "b"))
    want = jax.grad(fun, argnums=(0, 1))(x, w)
    got = jax.jit(jax.grad(jaxport.call(rec), argnums=(0, 1)))(x, w)
    for g, wv in zip(got, want):
      np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-6)
      assert g.sharding == wv.sharding

  def test_grad_of_a_jax_read_record_of_jaxport(loss_export):
    fun, ours, _ = loss_export
    rec = jax.export.deserialize(ours.serialize(vjp_order=1))
    x = jax.device_put(arr((4, 8)), GRID)
    w = jax.device_put(arr((4, 8), 1), ns(MESH_2X4, None, "b"))
    got = jax.jit(jax.grad(_jax_call(rec)))(x, w)
    np.testing.assert_allclose(got, jax.grad(fun)(x, w), rtol=1e-5, atol=1e-6)

  # ------------------------------------------------------------ nesting

  def test_exporting_a_caller_needs_the_callee_device_count(grid_export):
    _, ours, theirs = grid_export
    with pytest.raises(jaxport.CallError, match="exported for 8 devices"):
      jaxport.export(jax.jit(lambda v: jaxport.call(ours)(v) * 2))(_spec(arr((8, 8))))
    with jax.set_mesh(MESH_2X4):
      outer = [m.export(jax.jit(lambda v, call=call: call(v) * 2))(_spec(arr((8, 8))))
               for m, call in ((jaxport, jaxport.call(ours)), (jax.export, _jax_call(theirs)))]
    assert outer[0].nr_devices == outer[1].nr_devices == 8
    assert outer[0]._out_named_shardings == outer[1]._out_named_shardings == (None,)
    x = jax.device_put(arr((8, 8)), GRID)
    with jax.set_mesh(MESH_2X4):
      got = jax.jit(jaxport.call(outer[0]))(x)
    np.testing.assert_allclose(got, np.sin(arr((8, 8))) * 4, rtol=1e-6)
    assert got.sharding.spec == P("b")

  # ------------------------------------------------------------ GSPMD callers

  @pytest.fixture
  def gspmd():
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    yield
    jax.config.update("jax_use_shardy_partitioner", before)

  def test_a_gspmd_caller_gets_hlo_sharding_constraints(gspmd):
    # jax.export's own call emits Shardy constraints here, which do not verify.
    fun = jax.jit(lambda x: jnp.sin(x) * 2, in_shardings=GRID, out_shardings=ns(MESH_2X4, "b"))
    ours, theirs = _both(fun, arr((8, 8)))
    assert ours._in_named_shardings == theirs._in_named_shardings
    x = jax.device_put(arr((8, 8)), GRID)
    caller = jax.jit(jaxport.call(ours)).lower(x).as_text().split("func.func private")[0]
    assert "sdy." not in caller
    assert caller.count("@Sharding(") == 2
    assert 'mhlo.sharding = "{devices=[2,4]<=[8]}"' in caller
    want = fun(x)
    for rec in (ours, jaxport.deserialize(theirs.serialize())):
      got = jax.jit(jaxport.call(rec))(x)
      np.testing.assert_allclose(got, want, rtol=1e-6)
      assert got.sharding.is_equivalent_to(want.sharding, 2)

  # ------------------------------------------------------------ symbolic shapes

  def test_a_sharded_symbolic_export_runs_on_several_sizes():
    fun = jax.jit(lambda x: jnp.sin(x) * x.shape[0], in_shardings=ns(MESH_X8, "x"),
                  out_shardings=ns(MESH_X8, "x"))
    ours, theirs = [m.export(fun)(jax.ShapeDtypeStruct(m.symbolic_shape("8*b, 4"), np.float32))
                    for m in (jaxport, jax.export)]
    assert ours._in_named_shardings == theirs._in_named_shardings
    assert ours.nr_devices == 8 and ours.uses_global_constants
    for rows in (8, 24):
      x = jax.device_put(arr((rows, 4)), ns(MESH_X8, "x"))
      for rec in (ours, jaxport.deserialize(theirs.serialize())):
        got = jax.jit(jaxport.call(rec))(x)
        np.testing.assert_allclose(got, np.sin(arr((rows, 4))) * rows, rtol=1e-5)
        assert got.sharding == ns(MESH_X8, "x")
      by_jax = jax.export.deserialize(ours.serialize())
      assert jax.jit(_jax_call(by_jax))(x).sharding == ns(MESH_X8, "x")
