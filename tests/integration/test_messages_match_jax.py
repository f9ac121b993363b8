"""Refusals that jax.export also makes start with jax's own message, unchanged.

Each row of ``REFUSALS`` provokes one refusal through a public API, once with
``jax.export`` and once with ``jaxport``; jaxport's message must start with
jax's (after replacing object identities that necessarily differ) and may add
detail after it: where, both sides, the fix. Code matching jax's messages then
keeps working with jaxport. Add a row whenever jaxport refuses something jax
also refuses.
"""

import collections
import dataclasses
import re
from typing import NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec
from jax._src.export import _export as jax_export_impl  # jax.export.call is not public

import jaxport

F32 = jax.ShapeDtypeStruct((3,), np.float32)


class _Api(NamedTuple):
  """One library's entry points, so a scenario is written once for both."""
  name: str
  mod: object
  call: object


APIS = {"jax": _Api("jax", jax.export, jax_export_impl.call), "jaxport": _Api("jaxport", jaxport, jaxport.call)}


def _sin_export(api, spec=F32, **kw):
  return api.mod.export(jax.jit(jnp.sin), **kw)(spec)


def _not_jitted(x):
  return x


def _fresh_class():
  return type("Node", (), {"__module__": __name__})


def _register(api, nodetype, name):
  return api.mod.register_pytree_node_serialization(
      nodetype, serialized_name=name, serialize_auxdata=lambda aux: b"",
      deserialize_auxdata=lambda data: None)


def _duplicate_type(api):
  node = _fresh_class()
  jax.tree_util.register_pytree_node(node, lambda n: ((), None), lambda aux, ch: node())
  _register(api, node, f"tests.messages.dup_type.{api.name}")
  _register(api, node, f"tests.messages.dup_type.{api.name}.again")


def _duplicate_name(api):
  a, b = _fresh_class(), _fresh_class()
  for node in (a, b):
    jax.tree_util.register_pytree_node(node, lambda n: ((), None), lambda aux, ch, node=node: node())
  _register(api, a, f"tests.messages.dup_name.{api.name}")
  _register(api, b, f"tests.messages.dup_name.{api.name}")


def _unregistered_namedtuple_out(api):
  pair = collections.namedtuple("Pair", "a b")
  api.mod.export(jax.jit(lambda x: pair(x, x)))(F32).serialize()


def _unregistered_node_in(api):
  node = dataclasses.make_dataclass("Node", ["x"], namespace={"__module__": __name__})
  jax.tree_util.register_dataclass(node, data_fields=["x"], meta_fields=[])
  api.mod.export(jax.jit(lambda n: n.x))(node(F32)).serialize()


def _mixed_scopes(api):
  a = jax.ShapeDtypeStruct(api.mod.symbolic_shape("a"), np.float32)
  b = jax.ShapeDtypeStruct(api.mod.symbolic_shape("b"), np.float32)
  api.mod.export(jax.jit(lambda x, y: x))(a, b)


def _ordered_dict_keys(api):
  exp = api.mod.export(jax.jit(lambda x: collections.OrderedDict([(1, x), (2, x)])))(F32)
  exp.serialize()


def _calling_convention(api):
  with _config_version(99):
    _sin_export(api)


class _config_version:
  def __init__(self, version):
    self.version = version

  def __enter__(self):
    self.old = jax.config.jax_export_calling_convention_version
    jax.config.update("jax_export_calling_convention_version", self.version)

  def __exit__(self, *exc):
    jax.config.update("jax_export_calling_convention_version", self.old)


def _unstable_custom_call(api):
  def f(x):
    return jax.ffi.ffi_call("tests_not_a_stable_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
  api.mod.export(jax.jit(f))(F32)


def _inconclusive(api):
  def f(x):
    return x if x.shape[0] > 2 else -x
  api.mod.export(jax.jit(f))(jax.ShapeDtypeStruct(api.mod.symbolic_shape("b"), np.float32))


def _shape_solve(api):
  exp = api.mod.export(jax.jit(lambda x: x))(
      jax.ShapeDtypeStruct(api.mod.symbolic_shape("n, n"), np.float32))
  api.call(exp)(np.ones((2, 3), np.float32))


def _shardy_off_at_call(api):
  mesh = jax.make_mesh((1,), ("x",))
  fun = jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, PartitionSpec("x")))
  exp = api.mod.export(fun)(F32)
  previous = jax.config.jax_use_shardy_partitioner
  jax.config.update("jax_use_shardy_partitioner", False)
  try:
    jax.jit(api.call(exp))(np.ones(3, np.float32))
  finally:
    jax.config.update("jax_use_shardy_partitioner", previous)


