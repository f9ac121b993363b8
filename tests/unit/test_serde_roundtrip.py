"""serialize -> deserialize keeps every part of the record; writing matches jax byte for byte."""

import collections
import dataclasses
from typing import NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src import core, effects
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P

import jaxport
from _jax_releases import JAX_WRITES_JAXPORTS_LAYOUT, same_bytes_as_jax
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import SerializationError
from jaxport.serde import _read, _write

F32 = jax.ShapeDtypeStruct((3,), jnp.float32)


def _base():
  return jaxport.export(jax.jit(lambda x: jnp.sin(x)))(F32)


def roundtrip(exp, **kw):
  return jaxport.deserialize(_write.serialize(exp, **kw))


def assert_same_record(got, want):
  for field in dataclasses.fields(jaxport.Exported):
    name = field.name
    if name == "_get_vjp":
      continue  # present after reading only up to vjp_order; tested below
    if name == "disabled_safety_checks":
      assert [str(c) for c in got.disabled_safety_checks] == [str(c) for c in want.disabled_safety_checks]
    else:
      assert getattr(got, name) == getattr(want, name), name


def test_fresh_export_roundtrip():
  exp = _base()
  assert_same_record(roundtrip(exp), exp)


def _record_with_avals(avals, exp=None):
  exp = exp or _base()
  tree = jax.tree.structure(((0,) * len(avals), {}))
  return dataclasses.replace(
      exp, in_tree=tree, in_avals=tuple(avals), _in_named_shardings=(None,) * len(avals),
      in_shardings_hlo=(None,) * len(avals), module_kept_var_idx=tuple(range(len(avals))))


KEY_DTYPES = [jax.random.key(0, impl=impl).dtype for impl in ("threefry2x32", "rbg", "unsafe_rbg")]
ALL_DTYPES = [np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
    ml_dtypes.bfloat16, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.float8_e4m3b11fnuz,
    ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
    ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3, ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn)] + [jax.dtypes.float0] + KEY_DTYPES


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_every_dtype_roundtrips_and_jax_reads_it(dtype):
  rec = _record_with_avals([core.ShapedArray((2, 3), dtype)])
  blob = _write.serialize(rec)
  assert jaxport.deserialize(blob).in_avals[0].dtype == dtype
  assert jax.export.deserialize(blob).in_avals[0].dtype == dtype
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert _write.serialize(rec, jaxport_fields=False) == jax.export.Exported.serialize(rec)


@pytest.mark.parametrize("space", [core.MemorySpace.Device, core.MemorySpace.Host, core.MemorySpace.Any])
def test_memory_spaces(space):
  rec = _record_with_avals([core.ShapedArray((4,), np.float32, memory_space=space)])
  assert roundtrip(rec).in_avals[0].memory_space == space


def test_named_shardings_over_abstract_meshes():
  device = jax_mesh.make_abstract_device("TPU v5", 2, "tpu")
  amesh = AbstractMesh((2, 4), ("x", "y"), (AxisType.Explicit, AxisType.Auto),
                       abstract_device=device)
  other = AbstractMesh((8,), ("d",), (AxisType.Manual,))
  shardings = (NamedSharding(amesh, P("x", ("y",))), None,
               NamedSharding(amesh, P(None, "y")), NamedSharding(other, P("d"), memory_kind="pinned_host"))
  avals = [core.update_aval_with_sharding(core.ShapedArray((8, 8), np.float32), s) if s else
           core.ShapedArray((8, 8), np.float32) for s in shardings]
  rec = dataclasses.replace(_record_with_avals(avals), _in_named_shardings=shardings,
                            in_shardings_hlo=tuple(s and s._to_xla_hlo_sharding(2) for s in shardings),
                            nr_devices=8)
  got = roundtrip(rec)
  assert got._in_named_shardings == shardings
  assert got._in_named_shardings[0].mesh.abstract_device == device
  assert got._in_named_shardings[3].mesh.axis_types == (AxisType.Manual,)
  assert got.in_avals == rec.in_avals
  # Up to jax 0.11.0 a record read back also carries its named shardings as HloShardings;
  # from 0.11.1 those are all None.
  assert got.in_shardings_hlo == (rec.in_shardings_hlo if jax_envelope.READ_DERIVES_HLO_SHARDINGS
                                  else (None,) * len(shardings))
  blob = _write.serialize(rec, jaxport_fields=False)
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert blob == jax.export.Exported.serialize(rec)
  theirs = jax.export.deserialize(blob)
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert theirs._in_named_shardings == got._in_named_shardings
  else:  # older readers keep meshes and specs but drop the abstract device
    assert [s and (s.mesh.axis_names, s.spec) for s in theirs._in_named_shardings] == \
        [s and (s.mesh.axis_names, s.spec) for s in got._in_named_shardings]


