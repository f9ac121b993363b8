"""Blobs that are not a valid Exported raise DeserializationError saying what and where."""

import copy
import dataclasses
import random
import struct
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import effects
from jax.sharding import NamedSharding, PartitionSpec

import jaxport
from jaxport import _limits
from jaxport.errors import DeserializationError
from jaxport.export._disabled_checks import DisabledSafetyCheck
from jaxport.serde import _pytrees, _read, _verify, _wire, _write

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


# --- decoded records whose structure is sound but whose values are not --------------------
# A foreign producer can write any of these; each is read from the decoded table
# (``_read.deserialize_fields``, what readers that decode a blob once use) with one value
# changed, and must be refused naming the field, never read as something else.

_X, _AVAL, _TREE = _read._X, _read._AVAL, _read._TREE
_MESH, _DEVICE, _NAMED = _read._MESH, _read._DEVICE, _read._NAMED
_SHARDING, _CHECK = _read._SHARDING, _read._CHECK
_KIND = _read._TREE_KIND


@pytest.fixture(scope="module")
def sharded_fields():
  """The decoded table of a record with a named sharding on a one-device mesh."""
  s = NamedSharding(jax.make_mesh((1,), ("x",)), PartitionSpec("x"))
  exp = jaxport.export(jax.jit(lambda x: x * 2, in_shardings=s, out_shardings=s))(
      jax.ShapeDtypeStruct((4,), jnp.float32))
  return _verify.decode(bytes(exp.serialize()))


def _changed(table, change):
  t = copy.deepcopy(table)
  change(t)
  return t


def _refused(table, change, match):
  with pytest.raises(DeserializationError, match=match):
    _read.deserialize_fields(_changed(table, change))


def _node(kind, children=None, names=None, custom_name=None, aux=None):
  row = [None] * 5
  row[_TREE.kind], row[_TREE.children], row[_TREE.children_names] = _KIND[kind], children, names
  row[_TREE.custom_name], row[_TREE.custom_auxdata] = custom_name, aux
  return row


@pytest.fixture(scope="module")
def fields(blob):
  return _verify.decode(blob)


def test_the_unchanged_table_reads(fields, sharded_fields):
  assert _read.deserialize_fields(fields).fun_name == "<lambda>"
  assert _read.deserialize_fields(sharded_fields).nr_devices == 1


def test_a_record_without_function_name_or_devices_or_platforms_is_refused(fields):
  _refused(fields, lambda t: t.__setitem__(_X.function_name, None),
           r"missing string at Exported\.function_name")

  def no_devices(t):
    t[_X.nr_devices] = t[_X.nr_devices_short] = 0
  _refused(fields, no_devices, r"nr_devices is 0, expected at least 1 at Exported\.nr_devices")
  _refused(fields, lambda t: t.__setitem__(_X.platforms, []), r"no platforms at Exported\.platforms")


def test_an_abstract_value_of_another_kind_is_refused(fields):
  _refused(fields, lambda t: t[_X.unique_avals][0].__setitem__(_AVAL.kind, 5),
           r"abstract value kind 5, only shapedArray .* at Exported\.unique_avals\[0\]\.kind")


def test_a_dimension_that_parses_to_two_is_refused(fields):
  _refused(fields, lambda t: t[_X.unique_avals][0].__setitem__(_AVAL.shape, ["a, b"]),
           r"shape 'a, b' parsed to 2 dimensions, expected 1 at Exported\.unique_avals\[0\]\.shape")


def test_more_shardings_than_values_are_refused(fields):
  def legacy_with_two_shardings(t):
    t[_X.in_avals_idxs] = t[_X.in_shardings_idxs] = ()
    t[_X.in_shardings] = t[_X.in_shardings] * 2
  n = len(fields[_X.in_avals])
  _refused(fields, legacy_with_two_shardings,
           rf"{2 * n} entries for {n} values at Exported\.in_shardings")


