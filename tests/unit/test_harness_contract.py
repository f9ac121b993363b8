"""The replay contract: storable leaves, cotangents, the run of an Exported and its VJP,
exporting a function, and the release scripts loading the same module by its path."""

import ast
import contextlib
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

import jaxport  # noqa: E402
from jaxport.harness import checkers
from jaxport.harness._worker import _contract


def test_cotangents_are_ones_for_inexact_outputs_and_float0_for_the_others():
  ct = _contract.cotangent(np.zeros((2, 3), np.float32))
  assert ct.dtype == np.float32 and ct.shape == (2, 3) and (ct == 1).all()
  for out in (np.zeros((4,), np.int32), np.zeros((), bool), jax.random.key(0)):
    assert _contract.cotangent(out).dtype == jax.dtypes.float0


def test_keys_are_stored_as_key_data_and_wrapped_back_for_the_call():
  key = jax.random.key(3)
  stored = _contract.storable(key)
  assert stored.dtype == np.uint32
  aval = jax.ShapeDtypeStruct(key.shape, key.dtype)
  back, plain = _contract.callable_leaves([stored, np.ones(2)], [aval, jax.ShapeDtypeStruct((2,), np.float64)])
  assert jax.dtypes.issubdtype(back.dtype, jax.dtypes.prng_key)
  assert (np.asarray(jax.random.key_data(back)) == stored).all() and plain is not None


def _exported(fun, *args, vjp_order=1):
  exp = jaxport.export(jax.jit(fun))(*(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args))
  return jaxport.deserialize(exp.serialize(vjp_order=vjp_order))


def test_a_blob_with_a_vjp_runs_its_vjp_with_the_contract_cotangents():
  x = np.arange(3, dtype=np.float32)
  exp = _exported(lambda x: (jnp.sin(x), jnp.argmax(x)), x)
  outs = _contract.run_exported(exp, [x])
  # sin(x), argmax(x), then the input cotangent: cos(x) * 1 (the integer output gets float0).
  assert len(outs) == 3
  np.testing.assert_allclose(outs[0], np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(outs[2], np.cos(x), rtol=1e-6)


def test_integer_bool_and_key_inputs_have_no_cotangent_and_their_vjp_outputs_are_left_out():
  x, n, mask = np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int32), np.ones(3, bool)
  key = jax.random.key(0)
  exp = _exported(lambda x, n, m, k: jnp.where(m, x * n, x) + jax.random.uniform(k, (3,)),
                  x, n, mask, key)
  stored = [x, n, mask, _contract.storable(key)]
  outs = _contract.run_exported(exp, stored)
  # The output, then the VJP's output for x alone: the others would be float0, holding nothing.
  assert [o.dtype for o in outs] == [np.float32, np.float32]
  np.testing.assert_allclose(outs[1], np.where(mask, n, 1).astype(np.float32))
  assert [_contract.has_cotangent(a.dtype) for a in exp.in_avals] == [True, False, False, False]
  with pytest.raises(ValueError, match="the VJP gives 1 outputs for 2 inputs"):
    _contract.with_cotangent([x], exp.in_avals[:2])


def test_a_blob_without_a_vjp_runs_only_the_call():
  x = np.arange(3, dtype=np.float32)
  assert len(_contract.run_exported(_exported(jnp.sin, x, vjp_order=0), [x])) == 1


def test_the_placement_and_call_hooks_see_the_call_and_the_vjp_call():
  x = np.arange(3, dtype=np.float32)
  exp = _exported(jnp.sin, x)
  placed, called = [], []

  def place(e, leaves):
    placed.append(len(leaves))
    return leaves, contextlib.nullcontext()

  def call(e):
    called.append(e)
    return e.call

  _contract.run_exported(exp, [x], place=place, call=call)
  assert placed == [1, 2] and len(called) == 2  # the call (x), then the VJP (x, cotangent)


def test_a_wrong_number_of_stored_inputs_is_refused():
  x = np.arange(3, dtype=np.float32)
  with pytest.raises(ValueError, match="2 stored inputs but the Exported takes 1"):
    _contract.run_exported(_exported(jnp.sin, x), [x, x])


class _OldExportModule:
  """A release before 0.4.30: ``lowering_platforms``, and ``call`` a module function."""

  def __init__(self):
    self.seen = {}

  def export(self, jitted, *, lowering_platforms=None, disabled_checks=()):
    self.seen.update(platforms=lowering_platforms, checks=disabled_checks)
    return lambda *specs: ("exported", specs)

  def call(self, exp):
    return lambda *args: ("called", exp, args)


def test_release_export_speaks_the_spellings_of_old_releases():
  module = _OldExportModule()
  release = _contract.ReleaseExport(module)
  spec = np.zeros((2,), np.float32)
  kind, specs = _contract.export_function(release.exporter, jnp.sin, (spec,), {},
                                          platforms=["cpu"])
  assert kind == "exported" and specs[0].shape == (2,)
  assert module.seen["platforms"] == ("cpu",)
  assert release.call("E")(1)[:2] == ("called", "E")


def test_the_contract_imports_only_numpy_and_public_jax():
  tree = ast.parse(Path(_contract.__file__).read_text())
  imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
  imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
  third_party = {m for m in imported if m.split(".")[0] in ("jax", "jaxport", "numpy", "jaxlib")}
  assert third_party == {"jax", "numpy"}, third_party


def test_the_release_scripts_load_the_packaged_contract_and_checkers():
  from jaxport_in_release import recorder as _recorder
  from jaxport_in_release import replayer as _replayer
  for script in (_recorder, _replayer):
    assert Path(script._release.CONTRACT) == Path(_contract.__file__)
    assert Path(script._release.CHECKERS) == Path(checkers.__file__)
  assert _replayer._release.contract().run_exported.__doc__ == _contract.run_exported.__doc__
