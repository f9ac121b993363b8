"""The calling contract of an export, compared path by path: a renamed dict key, a changed input
dtype, a changed output shape and reordered outputs each name the path and what changed, while
the module may stay the same."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxport
from jaxport.harness._worker import _calling


def _contract(fun, *args):
  specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype),
                                 args)
  exp = jaxport.export(jax.jit(fun))(*specs)
  return _calling.contract_of(jaxport.deserialize(exp.serialize()))


W = np.ones((3,), np.float32)


def test_the_same_function_has_the_same_contract():
  f = lambda p, x: p["w1"] * x
  a, b = _contract(f, {"w1": W}, W), _contract(f, {"w1": W}, W)
  assert _calling.diff(a, b) == _calling.ContractDiff()
  assert a.inputs == (("args[0]['w1']", "float32[3]"), ("args[1]", "float32[3]"))
  assert a.outputs == (("output", "float32[3]"),)


def test_a_renamed_dict_key_names_the_path_removed_and_added():
  old = _contract(lambda p, x: p["w1"] * x, {"w1": W}, W)
  new = _contract(lambda p, x: p["w1x"] * x, {"w1x": W}, W)
  got = _calling.diff(old, new)
  assert got.by_function == ("input args[0]['w1'] (float32[3]) removed",
                             "input args[0]['w1x'] (float32[3]) added")
  assert got.by_jax == ()


def test_a_changed_input_dtype_names_the_argument():
  old = _contract(lambda x, y: x + y, W, W)
  new = _contract(lambda x, y: x + y.astype(np.float32), W, W.astype(np.float16))
  assert _calling.diff(old, new).by_function == ("input args[1]: float32[3] became float16[3]",)


def test_a_changed_output_shape_names_the_output():
  old = _contract(lambda x: (x * 2, x), np.ones((5,), np.float32))
  new = _contract(lambda x: (x.reshape(5, 1) * 2, x), np.ones((5,), np.float32))
  assert _calling.diff(old, new).by_function == ("output[0]: float32[5] became float32[5, 1]",)


def test_reordered_outputs_of_other_types_name_each_output():
  x = np.ones((4,), np.float32)
  old = _contract(lambda a: (a, jnp.sum(a)), x)
  new = _contract(lambda a: (jnp.sum(a), a), x)
  assert _calling.diff(old, new).by_function == ("output[0]: float32[4] became float32[]",
                                                 "output[1]: float32[] became float32[4]")


def test_a_dict_output_of_other_keys_names_them():
  x = np.ones((2,), np.float32)
  old = _contract(lambda a: {"loss": a.sum(), "grad": a}, x)
  new = _contract(lambda a: {"loss": a.sum(), "grads": a}, x)
  assert _calling.diff(old, new).by_function == ("output['grad'] (float32[2]) removed",
                                                 "output['grads'] (float32[2]) added")


def test_a_calling_convention_version_is_jaxs_not_the_functions():
  import dataclasses
  a = _contract(lambda x: x, W)
  b = dataclasses.replace(a, calling_convention_version=a.calling_convention_version + 1)
  got = _calling.diff(a, b)
  assert got.by_function == () and len(got.by_jax) == 1
  assert "calling convention version" in got.by_jax[0]
