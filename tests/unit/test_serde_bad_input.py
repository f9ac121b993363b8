"""Blobs that are not a valid Exported raise DeserializationError saying what and where."""

import dataclasses
import random
import struct
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import effects

import jaxport
from jaxport.errors import DeserializationError
from jaxport.serde import _pytrees, _verify, _wire, _write

F32 = jax.ShapeDtypeStruct((3,), jnp.float32)


@pytest.fixture(scope="module")
def blob():
  exp = jaxport.export(jax.jit(lambda x, y: {"a": x + y, "b": [x]}))(F32, F32)
  return bytes(exp.serialize(vjp_order=1))


def test_error_type_is_a_value_error():
  assert issubclass(DeserializationError, ValueError)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00" * 7, b"\xff" * 64, bytes(range(256))])
def test_short_or_garbage(data):
  with pytest.raises(DeserializationError, match="Not a valid serialized Exported"):
    jaxport.deserialize(data)


def test_not_bytes():
  with pytest.raises(DeserializationError, match="expects bytes"):
    jaxport.deserialize("hello")


def test_random_bytes():
  rng = random.Random(0)
  for n in (8, 64, 1000, 5000):
    for _ in range(20):
      with pytest.raises(DeserializationError):
        jaxport.deserialize(bytes(rng.getrandbits(8) for _ in range(n)))


def test_every_truncation(blob):
  # Cutting only the zero padding after the last string leaves a valid buffer.
  end = len(blob.rstrip(b"\x00")) + 1
  for n in range(0, end):
    with pytest.raises(DeserializationError):
      jaxport.deserialize(blob[:n])


def test_bit_flips_only_raise_deserialization_errors(blob):
  rng = random.Random(1)
  for _ in range(300):
    data = bytearray(blob)
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    try:
      jaxport.deserialize(data)
    except DeserializationError:
      pass


def _patch_first_vector_length(data: bytes, length: int) -> bytes:
  """Sets the length of the root table's function_name string."""
  root = struct.unpack_from("<I", data, 0)[0]
  vt = root - struct.unpack_from("<i", data, root)[0]
  slot = struct.unpack_from("<H", data, vt + 4 + 2 * 1)[0]
  pos = root + slot
  target = pos + struct.unpack_from("<I", data, pos)[0]
  out = bytearray(data)
  struct.pack_into("<I", out, target, length)
  return bytes(out)


def test_vector_length_past_the_end(blob):
  with pytest.raises(DeserializationError, match=r"past the end.*at Exported\.function_name"):
    jaxport.deserialize(_patch_first_vector_length(blob, 0x7FFFFFF0))


def test_root_offset_outside(blob):
  data = bytearray(blob)
  struct.pack_into("<I", data, 0, len(blob) + 100)
  with pytest.raises(DeserializationError, match="past the end"):
    jaxport.deserialize(data)


def test_depth_limit():
  assert _verify.MAX_DEPTH >= 64


def test_unknown_dtype(monkeypatch):
  monkeypatch.setitem(_wire.DTYPE_TO_WIRE, np.dtype(np.float32), 99)
  data = _write.serialize(jaxport.export(jax.jit(jnp.sin))(F32))
  monkeypatch.undo()
  with pytest.raises(DeserializationError, match=r"unknown dtype number 99 .*in_avals|unique_avals"):
    jaxport.deserialize(data)


def test_unknown_memory_space(monkeypatch):
  from jax._src import core
  monkeypatch.setitem(_wire.MEMORY_SPACE_TO_WIRE, core.MemorySpace.Device, 17)
  data = _write.serialize(jaxport.export(jax.jit(jnp.sin))(F32))
  monkeypatch.undo()
  with pytest.raises(DeserializationError, match="unknown memory space number 17"):
    jaxport.deserialize(data)


class Later(NamedTuple):
  a: jax.Array


def test_unknown_custom_pytree_name(monkeypatch):
  jaxport.register_namedtuple_serialization(Later, serialized_name="tests.bad.Later")
  data = jaxport.export(jax.jit(lambda t: t.a))(Later(F32)).serialize()
  monkeypatch.delitem(_pytrees._by_name, "tests.bad.Later")
  with pytest.raises(DeserializationError) as info:
    jaxport.deserialize(data)
  # jax's message first, unchanged; then that the blob is valid, where, and the fix.
  assert str(info.value).startswith(
      "Cannot deserialize a PyTreeDef containing an unregistered type `tests.bad.Later`. "
      "Use `export.register_pytree_node_serialization` or "
      "`export.register_namedtuple_serialization`.\nThe blob is valid")
  assert "in_tree" in str(info.value)
  assert "jaxport.register_pytree_node_serialization(YourType, serialized_name='tests.bad.Later'" \
      in str(info.value)
  assert "registers it with jax.export too" in str(info.value)


class _Fragile(effects.Effect):
  broken = False

  def __init__(self):
    if _Fragile.broken:
      raise RuntimeError("cannot build")

  def __eq__(self, other):
    return type(other) is _Fragile

  def __hash__(self):
    return 7


effects.lowerable_effects.add_type(_Fragile)


def test_effect_that_cannot_be_rebuilt(monkeypatch):
  exp = jaxport.export(jax.jit(jnp.sin))(F32)
  data = _write.serialize(dataclasses.replace(exp, ordered_effects=(_Fragile(),)))
  monkeypatch.setattr(_Fragile, "broken", True)
  with pytest.raises(DeserializationError, match=r"ordered_effects\[0\]"):
    jaxport.deserialize(data)
  monkeypatch.setattr(_Fragile, "broken", False)
  monkeypatch.setattr(effects.lowerable_effects, "_effect_types",
                      {t for t in effects.lowerable_effects._effect_types if t is not _Fragile})
  with pytest.raises(DeserializationError, match="is not a lowerable effect"):
    jaxport.deserialize(data)


def test_module_must_be_a_stablehlo_artifact():
  exp = jaxport.export(jax.jit(jnp.sin))(F32)
  data = _write.serialize(dataclasses.replace(exp, mlir_module_serialized=b"module {}"))
  with pytest.raises(DeserializationError, match="StableHLO portable artifact magic.*mlir_module_serialized"):
    jaxport.deserialize(data)


def test_tree_and_avals_disagree():
  exp = jaxport.export(jax.jit(lambda x, y: x + y))(F32, F32)
  # jaxport's writer refuses this record; jax's writes it unchecked, as a foreign producer may.
  data = jax.export.Exported.serialize(dataclasses.replace(exp, in_tree=jax.tree.structure(((0,), {}))))
  with pytest.raises(DeserializationError, match="1 leaves for 2 abstract values at Exported.in_tree"):
    jaxport.deserialize(data)


def test_kept_var_idx_out_of_range():
  exp = jaxport.export(jax.jit(jnp.sin))(F32)
  data = jax.export.Exported.serialize(dataclasses.replace(exp, module_kept_var_idx=(3,)))
  with pytest.raises(DeserializationError, match="module_kept_var_idx"):
    jaxport.deserialize(data)
