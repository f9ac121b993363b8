"""The pytree serialization registry: registration rules and messages."""

import collections
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

import jaxport
from jaxport.errors import SerializationError, UnregisteredNodeError
from jaxport.serde import _pytrees


class Fresh(NamedTuple):
  a: int


class Other(NamedTuple):
  b: int


class NotRegisteredNode:
  pass


def test_duplicate_type_and_name_are_refused():
  jaxport.register_namedtuple_serialization(Fresh, serialized_name="tests.pytrees.Fresh")
  with pytest.raises(ValueError, match="Duplicate serialization registration for type.*tests.pytrees.Fresh"):
    jaxport.register_namedtuple_serialization(Fresh, serialized_name="tests.pytrees.Fresh2")
  with pytest.raises(ValueError, match="Duplicate serialization registration for serialized_name"):
    jaxport.register_namedtuple_serialization(Other, serialized_name="tests.pytrees.Fresh")


def test_namedtuple_registration_needs_a_namedtuple():
  with pytest.raises(SerializationError, match="types other than `collections.namedtuple`"):
    jaxport.register_namedtuple_serialization(dict, serialized_name="tests.pytrees.dict")


def test_custom_node_must_be_a_pytree_without_from_children():
  with pytest.raises(ValueError, match="register_pytree_node"):
    jaxport.register_pytree_node_serialization(
        NotRegisteredNode, serialized_name="tests.pytrees.NR",
        serialize_auxdata=lambda a: b"", deserialize_auxdata=lambda b: None)


def test_registration_returns_the_type_for_decorator_use():
  @jax.tree_util.register_pytree_node_class
  class Node:
    def tree_flatten(self):
      return (), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls()

  assert jaxport.register_pytree_node_serialization(
      Node, serialized_name="tests.pytrees.Node", serialize_auxdata=lambda a: b"",
      deserialize_auxdata=lambda b: None) is Node


def test_ordereddict_is_registered_and_jaxs_result_namedtuples_are_read_by_their_names():
  names = _pytrees.registered_names()
  assert "collections.OrderedDict" in names
  for n in ("EighResult", "SVDResult", "QRResult", "SlogdetResult"):
    assert f"jax.numpy.linalg.{n}" in names


def test_namedtuple_auxdata_is_json_field_names():
  if _pytrees.registration_for_type(Fresh) is None:  # run apart from the test registering it
    jaxport.register_namedtuple_serialization(Fresh, serialized_name="tests.pytrees.Fresh")
  reg = _pytrees.registration_for_type(Fresh)
  assert reg.serialize_auxdata(None) == b'["a"]'


def test_ordereddict_keys_must_be_strings():
  exp = jaxport.export(jax.jit(lambda d: d[1]))(
      collections.OrderedDict({1: jax.ShapeDtypeStruct((2,), jnp.float32)}))
  with pytest.raises(TypeError, match="keys are strings"):
    exp.serialize()


LINALG_RESULTS = {"svd": jnp.linalg.svd, "qr": jnp.linalg.qr, "slogdet": jnp.linalg.slogdet,
                  "eigh": jnp.linalg.eigh}


@pytest.mark.parametrize("fn", LINALG_RESULTS.values(), ids=LINALG_RESULTS)
def test_jax_linalg_results_are_refused_unregistered_and_old_blobs_still_read(
    fn, unregistered_result_namedtuples, monkeypatch):
  exp = jaxport.export(jax.jit(fn))(jax.ShapeDtypeStruct((3, 3), jnp.float32))
  node_type = exp.out_tree.node_data()[0]
  public = f"jax.numpy.linalg.{node_type.__name__}"
  with pytest.raises(UnregisteredNodeError) as info:
    exp.serialize()
  assert info.value.node_type is node_type and info.value.part == "results"
  assert (f"jaxport.register_namedtuple_serialization({node_type.__name__}, "
          f"serialized_name={public!r})") in info.value.fix
  assert "Return a tuple instead" in info.value.fix
  # A blob an earlier jaxport wrote, with the type under its public name, still reads.
  monkeypatch.setitem(_pytrees._by_type, node_type, _pytrees.registration_for_name(public))
  old_blob = exp.serialize()
  monkeypatch.delitem(_pytrees._by_type, node_type)
  assert jaxport.deserialize(old_blob).out_tree == exp.out_tree
