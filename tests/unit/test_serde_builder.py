"""jaxport's Builder writes the flatbuffers runtime's bytes, so jax's layout stays byte-identical."""

import dataclasses

import flatbuffers
import jax
import jax.export
import jax.numpy as jnp
import pytest

import jaxport
from _jax_releases import same_bytes_as_jax
from jaxport.serde import _builder, _write

F32 = jax.ShapeDtypeStruct((4,), jnp.float32)


def _records():
  tree = jax.export.export(jax.jit(lambda d: {k: [v, (v, None)] for k, v in d.items()}))(
      {f"w{i}": F32 for i in range(20)})
  scope = jax.export.SymbolicScope()
  poly = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 2*n", scope=scope), jnp.float32)
  symbolic = jax.export.export(jax.jit(lambda x: jnp.tanh(x) @ x.T))(poly)
  pair = jax.export.export(jax.jit(lambda x, y: (x * y, [jnp.sin(x)])))(F32, F32)
  # A module larger than the initial buffer makes the builder grow mid-write.
  big = dataclasses.replace(pair, mlir_module_serialized=pair.mlir_module_serialized + bytes(200_000),
                            module_kept_var_idx=(0,))
  return {"tree": tree, "symbolic": symbolic, "pair": pair, "big": big}


RECORDS = _records()


@same_bytes_as_jax
def test_same_bytes_as_jax():
  for name, rec in sorted(RECORDS.items()):
    assert _write.serialize(rec, jaxport_fields=False) == jax.export.Exported.serialize(rec), name


def test_same_bytes_as_the_runtime_builder_for_every_call_the_writer_makes():
  def build(b):
    s1, s2 = b.CreateString("abc"), b.CreateString("é" * 5)
    b.StartVector(4, 2, 4)
    b.PrependUOffsetTRelative(s2)
    b.PrependUOffsetTRelative(s1)
    vec = b.EndVector()
    b.StartVector(1, 3, 1)
    for x in (3, 2, 1):
      b.PrependByte(x)
    small = b.EndVector()
    b.StartVector(4, 2, 4)
    b.PrependUint32(7)
    b.PrependUint32(2**32 - 1)
    words = b.EndVector()
    offsets = []
    for k in range(3):  # equal vtables are shared
      b.StartObject(6)
      b.PrependUOffsetTRelativeSlot(1, vec, 0)
      b.PrependInt8Slot(0, k - 1, 0)
      b.PrependUint16Slot(2, 300, 0)
      b.PrependBoolSlot(3, True, False)
      b.PrependInt16Slot(4, -5, 0)
      b.PrependUOffsetTRelativeSlot(5, small if k else words, 0)
      offsets.append(b.EndObject())
    b.StartVector(4, 3, 4)
    for off in reversed(offsets):
      b.PrependUOffsetTRelative(off)
    root = b.EndVector()
    b.Finish(root)
    return bytes(b.Output())

  assert build(_builder.Builder(16)) == build(flatbuffers.Builder(16))


def test_scalar_vectors_match_numpy_vectors():
  import numpy as np
  for code, dtype in (("H", np.uint16), ("I", np.uint32)):
    a, b = _builder.Builder(8), flatbuffers.Builder(8)
    a.Finish(a.CreateScalarVector(code, [1, 2, 3]))
    b.Finish(b.CreateNumpyVector(np.array([1, 2, 3], dtype=dtype)))
    assert a.Output() == b.Output()


def test_shared_strings_point_to_one_copy():
  b = _builder.Builder(64, share_strings=True)
  assert b.CreateString("x") == b.CreateString("x") != b.CreateString("y")
  plain = _builder.Builder(64)
  assert plain.CreateString("x") != plain.CreateString("x")


def test_jaxport_reads_the_big_record():
  rec = RECORDS["big"]
  got = jaxport.deserialize(_write.serialize(rec))
  assert got.mlir_module_serialized == rec.mlir_module_serialized
  assert got.out_tree == rec.out_tree