def test_platforms_checks_kept_args_constants_and_devices():
  rec = dataclasses.replace(
      _record_with_avals([core.ShapedArray((2,), np.float32)] * 3),
      platforms=("cpu", "cuda", "tpu"), nr_devices=70000, module_kept_var_idx=(0, 2),
      uses_global_constants=True, calling_convention_version=9,
      disabled_safety_checks=(jaxport.DisabledSafetyCheck.platform(),
                              jaxport.DisabledSafetyCheck.custom_call("my_target")))
  got = roundtrip(rec)
  assert_same_record(got, rec)
  assert jax.export.deserialize(_write.serialize(rec)).nr_devices == 70000


class _RoundTripEffect(effects.Effect):
  def __eq__(self, other):
    return type(other) is _RoundTripEffect

  def __hash__(self):
    return hash(_RoundTripEffect)


effects.lowerable_effects.add_type(_RoundTripEffect)


def test_effects():
  rec = dataclasses.replace(_base(), ordered_effects=(_RoundTripEffect(),),
                            unordered_effects=(_RoundTripEffect(),))
  got = roundtrip(rec)
  assert got.ordered_effects == (_RoundTripEffect(),)
  assert got.unordered_effects == (_RoundTripEffect(),)


class _NeedsArg(effects.Effect):
  def __init__(self, x):
    self.x = x


def test_effect_without_nullary_constructor_is_refused():
  rec = dataclasses.replace(_base(), ordered_effects=(_NeedsArg(1),))
  with pytest.raises(SerializationError, match="nullary constructor"):
    _write.serialize(rec)


class Point(NamedTuple):
  x: jax.Array
  y: jax.Array


jaxport.register_namedtuple_serialization(Point, serialized_name="tests.serde.Point")


@jax.tree_util.register_pytree_node_class
class Box:
  def __init__(self, items, label):
    self.items, self.label = items, label

  def tree_flatten(self):
    return self.items, self.label

  @classmethod
  def tree_unflatten(cls, label, items):
    return cls(list(items), label)


jaxport.register_pytree_node_serialization(
    Box, serialized_name="tests.serde.Box",
    serialize_auxdata=lambda label: label.encode(), deserialize_auxdata=lambda b: b.decode())


def _pytree_fun(x, none, tup, lst, dct, pt, box, od):
  return (x, None, [tup[0], dct["b"]], {"p": Point(pt.x, pt.y)}, Box([box.items[0]], "out"),
          collections.OrderedDict(z=od["z"], a=x))


def test_pytrees_of_every_kind():
  s = F32
  args = (s, None, (s, s), [s], {"b": s, "a": s}, Point(s, s), Box([s, s], "in"),
          collections.OrderedDict(z=s, a=s))
  exp = jaxport.export(jax.jit(_pytree_fun))(*args)
  got = roundtrip(exp)
  assert got.in_tree == exp.in_tree and got.out_tree == exp.out_tree
  assert "tests.serde.Box" in str(_write.serialize(exp))