def test_disabled_checks_of_unknown_kind_or_empty_target_are_refused(fields):
  def check(kind, target):
    row = [None] * 2
    row[_CHECK.kind], row[_CHECK.custom_call_target] = kind, target
    return row
  custom = _read._CHECK_KIND["custom_call"]
  _refused(fields, lambda t: t.__setitem__(_X.disabled_checks, [check(custom, "")]),
           r"empty custom-call target at Exported\.disabled_checks\[0\]\.custom_call_target")
  _refused(fields, lambda t: t.__setitem__(_X.disabled_checks, [check(9, None)]),
           r"disabled safety check kind 9 \(known: platform 0, custom_call 1\) "
           r"at Exported\.disabled_checks\[0\]\.kind")
  platform = _read._CHECK_KIND["platform"]
  read = _read.deserialize_fields(_changed(fields, lambda t: t.__setitem__(
      _X.disabled_checks, [check(platform, None), check(custom, "my_target")])))
  assert read.disabled_safety_checks == (DisabledSafetyCheck.platform(),
                                         DisabledSafetyCheck.custom_call("my_target"))


def test_malformed_pytree_nodes_are_refused(fields):
  leaf = _node("leaf")
  _refused(fields, lambda t: t.__setitem__(_X.in_tree, _node("tuple", [_node("leaf", [leaf])])),
           r"a leaf node with 1 children at Exported\.in_tree\.children\[0\]")
  _refused(fields, lambda t: t.__setitem__(_X.in_tree, _node("dict", [leaf], ["a", "b"])),
           r"dict with 2 keys \(2 distinct\) for 1 children at Exported\.in_tree")
  _refused(fields, lambda t: t.__setitem__(_X.in_tree, _node("tuple", [leaf]))
           or t[_X.in_tree].__setitem__(_TREE.kind, 42),
           r"unknown pytree node kind 42 at Exported\.in_tree\.kind")


def test_dict_keys_out_of_order_are_read_sorted_with_their_children(fields):
  # Two leaves in the order ('b', 'a'): the tree jax builds sorts the keys, and the leaf
  # named 'b' stays the second child of the sorted dict.
  def unsorted_output(t):
    t[_X.out_tree] = _node("dict", [_node("leaf"), _node("tuple", [_node("leaf")])], ["b", "a"])
  out_tree = _read.deserialize_fields(_changed(fields, unsorted_output)).out_tree
  assert out_tree == jax.tree.structure({"a": (0,), "b": 0})


def test_named_shardings_with_bad_meshes_are_refused(sharded_fields):
  def mesh(t):
    return t[_X.unique_abstract_meshes][0]
  _refused(sharded_fields, lambda t: mesh(t).__setitem__(_MESH.axis_types, b"\x63"),
           r"unknown axis type number 99 at Exported\.unique_abstract_meshes\[0\]\.axis_types\[0\]")
  _refused(sharded_fields, lambda t: mesh(t).__setitem__(_MESH.axis_names, ["x", "y"]),
           r"1 axis sizes, 2 names and 1 types \(must be equal\) "
           r"at Exported\.unique_abstract_meshes\[0\]")

  def device_without_platform(t):
    mesh(t)[_MESH.abstract_device][_DEVICE.platform] = None
    mesh(t)[_MESH.abstract_device][_DEVICE.device_kind] = "no such kind"
  _refused(sharded_fields, device_without_platform,
           r"no platform and device kind 'no such kind' does not name one "
           r"at Exported\.unique_abstract_meshes\[0\]\.abstract_device")


def _legacy_shardings(t, named):
  """The record with per-value shardings (no unique tables), each the Sharding ``named``."""
  row = [None] * 3
  row[_SHARDING.kind], row[_SHARDING.named_sharding] = 0, named
  t[_X.unique_abstract_meshes] = t[_X.unique_named_shardings] = []
  t[_X.in_shardings_idxs] = t[_X.out_shardings_idxs] = ()
  t[_X.in_shardings] = t[_X.out_shardings] = [row]


def test_legacy_named_shardings_carry_their_own_mesh(sharded_fields):
  named = copy.deepcopy(sharded_fields[_X.unique_named_shardings][0])
  read = _read.deserialize_fields(_changed(sharded_fields,
                                           lambda t: _legacy_shardings(t, named)))
  assert read.in_avals[0].shape == (4,) and read.nr_devices == 1
  spec_less = copy.deepcopy(named)
  spec_less[_NAMED.spec] = None  # no spec: replicated
  read = _read.deserialize_fields(_changed(sharded_fields,
                                           lambda t: _legacy_shardings(t, spec_less)))
  assert read.in_avals[0].shape == (4,)
  mesh_less = copy.deepcopy(named)
  mesh_less[_NAMED.mesh] = None
  _refused(sharded_fields, lambda t: _legacy_shardings(t, mesh_less),
           r"named sharding without a mesh at Exported\.in_shardings\[0\]\.named_sharding\.mesh")


