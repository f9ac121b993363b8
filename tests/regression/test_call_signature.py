"""A record whose module's ``main`` contradicts the record is refused, naming both sides.

jax 0.10.2 trusts the record: differing element types are converted, and extra
results end in an internal ``safe_zip`` length error. jaxport refuses such a record (a deliberate difference, listed
in docs/calling.md). Each record here is a real one with a field or its module
replaced; the jax cases show the silent behaviour the check prevents.
"""

import dataclasses

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

F32_3 = jax.ShapeDtypeStruct((3,), np.float32)
X = np.arange(3, dtype=np.float32)


def _two_results(x):
  return jnp.sin(x), jnp.cos(x)


@pytest.fixture(scope="module")
def two():
  return jaxport.export(jax.jit(_two_results))(F32_3)


def _one_result(exp):
  """``exp`` with its record cut to the first result; the module still returns two."""
  return dataclasses.replace(
      exp, out_avals=exp.out_avals[:1], out_tree=jax.tree_util.tree_structure(0),
      _out_named_shardings=exp._out_named_shardings[:1], out_shardings_hlo=exp.out_shardings_hlo[:1])


def test_a_module_with_more_results_than_its_record_is_refused(two):
  with pytest.raises(jaxport.CallError,
                     match=r"contradicts its own record: number of results: the module's main "
                           r"has 2 \(tensor<3xf32>, tensor<3xf32>\), but the record says 1 "
                           r"\(1 array result\(s\): f32\[3\]\)"):
    jaxport.call(_one_result(two))(X)


def test_the_same_blob_fails_in_jax_only_on_an_internal_length_check(two):
  blob = _one_result(two).serialize()
  with pytest.raises(ValueError, match="safe_zip"):
    jax.export.deserialize(blob).call(X)
  with pytest.raises(jaxport.CallError, match="number of results"):
    jaxport.deserialize(blob).call(X)


def _retyped_result(exp, dtype):
  out = (exp.out_avals[0].update(dtype=np.dtype(dtype)), *exp.out_avals[1:])
  return dataclasses.replace(exp, out_avals=out)


def test_a_result_dtype_differing_from_the_record_is_refused_not_converted(two):
  with pytest.raises(jaxport.CallError,
                     match=r"output result 0 \(flat result 0\): the module's main has type "
                           r"tensor<3xf32>, but the record says i32\[3\]"):
    jaxport.call(_retyped_result(two, np.int32))(X)
  converted = jax.export.deserialize(_retyped_result(two, np.int32).serialize()).call(X)
  assert converted[0].dtype == np.int32


def test_an_argument_dtype_differing_from_the_record_is_refused(two):
  exp = dataclasses.replace(two, in_avals=(two.in_avals[0].update(dtype=np.dtype(np.int32)),))
  with pytest.raises(jaxport.CallError,
                     match=r"input argument 0 \(flat argument 0\): the module's main has type "
                           r"tensor<3xf32>, but the record says i32\[3\]"):
    jaxport.call(exp)(X.astype(np.int32))


def test_a_constant_dimension_differing_from_the_record_is_refused(two):
  exp = dataclasses.replace(two, out_avals=tuple(a.update(shape=(4,)) for a in two.out_avals))
  with pytest.raises(jaxport.CallError, match=r"output result 0 .* tensor<3xf32>, .* f32\[4\]"):
    jaxport.call(exp)(X)


def test_a_module_of_another_function_is_refused(two):
  other = jaxport.export(jax.jit(jnp.sin))(F32_3)
  swapped = dataclasses.replace(two, mlir_module_serialized=other.mlir_module_serialized)
  with pytest.raises(jaxport.CallError, match=r"number of results: the module's main has 1 "):
    jaxport.call(swapped)(X)


def test_a_module_taking_a_platform_index_its_record_does_not_mention_is_refused():
  # The shape of a version 4 module made with dim_args_spec: main takes a leading
  # integer scalar nobody passes.
  multi = jaxport.export(jax.jit(jnp.sin), platforms=("cpu", "tpu"))(F32_3)
  single = dataclasses.replace(multi, platforms=("cpu",))
  with pytest.raises(jaxport.CallError,
                     match=r"number of arguments: the module's main has 2 \(tensor<i32>, "
                           r"tensor<3xf32>\), but the record says 1 \(1 kept array argument"):
    jaxport.call(single)(X)


def test_a_record_with_several_platforms_whose_module_takes_no_index_is_refused():
  single = jaxport.export(jax.jit(jnp.sin))(F32_3)
  multi = dataclasses.replace(single, platforms=("cpu", "tpu"))
  with pytest.raises(jaxport.CallError, match=r"number of arguments: .* but the record says 2 "
                                              r"\(a platform index, 1 kept array argument"):
    jaxport.call(multi)(X)


def test_the_message_names_the_calling_convention_version(two):
  old = dataclasses.replace(_one_result(two), calling_convention_version=7)
  with pytest.raises(jaxport.CallError, match=r"\(calling convention version 7\)"):
    jaxport.call(old)(X)


def test_kept_argument_indices_beyond_the_arguments_are_refused(two):
  exp = dataclasses.replace(two, module_kept_var_idx=(0, 3))
  with pytest.raises(jaxport.CallError, match=r"keeps arguments \[0, 3\] .* has 1 flat argument"):
    jaxport.call(exp)(X)
