"""Each distinct module compiled once per process: identical modules share an executable or an
error, distinct ones are compiled each, and sharing can be turned off again."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxport.harness._worker import _executables


@pytest.fixture
def compiles():
  """The modules jax was asked to compile while sharing is on (their names, in order)."""
  _executables.share_within_process()
  asked: list[str] = []
  compile_ = _executables.COMPILE.saved

  def counted(backend, computation, *rest, **kwargs):
    asked.append(str(computation.operation.attributes["sym_name"]))
    return compile_(backend, computation, *rest, **kwargs)

  _executables.COMPILE.saved = counted
  yield asked
  _executables.COMPILE.saved = compile_
  _executables.stop_sharing()


def _twice(body):
  """Two distinct jitted functions of the same name and body (distinct to jax's own caches)."""
  def make():
    def scaled_sine(x):
      return body(x)
    return jax.jit(scaled_sine)
  return make(), make()


def test_identical_modules_are_compiled_once_and_distinct_ones_each(compiles):
  x = np.linspace(0, 1, 8, dtype=np.float32)
  first, second = _twice(lambda x: jnp.sin(x) * 2)
  np.testing.assert_allclose(first(x), np.sin(x) * 2, rtol=1e-6)
  np.testing.assert_allclose(second(x), np.sin(x) * 2, rtol=1e-6)
  assert len(compiles) == 1
  other, _ = _twice(lambda x: jnp.cos(x) * 2)
  np.testing.assert_allclose(other(x), np.cos(x) * 2, rtol=1e-6)
  assert len(compiles) == 2


def test_a_module_that_fails_to_compile_fails_again_with_the_same_error_uncompiled(compiles):
  def unregistered(x):
    return jax.ffi.ffi_call("jaxport_test_target_nobody_registers",
                            jax.ShapeDtypeStruct(x.shape, x.dtype),
                            custom_call_api_version=2)(x)  # an untyped call: found missing by XLA

  first, second = _twice(unregistered)
  x = np.ones(4, np.float32)
  with pytest.raises(Exception) as before:
    first(x)
  with pytest.raises(type(before.value)) as again:
    second(x)
  assert "jaxport_test_target_nobody_registers" in str(before.value)
  assert str(again.value) == str(before.value)
  assert len(compiles) == 1


def test_without_sharing_each_module_is_compiled():
  _executables.share_within_process()
  _executables.stop_sharing()
  from jax._src import compiler
  assert compiler.compile_or_get_cached is not _executables._compile_once
  first, second = _twice(lambda x: jnp.tanh(x))
  x = np.ones(3, np.float32)
  assert id(first.lower(x).compile().runtime_executable()) != id(
      second.lower(x).compile().runtime_executable())


@pytest.fixture
def jax_keys(monkeypatch):
  """How many times the memo computed jax's compilation-cache key (jax's own compile step
  may compute it too, for its persistent cache; those are not counted)."""
  computed = []
  key = _executables._cache_key.get

  def counted(*args, **kwargs):
    computed.append(1)
    return key(*args, **kwargs)

  monkeypatch.setattr(_executables, "_cache_key", types.SimpleNamespace(get=counted))
  return computed


def test_a_request_seen_before_is_shared_without_computing_jax_key_again(compiles, jax_keys):
  x = np.linspace(0, 1, 8, dtype=np.float32)
  for f in _twice(lambda x: jnp.sin(x) * 3):  # called from one line: the same locations too
    np.testing.assert_allclose(f(x), np.sin(x) * 3, rtol=1e-6)
  assert len(compiles) == 1
  assert len(jax_keys) == 1


def test_modules_differing_only_in_locations_share_one_executable_and_one_jax_key(
    compiles, jax_keys):
  def make(body):
    def scaled_cosine(x):
      return body(x)
    return jax.jit(scaled_cosine)

  x = np.linspace(0, 1, 8, dtype=np.float32)
  here = make(lambda x: jnp.cos(x) * 3)
  there = make(
      lambda x: jnp.cos(x) * 3)  # another source line: other locations, the same computation
  np.testing.assert_allclose(here(x), np.cos(x) * 3, rtol=1e-6)
  np.testing.assert_allclose(there(x), np.cos(x) * 3, rtol=1e-6)
  assert len(compiles) == 1
  assert len(jax_keys) == 1  # the second request is known by its digest without locations


def test_requests_without_a_digest_are_still_shared_by_jax_key(compiles, jax_keys, monkeypatch):
  monkeypatch.setattr(_executables, "_digest", lambda *args: None)
  x = np.ones(5, np.float32)
  first, second = _twice(lambda x: jnp.exp(x) - 1)
  np.testing.assert_allclose(first(x), np.expm1(x), rtol=1e-6)
  np.testing.assert_allclose(second(x), np.expm1(x), rtol=1e-6)
  assert len(compiles) == 1
  assert len(jax_keys) == 2


def test_stopping_forgets_the_digests_too():
  _executables.share_within_process()
  first, _ = _twice(lambda x: x * 5)
  first(np.ones(3, np.float32))
  assert _executables._keys
  _executables.stop_sharing()
  assert not _executables._keys and not _executables._memo


def _two_function_module(argument_attributes: str) -> str:
  """A module whose two functions both carry ``argument_attributes`` on their argument."""
  return f"""
module @doubled attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<4xf32>{argument_attributes}) -> tensor<4xf32> {{
    %0 = call @twice(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
  func.func private @twice(%arg0: tensor<4xf32>{argument_attributes}) -> tensor<4xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }}
}}"""


def _memo_key(text: str) -> str | None:
  """The memo's key of the module ``text`` compiled for one CPU device; keying must leave
  the request as it came, since that is what reaches the compiler."""
  from jax._src import compiler
  from jax._src.interpreters import mlir
  from jaxlib.mlir import ir

  device = jax.devices("cpu")[0]
  with mlir.make_ir_context():
    module = ir.Module.parse(text)
    before = str(module)
    key = _executables._key(device.client, module, np.array([device]),
                            compiler.get_compile_options(num_replicas=1, num_partitions=1))
    assert str(module) == before
    return key


@pytest.mark.parametrize("stated", [' {mhlo.layout_mode = "default"}', " {}"])
def test_modules_differing_only_in_stating_the_default_layout_share_a_key(stated):
  plain = _memo_key(_two_function_module(""))
  assert plain is not None
  assert _memo_key(_two_function_module(stated)) == plain


def test_a_layout_mode_other_than_the_default_keeps_its_own_key():
  plain = _memo_key(_two_function_module(""))
  other = _memo_key(_two_function_module(' {mhlo.layout_mode = "{0}"}'))
  assert other is not None and other != plain


def test_jax_cache_key_of_a_module_differs_under_another_jaxlib_version(monkeypatch):
  """The cross-run cache is jax's own, keyed by jax's key: an executable kept by another
  jaxlib is never loaded, because the key of the same module changes with the version."""
  from jax._src import cache_key, compiler, xla_bridge
  lowered = jax.jit(lambda x: jnp.sin(x) * 2).lower(np.ones(4, np.float32))
  module = lowered.compiler_ir("stablehlo")
  devices = np.array(jax.devices()[:1])
  options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
  backend = xla_bridge.get_backend()
  key = cache_key.get(module, devices, options, backend)
  assert cache_key.get(module, devices, options, backend) == key
  monkeypatch.setattr(cache_key, "jaxlib_version_str", "0.0.1.another")
  assert cache_key.get(module, devices, options, backend) != key
