"""The one-pass decoder, the lazily built nested VJP, shared strings and batched dim parsing."""

import dataclasses
import struct

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P

import jaxport
from _jax_releases import same_bytes_as_jax
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import DeserializationError
from jaxport.serde import _layout, _read, _verify, _write
from jaxport.serde import _schema_generated as fb

F32 = jax.ShapeDtypeStruct((3,), jnp.float32)


def _with_vjp():
  exp = jaxport.export(jax.jit(lambda x, y: {"a": jnp.sin(x) * y, "b": [x]}))(F32, F32)
  vjp = exp.vjp()
  return dataclasses.replace(exp, _get_vjp=lambda _: vjp), vjp


def _sharded():
  device = jax_mesh.make_abstract_device("TPU v5", None, "tpu")
  amesh = AbstractMesh((2, 2, 2), ("x", "y", "z"),
                       (AxisType.Explicit, AxisType.Explicit, AxisType.Explicit),
                       abstract_device=device)
  shardings = (NamedSharding(amesh, P("x", ("y",), reduced={"z"})), None)
  avals = [core.update_aval_with_sharding(core.ShapedArray((8, 8), np.float32), shardings[0]),
           core.ShapedArray((8, 8), np.float32)]
  base = jaxport.export(jax.jit(jnp.sin))(F32)
  return dataclasses.replace(
      base, in_tree=jax.tree.structure((0, 0)), in_avals=tuple(avals),
      _in_named_shardings=shardings, in_shardings_hlo=(shardings[0]._to_xla_hlo_sharding(2), None),
      module_kept_var_idx=(0, 1), nr_devices=8)


def _camel(name):
  return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _assert_same_as_accessors(decoded, obj, tname, path):
  """Every field the decoder produced equals what flatc's generated accessor reads."""
  for field in _layout.schema().tables[tname]:
    if field.deprecated:
      continue
    where = f"{path}.{field.name}"
    got = decoded[field.id]
    acc = getattr(obj, _camel(field.name))
    if field.kind == _layout.SCALAR:
      assert got == acc() and type(got) is type(acc()), where
    elif field.kind == _layout.STRING:
      raw = acc()
      assert got == (None if raw is None else raw.decode("utf-8")), where
    elif field.kind == _layout.TABLE:
      sub = acc()
      assert (got is None) == (sub is None), where
      if sub is not None:
        _assert_same_as_accessors(got, sub, field.table, where)
    else:
      n = getattr(obj, _camel(field.name) + "Length")()
      is_none = getattr(obj, _camel(field.name) + "IsNone")()
      assert (got is None) == is_none, where
      assert len(got or ()) == n, where
      for i in range(n):
        item = acc(i)
        if field.kind == _layout.VECTOR_SCALAR:
          want = item & 0xFF if isinstance(got, bytes) else item
          assert got[i] == want, f"{where}[{i}]"
        elif field.kind == _layout.VECTOR_STRING:
          assert got[i] == item.decode("utf-8"), f"{where}[{i}]"
        else:
          _assert_same_as_accessors(got[i], item, field.table, f"{where}[{i}]")


@pytest.mark.parametrize("which", ["vjp", "sharded"])
def test_decoder_reads_what_the_generated_accessors_read(which):
  rec = _with_vjp()[0] if which == "vjp" else _sharded()
  for blob in (bytes(_write.serialize(rec, vjp_order=1 if which == "vjp" else 0)),
               bytes(jax.export.Exported.serialize(rec, vjp_order=1 if which == "vjp" else 0))):
    _assert_same_as_accessors(_verify.decode(blob), fb.Exported.GetRootAs(blob, 0), "Exported",
                              "Exported")
  got = jaxport.deserialize(_write.serialize(rec, vjp_order=1 if which == "vjp" else 0))
  assert got._in_named_shardings == rec._in_named_shardings  # reduced axes included
  assert got.in_avals == rec.in_avals


def test_defaults_of_absent_scalars_come_from_the_schema():
  decoded = _verify.decode(bytes(_write.serialize(_sharded())))
  device = decoded[_read._X.unique_abstract_meshes][0][_read._MESH.abstract_device]
  assert device[_read._DEVICE.num_cores] is None  # declared `= null`
  assert _layout.parse("namespace a; table T { x: int = 5; b: bool = true; } root_type T;"
                       ).tables["T"][0].default == 5


def test_nested_vjp_is_built_on_first_use_only(monkeypatch):
  rec, vjp = _with_vjp()
  blob = _write.serialize(rec, vjp_order=1)
  calls = []
  real = _read._read_exported
  monkeypatch.setattr(_read, "_read_exported", lambda t, where, policy: calls.append(where) or real(t, where, policy))
  got = jaxport.deserialize(blob)
  assert calls == ["Exported"] and got.has_vjp()
  first = got.vjp()
  assert got.vjp() is first
  assert calls == ["Exported", "Exported.vjp"]
  assert first.in_avals == vjp.in_avals and first.out_tree == vjp.out_tree
  assert not first.has_vjp()


def test_semantic_fault_in_nested_vjp_raises_when_vjp_is_called():
  rec, vjp = _with_vjp()
  broken = dataclasses.replace(vjp, mlir_module_serialized=b"module {}")
  blob = _write.serialize(dataclasses.replace(rec, _get_vjp=lambda _: broken), vjp_order=1)
  got = jaxport.deserialize(blob)
  with pytest.raises(DeserializationError,
                     match=r"StableHLO portable artifact magic.*Exported\.vjp\.mlir_module_serialized"):
    got.vjp()
  with pytest.raises(DeserializationError):  # and again: a failure is not cached as a record
    got.vjp()