def test_jax_result_namedtuples_serialize_once_registered(unregistered_result_namedtuples):
  exp = jaxport.export(jax.jit(jnp.linalg.eigh))(jax.ShapeDtypeStruct((3, 3), jnp.float32))
  with pytest.raises(SerializationError, match="unregistered type.*EighResult"):
    _write.serialize(exp)
  jaxport.register_namedtuple_serialization(exp.out_tree.node_data()[0],
                                            serialized_name="jax.numpy.linalg.EighResult")
  got = roundtrip(exp)
  assert got.out_tree == exp.out_tree
  assert "EighResult" in str(got.out_tree)


def test_dict_with_non_string_keys_is_a_type_error():
  exp = jaxport.export(jax.jit(lambda d: d[1]))({1: F32})
  with pytest.raises(TypeError, match="only for dictionaries with string keys"):
    _write.serialize(exp)


class Unregistered(NamedTuple):
  a: jax.Array


def test_unregistered_node_is_refused_with_the_fix():
  exp = jaxport.export(jax.jit(lambda t: t.a))(Unregistered(F32))
  with pytest.raises(SerializationError, match="unregistered type.*register_namedtuple_serialization"):
    _write.serialize(exp)


def test_nested_vjps_up_to_the_requested_order():
  exp = jaxport.export(jax.jit(lambda x: jnp.sum(jnp.sin(x))))(F32)
  for order in range(3):
    got = roundtrip(exp, vjp_order=order)
    depth = 0
    while got.has_vjp():
      got, depth = got.vjp(), depth + 1
    assert depth == order
  with pytest.raises(ValueError, match="No VJP is available"):
    roundtrip(exp).vjp()
  with pytest.raises(SerializationError, match="vjps of high-enough order"):
    _write.serialize(roundtrip(exp, vjp_order=1), vjp_order=2)


@same_bytes_as_jax
def test_bytes_identical_to_jax_with_a_fixed_vjp():
  exp = jax.export.export(jax.jit(lambda x, y: {"s": x * y, "l": [x]}))(F32, F32)
  vjp = exp.vjp()
  fixed = dataclasses.replace(exp, _get_vjp=lambda _: vjp)
  assert _write.serialize(fixed, vjp_order=1, jaxport_fields=False) == fixed.serialize(vjp_order=1)
  assert _write.serialize(exp, jaxport_fields=False) == exp.serialize()


def test_jax_version_is_recorded_and_jax_still_reads():
  blob = _write.serialize(_base())
  assert _read.read_jax_version(blob) == jax.__version__
  plain = _write.serialize(_base(), jaxport_fields=False)
  # jax 0.11.1 and newer (serialization version 12) always record the producer.
  assert _read.read_jax_version(plain) == (jax.__version__ if jax_envelope.WRITES_VERSION_12 else None)
  assert _read.read_serialization_version(plain) == (12 if jax_envelope.WRITES_VERSION_12 else 3)
  assert jax.export.deserialize(blob).fun_name == "<lambda>"


def test_symbolic_constraints_rebuild_the_scope():
  scope = jaxport.SymbolicScope(["a >= b", "b >= 2"])
  a, b = jaxport.symbolic_shape("a, b", scope=scope)
  exp = jaxport.export(jax.jit(lambda x, y: x[:y.shape[0]]))(
      jax.ShapeDtypeStruct((a,), jnp.float32), jax.ShapeDtypeStruct((b,), jnp.float32))
  blob = exp.serialize()
  got = jaxport.deserialize(blob)
  assert got.in_avals[0].shape[0].scope.constraints == ("a >= b", "b >= 2")
  assert str(got.in_avals[0].shape[0]) == "a"
  assert str(jax.export.deserialize(blob).in_avals[1]) == "float32[b]"
  with pytest.raises(ValueError, match="constraint a >= b"):
    jaxport.call(got)(np.zeros(2, np.float32), np.zeros(3, np.float32))
