"""Drop-in parity with jax.export at the edges: private export parameters, registrations in
both libraries, jax.export's bytes on request, and blobs readable across the two."""

import collections
import dataclasses
import inspect
import json

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.interpreters import mlir
from jax._src.lax import lax as lax_internal

import jaxport
from _jax_releases import JAX_WRITES_JAXPORTS_LAYOUT
from jaxport.serde import _pytrees, _read
from jaxport._jaxcompat import _envelope as jax_envelope

F32 = jax.ShapeDtypeStruct((4,), np.float32)
X = np.linspace(0.1, 0.9, 4, dtype=np.float32)


def _sin_as_cos(ctx, x, **params):
  return mlir.lower_fun(jnp.cos, multiple_results=False)(ctx, x)


@pytest.mark.parametrize("api", [jax.export, jaxport], ids=["jax", "jaxport"])
def test_override_lowering_rules_replace_the_registered_lowering(api):
  exp = api.export(jax.jit(jnp.sin), _override_lowering_rules=((lax_internal.sin_p, _sin_as_cos),))(F32)
  assert "stablehlo.cosine" in exp.mlir_module() and "stablehlo.sine" not in exp.mlir_module()
  np.testing.assert_allclose(jaxport.call(exp)(X), np.cos(X), rtol=1e-6)
  plain = api.export(jax.jit(jnp.sin), _override_lowering_rules=None)(F32)
  assert "stablehlo.sine" in plain.mlir_module()


def test_export_signature_has_jax_exports_parameters():
  theirs = inspect.signature(jax.export.export).parameters
  ours = inspect.signature(jaxport.export).parameters
  # jax's parameters, in jax's order and kinds, plus jaxport's keyword-only for_jax and for_tf
  # last, off by default.
  assert list(ours) == [*theirs, "for_jax", "for_tf"]
  assert all(ours[name].kind == theirs[name].kind for name in theirs)
  for name in ("for_jax", "for_tf"):
    assert ours[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert ours[name].default is None


@dataclasses.dataclass
class Out:
  """A result type a project registers for serialization."""
  value: jax.Array
  label: str


jax.tree_util.register_dataclass(Out, data_fields=["value"], meta_fields=["label"])


def _out_fun(x):
  return Out(jnp.sin(x), "sine")


def _label_bytes(label):
  return json.dumps(label).encode()


def _label_from(data):
  return json.loads(data.decode())


def test_one_call_registers_a_type_with_both_libraries():
  jaxport.register_pytree_node_serialization(
      Out, serialized_name="tests.parity.Out", serialize_auxdata=_label_bytes,
      deserialize_auxdata=_label_from)
  for blob in (jaxport.export(jax.jit(_out_fun))(F32).serialize(),
               jax.export.export(jax.jit(_out_fun))(F32).serialize()):
    for reader in (jaxport.deserialize, jax.export.deserialize):
      got = reader(blob).call(X)
      assert isinstance(got, Out) and got.label == "sine"
      np.testing.assert_allclose(got.value, np.sin(X), rtol=1e-6)


@dataclasses.dataclass
class OnlyJax:
  value: jax.Array


jax.tree_util.register_dataclass(OnlyJax, data_fields=["value"], meta_fields=[])


def test_a_type_registered_only_with_jax_export_names_the_fix():
  jax.export.register_pytree_node_serialization(
      OnlyJax, serialized_name="tests.parity.OnlyJax", serialize_auxdata=lambda aux: b"",
      deserialize_auxdata=lambda data: ())
  blob = jax.export.export(jax.jit(lambda x: OnlyJax(x)))(F32).serialize()
  with pytest.raises(jaxport.DeserializationError) as info:
    jaxport.deserialize(blob)
  message = str(info.value)
  assert message.startswith("Cannot deserialize a PyTreeDef containing an unregistered type "
                            "`tests.parity.OnlyJax`.")
  assert "Not a valid serialized Exported" not in message
  assert "The blob is valid" in message
  assert "serialized_name='tests.parity.OnlyJax'" in message
  jaxport.register_pytree_node_serialization(
      OnlyJax, serialized_name="tests.parity.OnlyJax", serialize_auxdata=lambda aux: b"",
      deserialize_auxdata=lambda data: ())
  np.testing.assert_allclose(jaxport.deserialize(blob).call(X).value, X)


def test_a_refusal_by_either_library_registers_with_neither():
  class Plain:
    pass

  with pytest.raises(ValueError, match="If `from_children` is not present"):
    jaxport.register_pytree_node_serialization(
        Plain, serialized_name="tests.parity.Plain", serialize_auxdata=lambda aux: b"",
        deserialize_auxdata=lambda data: None, jax_export=jax.export)
  jax.export.register_pytree_node_serialization(  # jax's registry was left untouched
      Plain, serialized_name="tests.parity.Plain", serialize_auxdata=lambda aux: b"",
      deserialize_auxdata=lambda data: None, from_children=lambda aux, children: Plain())
  with pytest.raises(ValueError, match="^Duplicate serialization registration for type") as info:
    jaxport.register_pytree_node_serialization(
        Plain, serialized_name="tests.parity.Plain.renamed", serialize_auxdata=lambda aux: b"",
        deserialize_auxdata=lambda data: None, from_children=lambda aux, children: Plain(),
        jax_export=jax.export)
  assert "serialized_name jax.export knows it by" in str(info.value)
  assert _pytrees.registration_for_name("tests.parity.Plain.renamed") is None
  assert _pytrees.registration_for_type(Plain) is None
  with pytest.raises(jaxport.JaxportError, match="jax_export must be the jax.export module"):
    jaxport.register_namedtuple_serialization(
        collections.namedtuple("P", "a"), serialized_name="tests.parity.P",
        jax_export=object())


def test_serialize_without_jaxport_fields_writes_jax_exports_bytes():
  exp = jax.export.export(jax.jit(lambda x: {"s": jnp.sin(x)}))(F32)
  plain = jaxport.deserialize(exp.serialize()).serialize(jaxport_fields=False)
  # jax 0.11.1 and newer (serialization version 12) record the producer themselves.
  assert _read.read_jax_version(plain) == (jax.__version__ if jax_envelope.WRITES_VERSION_12 else None)
  assert jax.export.deserialize(plain).in_avals == exp.in_avals
  if JAX_WRITES_JAXPORTS_LAYOUT:
    assert plain == exp.serialize()
  assert _read.read_jax_version(jaxport.deserialize(exp.serialize()).serialize()) == jax.__version__
