"""``jaxport.export(f, for_tf=...)``: an artifact written for what a TensorFlow release's
``XlaCallModule`` reads (its StableHLO version and calling conventions, from jaxport's
TensorFlow table), and what it refuses. TensorFlow itself is not needed: what is written is
read back here."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport import _config
from jaxport.errors import ExportError, ReleaseTableError
from jaxport.export import _for_jax, _for_tf, _mlir
from jaxport.releases._tf_table import tf_release, tf_releases


def _f(x):
  return jnp.sin(x) * 2.0 + jnp.tanh(x)


def _batch_spec():
  b, = jaxport.symbolic_shape("b")
  return jax.ShapeDtypeStruct((b, 4), np.float32)


def _expected_stablehlo(release) -> str:
  high = _mlir.stablehlo_version_range()[1]
  return min(release.stablehlo, high, key=_mlir.version_key)


@pytest.mark.parametrize("version", ["2.19", "2.21"])
def test_a_symbolic_batch_is_written_for_the_releases_stablehlo_and_calling_convention(version):
  release = tf_release(version)
  exp = jaxport.export(jax.jit(_f), for_tf=version)(_batch_spec())
  assert _mlir.artifact_version(exp.mlir_module_serialized) == _expected_stablehlo(release)
  # The shape assertion is written as the release's StableHLO knows it, not custom_call_v2.
  assert b"custom_call_v2" not in bytes(exp.mlir_module_serialized)
  cc = exp.calling_convention_version
  assert release.takes(cc)
  low, high = release.calling_convention
  assert cc == (_config.calling_convention_version() if release.takes(
      _config.calling_convention_version()) else min(high, 10))
  assert (exp.for_tf.release, exp.for_jax) == (release.version, None)
  assert exp.vjp().for_tf.release == release.version  # the VJP is written for it too
  x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
  back = jaxport.deserialize(exp.serialize())
  np.testing.assert_allclose(back.call(x), jax.jit(_f)(x), rtol=1e-6, atol=1e-6)


def test_without_for_tf_the_module_is_the_installed_jaxs():
  exp = jaxport.export(jax.jit(_f))(_batch_spec())
  assert exp.for_tf is None
  assert _mlir.artifact_version(exp.mlir_module_serialized) == _mlir.default_target_version()


def test_a_lapack_call_is_refused_at_export_naming_the_target_and_the_release():
  def eigh(x):
    return jnp.linalg.eigh(x @ x.T)[0]
  with pytest.raises(ExportError, match=r"for TensorFlow 2\.21\.0: .*no handler for:\n  - "
                     r"'lapack_\w+' \(first at .*\): jaxlib's own kernel") as e:
    jaxport.export(jax.jit(eigh), platforms=("cpu",), for_tf="2.21")(
        jax.ShapeDtypeStruct((4, 4), np.float32))
  assert "disabled_checks" not in str(e.value)  # no TensorFlow registers jaxlib's kernels


def test_a_projects_own_target_is_refused_unless_the_export_allows_it():
  target = _for_tf.consumer_target("2.21")
  sites = [types.SimpleNamespace(target="my_kernel", location="loc(f)"),
           types.SimpleNamespace(target="shape_assertion", location="loc(g)")]
  with pytest.raises(ExportError, match=r"(?s)'my_kernel' \(first at loc\(f\)\): no handler in "
                     r"TensorFlow.*DisabledSafetyCheck.custom_call\('my_kernel'\)"):
    _for_tf.check_custom_calls(sites, target, (), "f")
  _for_tf.check_custom_calls(sites, target, (jaxport.DisabledSafetyCheck.custom_call("my_kernel"),),
                             "f")


def test_an_operation_newer_than_the_releases_stablehlo_is_refused_naming_tensorflow():
  target = _for_tf.consumer_target("2.21")
  error = _for_jax._unsupported(RuntimeError("failed to legalize operation 'vhlo.new_op_v2'"),
                                target, "f")
  text = str(error)
  assert text.startswith("Cannot export 'f' for TensorFlow 2.21.0: TensorFlow reads StableHLO "
                         f"up to VHLO version {tf_release('2.21').stablehlo}")
  assert "stablehlo.new_op (vhlo.new_op_v2)" in text and "(for_tf=...)" in text


def test_for_tf_with_for_jax_or_a_release_the_table_lacks_is_refused():
  with pytest.raises(ExportError, match=r"for_jax='0\.10\.2' and for_tf='2\.21' name two"):
    jaxport.export(jax.jit(_f), for_jax="0.10.2", for_tf="2.21")
  with pytest.raises(ReleaseTableError, match=r"for_tf='2\.17'") as e:
    jaxport.export(jax.jit(_f), for_tf="2.17")
  assert all(r.version in str(e.value) for r in tf_releases())
