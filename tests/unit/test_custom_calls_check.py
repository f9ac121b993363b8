"""The export-time custom-call safety check: refusals, how to allow, and host callbacks."""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport
from jaxport import DisabledSafetyCheck

X = np.arange(3, dtype=np.float32)


def _ffi(target):
  return lambda x: jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def two_targets(x):
  return _ffi("unstable_a")(x) + _ffi("unstable_b")(x)


def test_refusal_names_each_target_its_location_and_the_fix():
  with pytest.raises(jaxport.CustomCallError) as info:
    jaxport.export(jax.jit(two_targets))(X)
  msg = str(info.value)
  assert isinstance(info.value, ValueError)
  assert msg.startswith("Cannot serialize code with custom calls whose targets have no "
                        "compatibility guarantees.")
  assert "Examples are:\n%0 = stablehlo.custom_call @unstable_a(" in msg
  assert "- 'unstable_a': 1 call(s), first at loc(" in msg
  assert "- 'unstable_b': 1 call(s), first at loc(" in msg
  assert "test_custom_calls_check.py" in msg  # the location points at the user's code
  assert ("disabled_checks=[DisabledSafetyCheck.custom_call('unstable_a'), "
          "DisabledSafetyCheck.custom_call('unstable_b')]") in msg
  assert "DisabledSafetyCheck.custom_call('ALL')" in msg


def test_allowing_one_target_still_refuses_the_other():
  with pytest.raises(jaxport.CustomCallError) as info:
    jaxport.export(jax.jit(two_targets),
                   disabled_checks=[DisabledSafetyCheck.custom_call("unstable_a")])(X)
  assert "'unstable_b'" in str(info.value)
  assert "'unstable_a'" not in str(info.value)


def test_allowing_every_target_by_name_or_all():
  named = [DisabledSafetyCheck.custom_call("unstable_a"), DisabledSafetyCheck.custom_call("unstable_b")]
  for checks in (named, [DisabledSafetyCheck.custom_call("ALL")]):
    exp = jaxport.export(jax.jit(two_targets), disabled_checks=checks)(X)
    assert tuple(exp.disabled_safety_checks) == tuple(checks)


def test_calls_nested_in_control_flow_are_found():
  def f(x, p):
    return lax.cond(p, _ffi("unstable_nested"), lambda y: y, x)
  with pytest.raises(jaxport.CustomCallError, match="'unstable_nested'"):
    jaxport.export(jax.jit(f))(X, True)


def test_stable_lapack_targets_need_no_permission():
  exp = jaxport.export(jax.jit(jnp.linalg.cholesky))(np.eye(3, dtype=np.float32))
  assert "lapack_spotrf_ffi" in exp.mlir_module()
  assert exp.disabled_safety_checks == ()


def test_jax_disabled_safety_checks_are_accepted():
  exp = jaxport.export(jax.jit(_ffi("unstable_a")),
                       disabled_checks=[jax.export.DisabledSafetyCheck.custom_call("unstable_a")])(X)
  assert exp.disabled_safety_checks == (DisabledSafetyCheck.custom_call("unstable_a"),)


def test_disabled_checks_must_be_descriptors():
  with pytest.raises(jaxport.ExportError,
                     match=r"disabled_checks\[0\] must be a DisabledSafetyCheck but is 'unstable_a' of type str"):
    jaxport.export(jax.jit(jnp.sin), disabled_checks=["unstable_a"])


@pytest.mark.parametrize("callback", [
    lambda x: jax.debug.callback(print, x),
    lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x),
])
def test_host_callbacks_are_refused_with_jaxs_message(callback):
  with pytest.raises(NotImplementedError, match="^serialization of host_callbacks is not yet implemented$"):
    jaxport.export(jax.jit(callback))(X)


@pytest.mark.parametrize("bad", [3, None, ""])
def test_custom_call_descriptor_needs_a_target_name(bad):
  with pytest.raises(TypeError, match="non-empty string"):
    jaxport.DisabledSafetyCheck.custom_call(bad)
