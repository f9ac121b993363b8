"""Regressions found by reviewing the public API as a user who ships serialized functions.

Each test names what a user saw go wrong; jax.export is the reference where it
behaves sensibly, and jaxport must do at least as well.
"""

import dataclasses
import json

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.export import _mlir

F32_3 = jax.ShapeDtypeStruct((3,), np.float32)


@pytest.fixture(scope="module")
def sin_exported():
  return jaxport.export(jax.jit(jnp.sin))(F32_3)


def test_deserialize_reads_a_blob_kept_as_a_numpy_uint8_array_like_jax(sin_exported):
  # Blobs stored in an npz come back as uint8 arrays; jax.export.deserialize reads them.
  stored = np.frombuffer(bytes(sin_exported.serialize()), dtype=np.uint8)
  assert jax.export.deserialize(stored).fun_name == "sin"
  again = jaxport.deserialize(stored)
  np.testing.assert_allclose(again.call(np.ones(3, np.float32)), np.sin(np.ones(3)), rtol=1e-6)


def test_deserialize_still_refuses_a_value_that_is_not_bytes_like():
  with pytest.raises(jaxport.DeserializationError, match="bytes-like object, got str"):
    jaxport.deserialize("not a blob")


def _with_module(exported, module_bytes):
  return jaxport.deserialize(dataclasses.replace(exported, mlir_module_serialized=module_bytes)
                             .serialize())


def test_calling_a_record_whose_module_bytes_do_not_parse_names_the_function(sin_exported):
  corrupt = _with_module(sin_exported, b"ML\xefR" + b"\x07" * 64)
  x = np.ones(3, np.float32)
  for use in (corrupt.mlir_module, lambda: corrupt.call(x), lambda: jax.jit(corrupt.call)(x)):
    with pytest.raises(jaxport.DeserializationError, match="module of the exported function 'sin'"):
      use()


def test_calling_a_record_whose_module_lacks_main_is_a_deserialization_error(sin_exported):
  with _mlir.make_context():
    from jax._src.lib.mlir import ir
    module = ir.Module.parse(sin_exported.mlir_module().replace("@main", "@renamed"))
    no_main = _mlir.module_to_portable_artifact(module)
  record = _with_module(sin_exported, no_main)
  assert "@renamed" in record.mlir_module()
  with pytest.raises(jaxport.DeserializationError, match="no function named 'main'"):
    record.call(np.ones(3, np.float32))


def test_in_shardings_jax_refuses_a_value_that_is_not_a_mesh():
  mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
  exp = jaxport.export(jax.jit(jnp.sin, in_shardings=NamedSharding(mesh, P("x"))))(
      jax.ShapeDtypeStruct((4,), np.float32))
  assert exp.in_shardings_jax(mesh)[0].spec == P("x")
  with pytest.raises(jaxport.ExportError, match="takes a jax.sharding.Mesh.*got int 3") as info:
    exp.in_shardings_jax(3)
  assert isinstance(info.value, TypeError)
  with pytest.raises(TypeError, match="out_shardings_jax"):
    exp.out_shardings_jax("x")


class _Node:
  def __init__(self, a, aux):
    self.a, self.aux = a, aux


jax.tree_util.register_pytree_node(_Node, lambda n: ((n.a,), n.aux), lambda aux, ch: _Node(ch[0], aux))


@pytest.mark.parametrize("nodetype", [3, None, "_Node"])
def test_registering_something_that_is_not_a_class_is_refused(nodetype):
  with pytest.raises(jaxport.JaxportError, match="takes the node's class as nodetype") as info:
    jaxport.register_pytree_node_serialization(
        nodetype, serialized_name=f"review.not_a_class.{nodetype}",
        serialize_auxdata=lambda aux: json.dumps(aux).encode(), deserialize_auxdata=json.loads)
  assert isinstance(info.value, TypeError)


def test_registering_auxdata_functions_that_are_not_callable_is_refused_at_registration():
  with pytest.raises(TypeError, match="serialize_auxdata must be a function.*got int 3"):
    jaxport.register_pytree_node_serialization(
        _Node, serialized_name="review.Node.bad", serialize_auxdata=3, deserialize_auxdata=json.loads)
  # The refused registration left nothing behind: the type can still be registered.
  jaxport.register_pytree_node_serialization(
      _Node, serialized_name="review.Node", serialize_auxdata=lambda aux: json.dumps(aux).encode(),
      deserialize_auxdata=json.loads)
  exp = jaxport.export(jax.jit(lambda n: _Node(n.a * 2, n.aux)))(_Node(F32_3, "tag"))
  out = jaxport.deserialize(exp.serialize()).call(_Node(np.ones(3, np.float32), "tag"))
  assert out.aux == "tag"
  np.testing.assert_array_equal(out.a, np.full(3, 2, np.float32))