def _field_target(data, table, fid):
  vt = table - struct.unpack_from("<i", data, table)[0]
  slot = struct.unpack_from("<H", data, vt + 4 + 2 * fid)[0]
  return table + slot + struct.unpack_from("<I", data, table + slot)[0]


def test_structural_fault_in_nested_vjp_raises_at_deserialize():
  blob = bytearray(_write.serialize(_with_vjp()[0], vjp_order=1))
  vjp_table = _field_target(blob, struct.unpack_from("<I", blob, 0)[0], _read._X.vjp)
  name = _field_target(blob, vjp_table, _read._X.function_name)
  struct.pack_into("<I", blob, name, 0x7FFFFFF0)
  with pytest.raises(DeserializationError, match=r"past the end.*at Exported\.vjp\.function_name"):
    jaxport.deserialize(blob)


@same_bytes_as_jax
def test_shared_strings_are_stored_once_and_jax_reads_them():
  f32 = jax.ShapeDtypeStruct((128,), jnp.float32)
  rec = jaxport.export(jax.jit(jnp.sin))(f32)
  ours = bytes(_write.serialize(rec))
  theirs = bytes(jax.export.Exported.serialize(rec))
  dim = struct.pack("<I", 3) + b"128\x00"
  assert ours.count(dim) == 1 and theirs.count(dim) == 3
  assert len(ours) <= len(theirs) * 1.01  # the jax_version field included
  assert _read.read_jax_version(ours) == jax.__version__
  assert jax.export.deserialize(ours).in_avals == rec.in_avals
  assert jaxport.deserialize(ours).out_avals == rec.out_avals
  assert _write.serialize(rec, jaxport_fields=False) == theirs


def test_a_string_shared_by_many_offsets_is_decoded_once():
  # A vector of 2000 offsets all pointing at one string: each use is a lookup.
  blob = bytearray(_write.serialize(jaxport.export(jax.jit(jnp.sin))(F32)))
  decoded = _verify.decode(bytes(blob))
  assert decoded[_read._X.platforms] == ["cpu"]
  walk = _verify._Walk(bytes(blob))
  root = struct.unpack_from("<I", blob, 0)[0]
  name_pos = _field_target(blob, root, _read._X.function_name)
  for _ in range(2000):
    assert walk.string(name_pos) == decoded[_read._X.function_name]
  assert list(walk.strings) == [name_pos]


def _symbolic_blob():
  scope = jax.export.SymbolicScope()
  x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 2*n", scope=scope), jnp.float32)
  return bytes(jax.export.export(jax.jit(lambda x: jnp.tanh(x) @ x.T))(x).serialize())


def test_symbolic_dims_parsed_together_match_jax():
  blob = _symbolic_blob()
  got, want = jaxport.deserialize(blob), jax.export.deserialize(blob)
  assert [str(a) for a in got.in_avals + got.out_avals] == \
      [str(a) for a in want.in_avals + want.out_avals]
  b = got.in_avals[0].shape[0]
  assert got.out_avals[0].shape == (b, b)  # one scope: the same `b` everywhere


def test_a_bad_dim_is_named_and_an_unread_copy_does_not_matter():
  # Written by jaxport's writer (jax's own layout 11), so both copies exist under every jax.
  blob = bytes(_write.serialize(jax.export.deserialize(_symbolic_blob()), jaxport_fields=False))
  dim = struct.pack("<I", 3) + b"2*n\x00"
  positions = [i for i in range(len(blob)) if blob.startswith(dim, i)]
  assert len(positions) == 2  # the legacy in_avals copy and the unique_avals copy
  outcomes = []
  for pos in positions:
    data = bytearray(blob)
    data[pos + 4:pos + 7] = b"2*("
    try:
      outcomes.append(str(jaxport.deserialize(bytes(data)).in_avals[0].shape[1]))
    except DeserializationError as e:
      outcomes.append(str(e))
  assert "2*n" in outcomes
  bad = [o for o in outcomes if o != "2*n"]
  assert len(bad) == 1 and "2*(" in bad[0] and "Exported.unique_avals[0].shape" in bad[0]


def test_fields_of_a_newer_writer_are_skipped():
  import flatbuffers
  b = flatbuffers.Builder(1024)
  name = b.CreateString("newer")
  b.StartObject(20000)  # a vtable of 40 KB: slots far past the schema's 41 fields
  b.PrependUOffsetTRelativeSlot(1, name, 0)
  b.PrependUint32Slot(19999, 7, 0)
  b.Finish(b.EndObject())
  decoded = _verify.decode(bytes(b.Output()))
  assert decoded[_read._X.function_name] == "newer"
  assert len(decoded) == len(_layout.schema().tables["Exported"])


def test_header_version_is_read_without_decoding_the_rest():
  rec = jaxport.export(jax.jit(jnp.sin))(F32)
  theirs = bytes(jax.export.Exported.serialize(rec))
  version = _verify.decode(theirs)[_read._X.serialization_version]
  assert version > 0
  assert _read.read_serialization_version(theirs) == version
  assert _read.read_serialization_version(_write.serialize(rec)) == version
  # A body the reader does not understand (everything past the root table's
  # inline fields overwritten) still yields the header.
  table = struct.unpack_from("<I", theirs, 0)[0]
  vtable = table - struct.unpack_from("<i", theirs, table)[0]
  end = max(table + struct.unpack_from("<H", theirs, vtable + 2)[0], vtable + 4)
  body_cut = theirs[:end] + b"\xff" * (len(theirs) - end)
  with pytest.raises(DeserializationError):
    jaxport.deserialize(body_cut)
  assert _read.read_serialization_version(body_cut) == version
  with pytest.raises(DeserializationError, match="too short for a flatbuffer root table header"):
    _read.read_serialization_version(theirs[:6])
