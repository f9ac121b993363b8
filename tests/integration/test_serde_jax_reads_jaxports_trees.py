"""A blob jaxport writes is one jax reads: every pytree node kind jax.export refuses to
serialize unregistered, jaxport's serialize refuses too, with jax's message first and the
fix; registered through jaxport (which registers with jax.export as well), jax's
``deserialize`` reads jaxport's blob, its VJP included."""

import collections
import dataclasses
import json

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.errors import UnregisteredNodeError

M = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
V = np.linspace(0.5, 1.5, 3, dtype=np.float32)


def _namedtuple():
  """A project's namedtuple in the results."""
  pair = collections.namedtuple("Pair", ["total", "scaled"])
  name = f"tests.serde_jax_reads.Pair.{id(pair)}"
  return (pair, lambda x: pair(jnp.sum(x), x * 2), (V,),
          lambda: jaxport.register_namedtuple_serialization(pair, serialized_name=name))


def _custom_node():
  """A project's pytree node class (with auxdata) in the arguments and the results."""
  node = dataclasses.make_dataclass("Scaled", ["value", "label"],
                                    namespace={"__module__": __name__})
  jax.tree_util.register_dataclass(node, data_fields=["value"], meta_fields=["label"])
  name = f"tests.serde_jax_reads.Scaled.{id(node)}"

  def register():
    jaxport.register_pytree_node_serialization(
        node, serialized_name=name, serialize_auxdata=lambda aux: json.dumps(aux).encode(),
        deserialize_auxdata=lambda data: tuple(json.loads(data.decode())))
  return node, lambda s: node(jnp.sin(s.value), s.label), (node(V, "in"),), register


def _jax_result(fun, public_name):
  """One of jax's own result namedtuples, which jax does not register, in the results."""
  def build():
    node_type = type(fun(M))
    return (node_type, fun, (M,), lambda: jaxport.register_namedtuple_serialization(
        node_type, serialized_name=public_name))
  return build


KINDS = {
    "namedtuple": _namedtuple,
    "custom_node": _custom_node,
    "EighResult": _jax_result(jnp.linalg.eigh, "jax.numpy.linalg.EighResult"),
    "SlogdetResult": _jax_result(jnp.linalg.slogdet, "jax.numpy.linalg.SlogdetResult"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_jaxport_refuses_what_jax_refuses_and_jax_reads_it_once_registered_through_jaxport(
    kind, unregistered_result_namedtuples):
  node_type, fun, args, register = KINDS[kind]()
  specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
  with pytest.raises(ValueError) as jax_refusal:
    jax.export.export(jax.jit(fun))(*specs).serialize()
  exp = jaxport.export(jax.jit(fun))(*specs)
  with pytest.raises(UnregisteredNodeError) as refusal:
    exp.serialize(vjp_order=1)
  assert str(refusal.value).startswith(str(jax_refusal.value))
  assert refusal.value.node_type is node_type
  assert f"jaxport.register_{'pytree_node' if kind == 'custom_node' else 'namedtuple'}" \
         "_serialization" in str(refusal.value)

  register()
  got = jax.export.deserialize(exp.serialize(vjp_order=1))
  assert got.in_tree == exp.in_tree and got.out_tree == exp.out_tree
  want = jax.jit(fun)(*args)
  out = got.call(*args)
  assert type(out) is type(want)
  for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(want)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  assert got.vjp().out_tree == exp.vjp().out_tree
  # Registered with jax.export too: jax's own serialize now writes it, and jaxport reads that.
  blob = jax.export.export(jax.jit(fun))(*specs).serialize()
  assert jaxport.deserialize(blob).out_tree == exp.out_tree
