"""Sharded exports interchange with jax.export both ways (eight host CPU devices).

For every case of ``_sharding_cases``: jaxport and jax.export produce equal
records; jaxport's blob read by ``jax.export.deserialize`` and jax's blob read
by ``jaxport.deserialize`` give equal records; both read-back records, called
(jax's through its own ``call``, jaxport's through ``jaxport.call``), match
``jax.jit`` of the function in values and in output shardings, memory kinds
included. The module runs in a child process (see ``_sharding_child``).
"""

import contextlib

import _sharding_child
import pytest

if not _sharding_child.in_child():

  @pytest.mark.slow
  def test_sharding_serde_cross_in_eight_device_process():
    _sharding_child.run_module_in_child(__file__)

else:
  import jax
  import jax.export
  import numpy as np
  from _jax_releases import skip_without_memory_kinds_on_cpu_mesh
  from _sharding_cases import CASES
  from jax.sharding import AbstractMesh, NamedSharding

  import jaxport
  from jaxport._jaxcompat import _envelope as jax_envelope
  from jaxport._jaxcompat import _mesh as jax_mesh

  FIELDS = ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "_in_named_shardings", "_out_named_shardings", "in_shardings_hlo", "out_shardings_hlo",
            "nr_devices", "platforms", "ordered_effects", "unordered_effects",
            "mlir_module_serialized", "calling_convention_version", "module_kept_var_idx",
            "uses_global_constants")

  def _record(exp) -> dict:
    d = {f: getattr(exp, f) for f in FIELDS}
    d["disabled_safety_checks"] = [str(c) for c in exp.disabled_safety_checks]
    d["has_named_shardings"] = jax_envelope.has_named_shardings(exp)
    d["out_aval_shardings"] = [a.sharding for a in exp.out_avals]
    return d

  def _differences(a, b) -> list[str]:
    ra, rb = _record(a), _record(b)
    return [f"{k}: {ra[k]!r} != {rb[k]!r}" for k in ra if ra[k] != rb[k]]

  def _in_mesh(case):
    return jax.set_mesh(case.mesh) if case.mesh is not None else contextlib.nullcontext()

  @pytest.fixture(scope="module", params=sorted(CASES))
  def exported(request):
    case = CASES[request.param]
    args, kwargs = case.specs()
    with _in_mesh(case):
      ours = jaxport.export(case.fun)(*args, **kwargs)
      theirs = jax.export.export(case.fun)(*args, **kwargs)
    return case, ours, theirs

  def test_at_least_ten_multi_device_cases():
    assert sum(1 for c in CASES.values() if c.mesh is not None) >= 10

  def test_fresh_records_equal_jax(exported):
    _, ours, theirs = exported
    assert _differences(ours, theirs) == []

  def test_records_store_abstract_meshes_with_device_kind_and_platform(exported):
    case, ours, _ = exported
    named = [s for s in ours._in_named_shardings + ours._out_named_shardings if s is not None]
    assert named, "every case records at least one sharding"
    for s in named:
      assert isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh)
      if s.mesh.axis_names:
        assert s.mesh.abstract_device.device_kind == jax.devices()[0].device_kind
        assert jax_mesh.device_platform(s.mesh.abstract_device) == ("cpu" if jax_mesh.HAS_PLATFORM else None)
    assert ours.nr_devices == (8 if case.mesh is not None else 1)

  def test_blobs_read_back_as_equal_records_both_ways(exported):
    _, ours, theirs = exported
    ours_blob, theirs_blob = ours.serialize(), theirs.serialize()
    reference = jax.export.deserialize(theirs_blob)
    for label, rec in (("jax reads jaxport's blob", jax.export.deserialize(ours_blob)),
                       ("jaxport reads jax's blob", jaxport.deserialize(theirs_blob)),
                       ("jaxport reads its own blob", jaxport.deserialize(ours_blob))):
      assert _differences(rec, reference) == [], label
    # What was exported survives: the named shardings and memory spaces of the fresh record.
    back = jaxport.deserialize(theirs_blob)
    assert back._in_named_shardings == theirs._in_named_shardings
    assert back._out_named_shardings == theirs._out_named_shardings
    assert [a.memory_space for a in back.in_avals] == [a.memory_space for a in theirs.in_avals]
    assert [a.memory_space for a in back.out_avals] == [a.memory_space for a in theirs.out_avals]

  def _assert_same_results(got, want, label):
    got, want = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got) == len(want), label
    for i, (g, w) in enumerate(zip(got, want)):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5,
                                 err_msg=f"{label}: output {i}")
      assert g.sharding.is_equivalent_to(w.sharding, w.ndim), (label, i, g.sharding, w.sharding)
      assert g.sharding.memory_kind == w.sharding.memory_kind, (label, i)
      assert jax.typeof(g).sharding.spec == jax.typeof(w).sharding.spec, (label, i)

  def test_read_back_records_call_like_jit(exported):
    case, ours, theirs = exported
    if case.name.startswith("pinned_host"):
      skip_without_memory_kinds_on_cpu_mesh()
    args, kwargs = case.placed()
    with _in_mesh(case):
      want = case.fun(*args, **kwargs)
      by_jax = jax.export.deserialize(ours.serialize())
      _assert_same_results(jax.jit(by_jax.call)(*args, **kwargs), want,
                           "jaxport's blob called by jax")
      by_jaxport = jaxport.deserialize(theirs.serialize())
      _assert_same_results(jax.jit(jaxport.call(by_jaxport))(*args, **kwargs), want,
                           "jax's blob called by jaxport")
      _assert_same_results(jaxport.call(ours)(*args, **kwargs), want,
                           "fresh jaxport record called eagerly")