def test_nesting_past_the_table_depth_limit_is_refused(fields):
  def deep(t):
    tree = _node("leaf")
    for _ in range(20 * _limits.MAX_TABLE_DEPTH):
      tree = _node("tuple", [tree])
    t[_X.in_tree] = tree
  _refused(fields, deep, r"nesting too deep to read \(the limit .*MAX_TABLE_DEPTH")


class _Pair:
  pass


def _registered(monkeypatch, name, **kwargs):
  reg = _pytrees._Registration(_Pair, name, lambda aux: b"", kwargs.pop("deserialize_auxdata",
                                                                      lambda raw: raw.decode()),
                               **kwargs)
  monkeypatch.setitem(_pytrees._by_name, name, reg)


def test_custom_nodes_that_do_not_match_their_registration_are_refused(fields, monkeypatch):
  fields_of = (lambda raw: tuple(raw.decode().split(",")))
  _registered(monkeypatch, "tests.Pair", from_children=None, namedtuple_fields=("a", "b"),
              deserialize_auxdata=fields_of)
  one_leaf = [_node("leaf")]
  _refused(fields, lambda t: t.__setitem__(
      _X.in_tree, _node("custom", one_leaf, custom_name="tests.Pair", aux=b"a,c")),
           r"namedtuple `tests.Pair` with fields \['a', 'c'\], but the registered type _Pair "
           r"has \['a', 'b'\] at Exported\.in_tree")
  _refused(fields, lambda t: t.__setitem__(
      _X.in_tree, _node("custom", one_leaf, custom_name="tests.Pair", aux=b"a,b")),
           r"namedtuple `tests.Pair` with 1 children for 2 fields at Exported\.in_tree")


def test_a_custom_node_is_rebuilt_by_its_from_children(fields, monkeypatch):
  _registered(monkeypatch, "tests.Rebuilt", from_children=lambda aux, kids: (aux, *kids))
  node = _node("custom", [_node("leaf")], custom_name="tests.Rebuilt", aux=b"tag")
  # from_children's node is (aux, leaf): the two leaves of the record's two inputs.
  read = _read.deserialize_fields(_changed(fields, lambda t: t.__setitem__(_X.in_tree, node)))
  assert read.in_tree == jax.tree.structure(("tag", 0.0))

  def broken(aux, kids):
    raise RuntimeError("cannot rebuild")
  _registered(monkeypatch, "tests.Rebuilt", from_children=broken)
  _refused(fields, lambda t: t.__setitem__(_X.in_tree, node),
           r"from_children of `tests.Rebuilt` was refused \(RuntimeError: cannot rebuild\)")


def test_a_deserialization_error_from_a_registration_is_raised_as_it_is(fields, monkeypatch):
  refusal = DeserializationError("auxdata of tests.Strict: expected JSON")

  def strict(raw):
    raise refusal
  _registered(monkeypatch, "tests.Strict", from_children=None, deserialize_auxdata=strict)
  with pytest.raises(DeserializationError) as info:
    _read.deserialize_fields(_changed(fields, lambda t: t.__setitem__(
        _X.in_tree, _node("custom", [_node("leaf")] * 2, custom_name="tests.Strict", aux=b"{"))))
  assert info.value is refusal


def test_the_serialization_version_of_a_header_without_fields(blob):
  # A root table whose vtable lists no field (4 bytes): version 0, as when the field is absent.
  empty = struct.pack("<IiHH", 4, -4, 4, 8)
  assert _read.read_serialization_version(empty) == 0
  # A vtable offset pointing before the buffer is not a header.
  with pytest.raises(DeserializationError, match="too short for a flatbuffer root table header"):
    _read.read_serialization_version(struct.pack("<Ii", 4, 100))
  assert _read.read_serialization_version(blob) == _read.read_serialization_version(
      bytearray(blob))