# (name, scenario, exception type both raise). Scenarios take the _Api to use.
REFUSALS = [
    ("export a function that is not jitted", lambda api: api.mod.export(_not_jitted), ValueError),
    ("vjp of a record read without one",
     lambda api: api.mod.deserialize(_sin_export(api).serialize()).vjp(), ValueError),
    ("mixed symbolic scopes at export", _mixed_scopes, ValueError),
    ("calling convention version out of range", _calling_convention, ValueError),
    ("custom call without a stability guarantee", _unstable_custom_call, ValueError),
    ("inconclusive dimension comparison", _inconclusive, Exception),
    ("register a type twice", _duplicate_type, ValueError),
    ("register a serialized name twice", _duplicate_name, ValueError),
    ("register an unregistered type without from_children",
     lambda api: _register(api, _fresh_class(), f"tests.messages.unregistered.{api.name}"), ValueError),
    ("register a namedtuple without from_children",
     lambda api: _register(api, collections.namedtuple("Pair", "a b"),
                           f"tests.messages.namedtuple.{api.name}"), ValueError),
    ("register_namedtuple_serialization of a class",
     lambda api: api.mod.register_namedtuple_serialization(
         _fresh_class(), serialized_name=f"tests.messages.not_namedtuple.{api.name}"), ValueError),
    ("serialize an OrderedDict with keys that are not strings", _ordered_dict_keys, Exception),
    ("serialize results holding an unregistered namedtuple", _unregistered_namedtuple_out,
     ValueError),
    ("serialize arguments holding an unregistered pytree node", _unregistered_node_in,
     ValueError),
    ("call with something that is not an Exported", lambda api: api.call(42), ValueError),
    ("call with a different pytree",
     lambda api: _sin_export(api).call(np.ones(3, np.float32), np.ones(3, np.float32)), ValueError),
    ("call with a different rank", lambda api: _sin_export(api).call(np.ones((1, 3), np.float32)),
     ValueError),
    ("call with a different dtype", lambda api: _sin_export(api).call(np.ones(3, np.int32)), ValueError),
    ("call with a different constant dimension",
     lambda api: _sin_export(api).call(np.ones(4, np.float32)), ValueError),
    ("call with shapes the symbolic spec cannot solve", _shape_solve, ValueError),
    ("call a record exported for another platform",
     lambda api: _sin_export(api, platforms=("tpu",)).call(np.ones(3, np.float32)), ValueError),
    ("call a Shardy export with Shardy off", _shardy_off_at_call, ValueError),
    ("parse an invalid symbolic shape", lambda api: api.mod.symbolic_shape("a + "), ValueError),
]

# Object identities and source locations that necessarily differ between the two libraries,
# and the library's name in the serialized names each registers (jaxport registers with
# jax.export too, so the two cannot register one name each).
_IDENTITIES = [
    (re.compile(r"(tests\.messages\.[\w.]+?)\.(jax|jaxport)\b"), r"\1.<api>"),
    (re.compile(r"scope \d+ created at [^\n]*"), "scope <scope>"),
    (re.compile(r" at 0x[0-9a-f]+"), " at <address>"),
    (re.compile(r'loc\([^\n]*'), "loc(<location>)"),
]


def _normalized(message: str) -> str:
  for pattern, replacement in _IDENTITIES:
    message = pattern.sub(replacement, message)
  return message


def _message(api, scenario, kind) -> str:
  with pytest.raises(kind) as info:
    scenario(api)
  return str(info.value)


@pytest.mark.parametrize("scenario, kind", [row[1:] for row in REFUSALS], ids=[row[0] for row in REFUSALS])
def test_jaxport_message_starts_with_jaxs(scenario, kind):
  theirs = _normalized(_message(APIS["jax"], scenario, kind))
  ours = _normalized(_message(APIS["jaxport"], scenario, kind))
  assert theirs, "jax's message is empty: the row does not provoke the refusal it names"
  assert ours.startswith(theirs), f"jax:\n{theirs}\n\njaxport:\n{ours}"