@pytest.mark.parametrize("like", [3, "ab"])
def test_symbolic_shape_refuses_a_like_that_is_not_a_shape(like):
  with pytest.raises(jaxport.ShapeError, match="like must be None or a sequence"):
    jaxport.symbolic_shape("_, a", like=like)
  assert jaxport.symbolic_shape("_, a", like=np.zeros((2, 5)).shape)[0] == 2


def test_a_wrong_cotangent_dtype_names_float0_and_how_to_build_it():
  exp = jaxport.export(jax.jit(lambda x, i: (x * 2, i + 1)))(F32_3, jax.ShapeDtypeStruct((2,), np.int32))
  vjp = exp.vjp()
  x, i = np.ones(3, np.float32), np.arange(2, dtype=np.int32)
  with pytest.raises(jaxport.CallError,
                     match=r"args\[3\]: expected float0 and called with int32\. .*jax.dtypes.float0"):
    vjp.call(x, i, np.ones(3, np.float32), np.zeros(2, np.int32))
  cts = vjp.call(x, i, np.ones(3, np.float32), np.zeros(2, jax.dtypes.float0))
  np.testing.assert_array_equal(cts[0], np.full(3, 2, np.float32))


def test_a_wrong_key_dtype_is_reported_with_both_dtypes():
  exp = jaxport.export(jax.jit(lambda k: jax.random.uniform(k, (2,))))(jax.random.key(0))
  with pytest.raises(jaxport.CallError, match=r"expected key<fry> and called with key<rbg>"):
    exp.call(jax.random.key(0, impl="rbg"))


@pytest.mark.parametrize("field, value, complaint", [
    ("in_avals", (jax.core.ShapedArray((3,), np.float32),), "in_tree has 2 leaves but in_avals has 1"),
    ("module_kept_var_idx", (0, 5), r"module_kept_var_idx \(0, 5\) is not a sorted set"),
    ("platforms", "cpu", "platforms must be a non-empty tuple"),
    ("calling_convention_version", "10", "calling_convention_version must be a positive int"),
    ("disabled_safety_checks", ("platform",), "must hold DisabledSafetyCheck objects"),
    ("fun_name", 3, "fun_name must be a str"),
])
def test_serialize_refuses_an_edited_record_that_deserialize_would_refuse(field, value, complaint):
  exp = jaxport.export(jax.jit(lambda x, y: (x + y, x)))(F32_3, F32_3)
  assert jaxport.deserialize(exp.serialize()).in_avals == exp.in_avals
  with pytest.raises(jaxport.ExportError, match=complaint):
    dataclasses.replace(exp, **{field: value}).serialize()


def test_exporting_with_jax_export_symbolic_dims_says_to_use_jaxport_symbolic_shape():
  # Code migrating from jax.export keeps its jax.export.symbolic_shape calls; jaxport
  # failed inside its dimension solver with a bare KeyError: 'b'.
  spec = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 3"), np.float32)
  with pytest.raises(jaxport.ShapeError,
                     match=r"Dimension 'b' in args\[0\]\.shape\[0\] .*jaxport\.symbolic_shape\('b'\)"):
    jaxport.export(jax.jit(jnp.sin))(spec)
  ok = jaxport.export(jax.jit(jnp.sin))(
      jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 3"), np.float32))
  assert ok.call(np.zeros((4, 3), np.float32)).shape == (4, 3)


@pytest.mark.parametrize("version", [4, 8, 11])
def test_the_calling_convention_version_alone_does_not_refuse_a_call_as_in_jax(version):
  # jaxport refused every record outside [9..10], although jax 0.10.2 calls any version
  # (its range limits what export writes) and its own corpus holds versions 4 to 7. What
  # main takes does not depend on the version number; its signature is checked instead.
  exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), np.float32))
  relabelled = dataclasses.replace(exp, calling_convention_version=version)
  x = np.arange(3, dtype=np.float32)
  np.testing.assert_allclose(jaxport.call(relabelled)(x), np.sin(x), rtol=1e-6)
  jax_record = jax.export.deserialize(relabelled.serialize())
  assert jax_record.calling_convention_version == version
  np.testing.assert_allclose(jax_record.call(x), np.sin(x), rtol=1e-6)
