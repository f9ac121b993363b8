"""jaxport.call refuses wrong arguments and contexts with messages naming where and what."""

import dataclasses
import re

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.calling import _primitive

F32_4 = jax.ShapeDtypeStruct((4,), jnp.float32)


def _f(x, *, b):
  return jnp.sin(x) * b


@pytest.fixture(scope="module")
def exp(exporter):
  export = exporter.export
  return export(jax.jit(_f))(F32_4, b=F32_4)


X = np.arange(4, dtype=np.float32)


def test_call_matches_the_original_function(exp):
  np.testing.assert_allclose(jaxport.call(exp)(X, b=X + 1), _f(X, b=X + 1), rtol=1e-6)


def test_call_binds_jaxports_own_primitive(exp):
  jaxpr = jax.make_jaxpr(jaxport.call(exp))(X, b=X)
  inner = jaxpr.eqns[0].params["call_jaxpr"].jaxpr
  (eqn,) = inner.eqns
  assert eqn.primitive is _primitive.call_exported_p
  assert _primitive.callee_of(eqn.params) is exp


def test_method_call_on_jaxport_record_is_the_same_as_call():
  e = jaxport.export(jax.jit(jnp.cos))(F32_4)
  np.testing.assert_allclose(e.call(X), jnp.cos(X), rtol=1e-6)
  jaxpr = jax.make_jaxpr(e.call)(X)
  assert jaxpr.eqns[0].params["call_jaxpr"].jaxpr.eqns[0].primitive is _primitive.call_exported_p


def test_refuses_something_that_is_not_an_exported():
  with pytest.raises(jaxport.CallError, match="^The exported argument must be an export.Exported. "
                     "Found <function _f.*\\n.*a function lacks"):
    jaxport.call(_f)


@pytest.mark.parametrize("args, kwargs, fragment", [
    ((X, X), {"b": X},
     "args is a tuple of length 2 in the invocation and a tuple of length 1 when exported"),
    ((X,), {},
     "kwargs is a dict with keys [] in the invocation and a dict with keys ['b'] when "
     "exported, so the keys differ (missing ['b'], unexpected [])"),
    (((X,),), {"b": X},
     "args[0] is a tuple of length 1 in the invocation and a pytree leaf when exported, "
     "so their Python types differ"),
    ((X,), {"c": X},
     "kwargs is a dict with keys ['c'] in the invocation and a dict with keys ['b'] when "
     "exported, so the keys differ (missing ['b'], unexpected ['c'])"),
])
def test_pytree_mismatch_names_the_path(exp, args, kwargs, fragment):
  with pytest.raises(jaxport.CallError) as info:
    jaxport.call(exp)(*args, **kwargs)
  msg = str(info.value)
  assert msg.startswith(
      "The invocation args and kwargs must have the same pytree structure as when the "
      "function '_f' was exported, but they have the following structural differences:")
  assert fragment in msg


def test_pytree_mismatch_is_a_value_error_like_jax(exp):
  with pytest.raises(ValueError):
    jaxport.call(exp)(X)


def test_rank_mismatch(exp):
  with pytest.raises(jaxport.CallError,
                     match=re.escape("Rank mismatch for args[0]: expected (4,) and called with (1, 4)")):
    jaxport.call(exp)(X[None], b=X)


def test_dtype_mismatch(exp):
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Dtype mismatch for kwargs['b']: expected float32 and called with float16")):
    jaxport.call(exp)(X, b=X.astype(np.float16))


def test_constant_shape_mismatch(exp):
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Shape mismatch for kwargs['b'].shape[0] (expected same constant): "
      "expected (4,) and called with (6,)")):
    jaxport.call(exp)(X, b=np.zeros(6, np.float32))


def test_checks_also_apply_under_jit(exp):
  with pytest.raises(jaxport.CallError, match=re.escape("Rank mismatch for args[0]")):
    jax.jit(jaxport.call(exp))(X[None], b=X)


def test_nested_pytree_argument_paths(exporter):
  export = exporter.export
  spec = {"w": [F32_4, jax.ShapeDtypeStruct((2, 3), jnp.int32)]}
  e = export(jax.jit(lambda p: p["w"][0] + p["w"][1].sum()))(spec)
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Shape mismatch for args[0]['w'][1].shape[1] (expected same constant): "
      "expected (2, 3) and called with (2, 4)")):
    jaxport.call(e)({"w": [X, np.zeros((2, 4), np.int32)]})


def test_platform_not_exported_for_is_refused(exporter):
  export = exporter.export
  e = export(jax.jit(jnp.sin), platforms=["tpu"])(F32_4)
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Function 'sin' was exported for platforms '('tpu',)' but it is used on '('cpu',)'.")):
    jaxport.call(e)(X)


def test_platform_check_can_be_disabled(exporter):
  export, disabled = exporter.export, exporter.DisabledSafetyCheck
  e = export(jax.jit(jnp.sin), platforms=["tpu"], disabled_checks=[disabled.platform()])(F32_4)
  np.testing.assert_allclose(jaxport.call(e)(X), np.sin(X), rtol=1e-6)


def test_device_count_mismatch_is_refused(exp):
  two = dataclasses.replace(exp, nr_devices=2)
  with pytest.raises(jaxport.CallError, match=re.escape(
      "Function _f was exported for 2 devices and is called in a context with 1 devices, "
      "which is not allowed.")):
    jax.jit(jaxport.call(two))(X, b=X)


def test_jax_reference_gives_the_same_messages():
  """The messages above are jax's own; compare against jax.export's call."""
  exp = jax.export.export(jax.jit(_f))(F32_4, b=F32_4)
  for args, kwargs in [((X[None],), {"b": X}), ((X,), {"b": X.astype(np.float16)}),
                       ((X,), {"b": np.zeros(6, np.float32)})]:
    with pytest.raises(ValueError) as want:
      exp.call(*args, **kwargs)
    with pytest.raises(jaxport.CallError) as got:
      jaxport.call(exp)(*args, **kwargs)
    assert str(got.value) == str(want.value)


def test_callee_branch_for_each_caller_platform(exporter):
  export, disabled = exporter.export, exporter.DisabledSafetyCheck
  e = export(jax.jit(jnp.sin), platforms=["tpu", "cpu", "cuda"])(F32_4)
  assert _primitive.callee_platform_indices(e, ["cuda", "cpu"]) == [2, 1]
  assert _primitive.callee_platform_indices(e, ["cpu"]) == [1]
  with pytest.raises(jaxport.CallError, match=re.escape("but it is used on '('cpu', 'rocm')'")):
    _primitive.callee_platform_indices(e, ["cpu", "rocm"])
  lenient = export(jax.jit(jnp.sin), platforms=["tpu", "cpu"],
                   disabled_checks=[disabled.platform()])(F32_4)
  assert _primitive.callee_platform_indices(lenient, ["cuda", "cpu"]) == [0, 1]
