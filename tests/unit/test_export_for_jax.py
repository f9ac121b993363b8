"""``jaxport.export(f, for_jax=...)``: what is chosen for an older consumer, and what is refused.

The release table is replaced by a made-up one (``jaxport.releases._table.load``),
so that each choice is tested against facts that force it, on every jax.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._vocabulary import ANY_PLATFORM
from jaxport.custom_calls import _registry, _walk
from jaxport.errors import ExportError, ReleaseTableError
from jaxport.export import _for_jax, _mlir
from jaxport.releases import _table
from jaxport.serde import _read
from jaxport.upgrades import LAYOUTS, envelope_layout

CPU = _registry.stable_targets("cpu")
ANY = _registry.stable_targets(ANY_PLATFORM)
OTHER_LAYOUT = (_for_jax.UNIQUE_TABLES if _for_jax.installed_layout() == _for_jax.VERSION_12
                else _for_jax.VERSION_12)


def facts(version: str = "0.9.2", **changes) -> _table.ReleaseFacts:
  """A measured release like jax 0.9.2: StableHLO 1.14.0, calling conventions 9 and 10, every
  layout read, the stable LAPACK targets registered on cpu (platform-free ones only in its
  stable table, as the release table measures them)."""
  base = _table.ReleaseFacts(
      version=version, date=None, installable=True, not_installable_reason=None,
      stablehlo_writes="1.14.0", stablehlo_reads_min="0.9.0", calling_convention_default=10,
      calling_conventions_call=(9, 10), serialization_versions_read=(2, 3, 12),
      envelope_layouts={layout: "reads" for layout in LAYOUTS}, expiry_days=None,
      cpu_targets=CPU, stable_targets={"cpu": CPU | ANY, "tpu": ANY | {"tpu_custom_call"}},
      device_count_fields={"nr_devices": True, "nr_devices_short": True})
  return dataclasses.replace(base, **changes)


@pytest.fixture
def table(monkeypatch):
  """Install a release table holding the given facts; returns the installer."""
  def install(*records: _table.ReleaseFacts) -> None:
    made = _table.ReleaseTable(measured_on="2026-12-01", method="made up for a test",
                               layouts_written_by={}, probed_targets=(), facts=tuple(records))
    monkeypatch.setattr(_table, "load", lambda *a: made)
  install(facts())
  return install


def _cholesky():
  return jax.jit(lambda x: jnp.linalg.cholesky(x @ x.mT + 4 * jnp.eye(3, dtype=x.dtype)))


def _batch_spec():
  return jax.ShapeDtypeStruct((jaxport.symbolic_shape("b")[0], 3, 3), np.float32)


def test_for_jax_writes_the_release_stablehlo_version_calling_convention_and_layout(table):
  target = _for_jax.consumer_target("0.9.2")
  assert (target.release, target.stablehlo_version, target.calling_convention_version) == (
      "0.9.2", "1.14.0", 10)
  # Both layouts jaxport writes are read: the installed jax's is kept.
  assert target.layout == _for_jax.installed_layout()
  assert target.header_version == _for_jax.LAYOUT_HEADERS[target.layout]


def test_a_lapack_shape_polymorphic_function_exported_for_0_9_2_is_accepted_and_runs(table):
  exp = jaxport.export(_cholesky(), for_jax="0.9.2")(_batch_spec())
  assert _mlir.artifact_version(exp.mlir_module_serialized) == "1.14.0"
  assert exp.calling_convention_version == 10
  assert exp.for_jax.release == "0.9.2"
  blob = exp.serialize(vjp_order=1)
  assert envelope_layout(blob) == _for_jax.installed_layout()
  x = np.random.RandomState(0).rand(2, 3, 3).astype(np.float32)
  want = _cholesky()(x)
  for read in (jaxport.deserialize, jax.export.deserialize):
    np.testing.assert_allclose(read(blob).call(x), want, rtol=1e-5, atol=1e-5)
  # The VJP is exported for the same consumer.
  assert exp.vjp().for_jax.release == "0.9.2"
  assert _mlir.artifact_version(exp.vjp().mlir_module_serialized) == "1.14.0"


def test_for_jax_none_is_todays_export(table):
  default = jaxport.export(_cholesky())(_batch_spec())
  explicit = jaxport.export(_cholesky(), for_jax=None)(_batch_spec())
  assert default.for_jax is None and explicit.for_jax is None
  assert _mlir.artifact_version(default.mlir_module_serialized) == _mlir.default_target_version()
  # The two exports differ only in the source line of the call.
  assert (_mlir.module_text_without_locations(default.mlir_module_serialized)
          == _mlir.module_text_without_locations(explicit.mlir_module_serialized))
  assert default.calling_convention_version == jax.config.jax_export_calling_convention_version
  for exp in (default, explicit):
    assert _read.read_serialization_version(exp.serialize()) == jax_envelope.header_version()
    assert envelope_layout(exp.serialize()) == _for_jax.installed_layout()


def test_a_consumer_newer_than_this_jaxlib_gets_the_newest_version_it_writes(table):
  table(facts("0.12.0.1", stablehlo_writes="99.0.0"))
  assert (_for_jax.consumer_target("0.12.0.1").stablehlo_version
          == _mlir.stablehlo_version_range()[1])


def test_a_consumer_older_than_this_jaxlib_writes_is_refused_naming_both(table):
  table(facts("0.9.2", stablehlo_writes="0.1.0"))
  with pytest.raises(ExportError, match=r"jax 0\.9\.2: its jaxlib reads StableHLO up to 0\.1\.0"):
    _for_jax.consumer_target("0.9.2")


@pytest.mark.parametrize("default, calls, want", [
    (10, (9, 10), 10),     # its default
    (10, (9, 9), 9),       # the newest both support
    (None, (9, 10), 10),
])
def test_the_calling_convention_is_the_default_or_the_newest_both_sides_support(
    table, default, calls, want):
  table(facts(calling_convention_default=default, calling_conventions_call=calls))
  assert _for_jax.consumer_target("0.9.2").calling_convention_version == want


def test_a_release_with_no_common_calling_convention_is_refused(table):
  table(facts(calling_conventions_call=(11, 12)))
  with pytest.raises(ExportError, match=r"jax 0\.9\.2: it calls modules of calling conventions "
                                        r"11 to 12, and jaxport exports 9 to 10"):
    jaxport.export(_cholesky(), for_jax="0.9.2")


def test_a_release_that_refuses_the_installed_layout_gets_the_other_one(table):
  table(facts(envelope_layouts={_for_jax.installed_layout(): "refuses", OTHER_LAYOUT: "reads"}))
  target = _for_jax.consumer_target("0.9.2")
  assert (target.layout, target.header_version) == (OTHER_LAYOUT, _for_jax.LAYOUT_HEADERS[OTHER_LAYOUT])
  exp = jaxport.export(jax.jit(jnp.sin), for_jax="0.9.2")(jax.ShapeDtypeStruct((3,), np.float32))
  blob = exp.serialize()
  assert envelope_layout(blob) == OTHER_LAYOUT
  assert _read.read_serialization_version(blob) == _for_jax.LAYOUT_HEADERS[OTHER_LAYOUT]
  np.testing.assert_allclose(jaxport.deserialize(blob).call(np.ones(3, np.float32)), np.sin(1.0) * np.ones(3),
                             rtol=1e-6)


def test_a_release_that_reads_neither_layout_is_refused_naming_them(table):
  table(facts(envelope_layouts={_for_jax.UNIQUE_TABLES: "refuses",
                                _for_jax.VERSION_12: "refuses_expired"}))
  with pytest.raises(ExportError, match=r"jax 0\.9\.2: it reads neither envelope layout") as e:
    _for_jax.consumer_target("0.9.2")
  assert "unique-tables: refuses" in str(e.value) and "version-12: refuses_expired" in str(e.value)


def test_a_release_reading_only_the_16_bit_device_count_is_refused(table):
  short_only = {"nr_devices": False, "nr_devices_short": True}
  table(facts("0.7.2", device_count_fields=short_only),
        facts("0.8.0", device_count_fields=short_only), facts("0.8.2"), facts("0.9.2"))
  assert _for_jax.oldest_consumer() == "0.8.2"
  with pytest.raises(ExportError, match=r"jax 0\.8\.0: it reads the device count only from the "
                                        r"legacy 16-bit field.* from 0\.8\.2 on"):
    _for_jax.consumer_target("0.8.0")
  _for_jax.consumer_target("0.8.2")


def test_a_multi_device_record_for_a_release_before_named_shardings_is_refused(table):
  table(facts("0.8.3"))
  target = _for_jax.consumer_target("0.8.3")
  one = jaxport.export(jax.jit(jnp.sin), for_jax="0.8.3")(jax.ShapeDtypeStruct((3,), np.float32))
  _for_jax.check_record(one, target)
  eight = dataclasses.replace(one, nr_devices=8)
  with pytest.raises(ExportError, match=r"for jax 0\.8\.3: it runs on 8 devices, .*HloSharding "
                                        r"protos.* from 0\.9\.0 on"):
    _for_jax.retarget(eight, target)


def test_an_unknown_release_is_a_release_table_error_naming_it(table):
  with pytest.raises(ReleaseTableError, match=r"for_jax='0\.3\.1': jax '0\.3\.1' is not in the "
                                              r"release table \(it lists jax 0\.9\.2 to 0\.9\.2\)"):
    jaxport.export(_cholesky(), for_jax="0.3.1")
  with pytest.raises(ReleaseTableError, match=r"for_jax='latest': .*MAJOR\.MINOR\.PATCH"):
    jaxport.export(_cholesky(), for_jax="latest")
  with pytest.raises(ExportError, match=r"for_jax must name a jax release such as '0\.9\.2', got 9"):
    jaxport.export(_cholesky(), for_jax=9)


def test_a_release_not_installable_is_refused_with_the_reason(table):
  table(facts("0.4.32", installable=False, not_installable_reason="yanked from the index"))
  with pytest.raises(ExportError, match=r"jax 0\.4\.32: .*not installable \(yanked from the index\)"):
    jaxport.export(_cholesky(), for_jax="0.4.32")


def test_a_cpu_target_the_release_does_not_register_is_refused_naming_both(table):
  table(facts(cpu_targets=CPU - {"lapack_spotrf_ffi"}))
  with pytest.raises(ExportError) as e:
    jaxport.export(_cholesky(), for_jax="0.9.2")(_batch_spec())
  msg = str(e.value)
  assert msg.startswith("Cannot export '<lambda>' for jax 0.9.2: it calls custom-call target(s) "
                        "that release cannot run")
  assert "'lapack_spotrf_ffi'" in msg and "on cpu: does not register it (measured)" in msg
  # The caller may vouch for the target.
  exp = jaxport.export(_cholesky(), for_jax="0.9.2", disabled_checks=[
      jaxport.DisabledSafetyCheck.custom_call("lapack_spotrf_ffi")])(_batch_spec())
  assert exp.for_jax.release == "0.9.2"


def _site(target: str) -> _walk.CustomCallSite:
  return _walk.CustomCallSite(target=target, location='loc("f.py":3:1)', operand_types=(),
                              result_types=(), attributes=(), op_text="")


def test_another_platforms_target_is_judged_by_the_release_stable_table(table):
  target = _for_jax.consumer_target("0.9.2")
  _for_jax.check_custom_calls([_site("tpu_custom_call")], target, ("tpu",), (), "f")
  with pytest.raises(ExportError, match=r"'tpu_new_kernel' \(first at loc\(\"f\.py\":3:1\)\): jax "
                                        r"0\.9\.2 on tpu: does not list it in its stable table"):
    _for_jax.check_custom_calls([_site("tpu_new_kernel")], target, ("tpu",), (), "f")
  # A platform the table has nothing on cannot refuse; one platform that runs it is enough.
  _for_jax.check_custom_calls([_site("tpu_new_kernel")], target, ("rocm",), (), "f")
  _for_jax.check_custom_calls([_site("lapack_spotrf_ffi")], target, ("cpu", "tpu"), (), "f")


def test_an_op_newer_than_the_release_stablehlo_is_refused_naming_release_version_and_op(table):
  table(facts(stablehlo_writes="1.8.0"))
  f = jax.jit(lambda x: lax.exp(x, accuracy=lax.Tolerance(atol=1e-5, rtol=1e-5, ulps=2)))
  with pytest.raises(ExportError) as e:
    jaxport.export(f, for_jax="0.9.2")(jax.ShapeDtypeStruct((3,), np.float32))
  msg = str(e.value)
  assert "for jax 0.9.2: its jaxlib reads StableHLO up to VHLO version 1.8.0" in msg
  assert "stablehlo.exponential (vhlo.exponential_v2)" in msg
  # Today's StableHLO has the attribute: exported for 1.14.0 it passes.
  table(facts(stablehlo_writes="1.14.0"))
  assert jaxport.export(f, for_jax="0.9.2")(jax.ShapeDtypeStruct((3,), np.float32)).for_jax


def test_with_the_shipped_table_a_target_a_release_lacks_is_refused_and_one_it_has_is_not():
  # The shipped table's stable rocm targets of 0.8.3 lack hip_threefry2x32_ffi, which 0.9.2 lists.
  key = jax.ShapeDtypeStruct((2,), np.uint32)
  f = jax.jit(lambda k: jax.random.uniform(jax.random.wrap_key_data(k, impl="threefry2x32"), (8,)))
  before = jax.config.jax_threefry_gpu_kernel_lowering
  jax.config.update("jax_threefry_gpu_kernel_lowering", True)
  try:
    with pytest.raises(ExportError, match=r"'hip_threefry2x32_ffi' .*jax 0\.8\.3 on rocm: does "
                                          r"not list it in its stable table"):
      jaxport.export(f, platforms=("rocm",), for_jax="0.8.3")(key)
    assert jaxport.export(f, platforms=("rocm",), for_jax="0.9.2")(key).for_jax.release == "0.9.2"
  finally:
    jax.config.update("jax_threefry_gpu_kernel_lowering", before)


def test_the_oldest_consumer_is_the_oldest_release_runs_on_names_for_what_jaxport_writes():
  from jaxport.releases._features import runs_on_record
  oldest = _for_jax.oldest_consumer()
  blob = jaxport.export(jax.jit(jnp.sin), for_jax=oldest)(
      jax.ShapeDtypeStruct((3,), np.float32)).serialize()
  record = runs_on_record(blob)
  assert record.runs_on["cpu"][0] == oldest
  measured = [f.version for f in _table.releases() if f.measured]
  below = measured[measured.index(oldest) - 1]
  # The release below refuses it: by its device count, or by the envelope layout (a jax whose
  # own layout is header 12, which that release does not read either).
  assert f"below: {below}: envelope" in record.summary["cpu"], record.summary["cpu"]
  with pytest.raises(ExportError, match=f"jax {below}: it reads the device count only from the "
                                        f"legacy 16-bit field.* from {oldest} on"):
    _for_jax.consumer_target(below)
