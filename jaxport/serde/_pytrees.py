"""Registry of pytree node types that can be serialized, and the PyTreeDef codec.

Built-in kinds (leaf, None, tuple, list, dict with string keys) need no
registration. Other node types are written as a ``custom`` node holding the
registered ``serialized_name`` and the bytes of ``serialize_auxdata``; reading
looks the name up here. Every registration made here is made with ``jax.export``
too (``_jax_registry``), so what jaxport writes, jax reads: a type jax.export
would refuse to serialize, jaxport refuses too. ``collections.OrderedDict`` is
registered in both when they are imported. JAX's own result namedtuples
(``jnp.linalg.eigh``'s ``EighResult`` and friends), which jax does not register,
are known here for reading only: under the names jaxport wrote them with before
it refused them, so those blobs still read; writing one takes a registration.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from jax import tree_util

from jaxport.errors import SerializationError, SerializationTypeError
from jaxport.serde import _jax_registry, _wire

T = TypeVar("T")

_SerializeAuxData = Callable[[Any], bytes]
_DeserializeAuxData = Callable[[bytes], Any]
_FromChildren = Callable[[Any, Sequence[Any]], Any]


class _Registration:
  __slots__ = ("nodetype", "name", "serialize_auxdata", "deserialize_auxdata",
               "from_children", "namedtuple_fields")

  def __init__(self, nodetype, name, serialize_auxdata, deserialize_auxdata,
               from_children, namedtuple_fields=None):
    self.nodetype = nodetype
    self.name = name
    self.serialize_auxdata = serialize_auxdata
    self.deserialize_auxdata = deserialize_auxdata
    self.from_children = from_children
    self.namedtuple_fields = namedtuple_fields


_by_type: dict[type, _Registration] = {}
_by_name: dict[str, _Registration] = {}
# Read, never written: jax's own result namedtuples, by the names jaxport gave them.
_read_only: dict[str, _Registration] = {}


def _is_registered_pytree_node(nodetype: type) -> bool:
  """Whether ``nodetype`` has a pytree registration that can rebuild it from children."""
  if _is_namedtuple(nodetype):
    # Every namedtuple flattens without registration; as in jax, only an explicit
    # register_pytree_node counts. Unregistered, one flattens with its class as auxdata.
    try:
      probe = nodetype(*([None] * len(nodetype._fields)))
      _, aux = tree_util.default_registry.flatten_one_level(probe)
    except Exception:  # a custom flatten rule refused the probe: it is registered
      return True
    return aux is not nodetype
  try:
    tree_util.PyTreeDef.from_node_data_and_children(
        tree_util.default_registry, (nodetype, None), ())
  except RuntimeError as e:
    return "Could not find type" not in str(e)
  except Exception:
    return True
  return True


def _is_namedtuple(nodetype: Any) -> bool:
  return (isinstance(nodetype, type) and issubclass(nodetype, tuple)
          and isinstance(getattr(nodetype, "_fields", None), tuple))


def _check_new(reg: _Registration) -> None:
  if reg.nodetype in _by_type:
    raise SerializationError(
        f"Duplicate serialization registration for type `{reg.nodetype}`. "
        f"Previous registration was with serialized_name `{_by_type[reg.nodetype].name}`.")
  if reg.name in _by_name:
    raise SerializationError(
        f"Duplicate serialization registration for serialized_name `{reg.name}`. "
        f"Previous registration was for type `{_by_name[reg.name].nodetype}`.")


def _register(reg: _Registration, also: Callable[[], Any] | None = None) -> None:
  """Add ``reg``; ``also`` registers it with ``jax.export`` first.

  jaxport's checks run before ``also`` and jaxport's entry is added only after
  ``also`` succeeded, so a refusal by either leaves both registries unchanged.
  """
  _check_new(reg)
  if also is not None:
    also()
  _by_type[reg.nodetype] = reg
  _by_name[reg.name] = reg


def register_pytree_node_serialization(
    nodetype: type[T], *, serialized_name: str, serialize_auxdata: _SerializeAuxData,
    deserialize_auxdata: _DeserializeAuxData, from_children: _FromChildren | None = None,
    jax_export: Any = None,
) -> type[T]:
  """Makes nodes of ``nodetype`` serializable under ``serialized_name``; returns ``nodetype``.

  ``nodetype`` must already be a registered pytree node unless ``from_children``
  (auxdata, children) -> node is given. Each type and each name may be
  registered once. The type is registered with ``jax.export`` as well, under
  the same name (with the ``jax.export`` that ``import jax`` loaded, or the
  module passed as ``jax_export``), so that blobs carrying it read with both
  libraries; one already registered with jax.export under this name stays so.
  A process reading such blobs with plain jax registers the type there too.
  """
  if not isinstance(nodetype, type):
    raise SerializationTypeError(
        f"register_pytree_node_serialization takes the node's class as nodetype, got "
        f"{type(nodetype).__name__} {nodetype!r}. Pass the class itself, e.g. "
        "register_pytree_node_serialization(MyNode, serialized_name='my_module.MyNode', ...).")
  if not isinstance(serialized_name, str):
    raise SerializationTypeError(
        f"serialized_name must be a str, got {type(serialized_name).__name__} "
        f"{serialized_name!r} when registering `{nodetype}`.")
  for arg, fn in (("serialize_auxdata", serialize_auxdata),
                  ("deserialize_auxdata", deserialize_auxdata), ("from_children", from_children)):
    if fn is not None and not callable(fn):
      raise SerializationTypeError(
          f"{arg} must be a function when registering `{nodetype}` as `{serialized_name}`, "
          f"got {type(fn).__name__} {fn!r}. Pass a callable, e.g. "
          f"{arg}=lambda aux: json.dumps(aux).encode().")
  if serialize_auxdata is None or deserialize_auxdata is None:
    raise SerializationTypeError(
        f"registering `{nodetype}` as `{serialized_name}` needs both serialize_auxdata "
        "(auxdata -> bytes) and deserialize_auxdata (bytes -> auxdata).")
  if from_children is None and not _is_registered_pytree_node(nodetype):
    fix = ("It is a namedtuple: use jaxport.register_namedtuple_serialization, or pass "
           "from_children." if _is_namedtuple(nodetype) else
           "Register it with jax.tree_util.register_pytree_node first, or pass from_children "
           "(auxdata, children) -> node.")
    raise SerializationError(
        # jax's message, unchanged (including its missing space), then jaxport's fix.
        "If `from_children` is not present, you must call first"
        f"`jax.tree_util.register_pytree_node` for `{nodetype}`\n{fix}")
  extra = {} if from_children is None else {"from_children": from_children}
  also = _jax_registry.register(jax_export, "register_pytree_node_serialization", nodetype,
                                serialized_name, serialize_auxdata=serialize_auxdata,
                                deserialize_auxdata=deserialize_auxdata, **extra)
  _register(_Registration(nodetype, serialized_name, serialize_auxdata,
                          deserialize_auxdata, from_children), also)
  return nodetype


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str,
                                      jax_export: Any = None) -> type[T]:
  """Makes the namedtuple class ``nodetype`` serializable; its field names are the auxdata.

  Registered with ``jax.export`` too, under the same name, as
  :func:`register_pytree_node_serialization` does.
  """
  if not _is_namedtuple(nodetype):
    raise SerializationError(
        "Use `jax.export.register_pytree_node_serialization` for types other than "
        f"`collections.namedtuple`.\nGot `{nodetype}`; with jaxport, use "
        "jaxport.register_pytree_node_serialization.")
  also = _jax_registry.register(jax_export, "register_namedtuple_serialization", nodetype,
                                serialized_name)
  _register(_namedtuple_registration(nodetype, serialized_name), also)
  return nodetype


def _namedtuple_registration(nodetype: type, serialized_name: str) -> _Registration:
  fields = tuple(nodetype._fields)
  encoded = json.dumps(list(fields)).encode("utf-8")
  return _Registration(nodetype, serialized_name, lambda _aux: encoded, _decode_json_names,
                       None, namedtuple_fields=fields)


def _decode_json_names(data: bytes) -> tuple[str, ...]:
  names = json.loads(data.decode("utf-8"))
  if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
    raise ValueError(f"expected a JSON list of strings, got {names!r}")
  return tuple(names)


def _serialize_ordereddict_keys(keys: Sequence[Any]) -> bytes:
  bad = [k for k in keys if not isinstance(k, str)]
  if bad:
    raise SerializationTypeError(
        "Serialization of collections.OrderedDict is supported only when the keys "
        f"are strings. Found keys: {keys}.\n"
        f"The first key that is not a string is {bad[0]!r} of type {type(bad[0])}; convert "
        "the keys to strings before exporting.")
  return json.dumps(list(keys)).encode("utf-8")


_register(_Registration(collections.OrderedDict, "collections.OrderedDict",
                        _serialize_ordereddict_keys, _decode_json_names, None))
for _name, _cls in _wire.jax_result_namedtuples().items():
  _read_only[_name] = _namedtuple_registration(_cls, _name)


def registration_for_type(nodetype: Any) -> _Registration | None:
  """The registration nodes of ``nodetype`` are written with, or None."""
  return _by_type.get(nodetype)


def registration_for_name(name: str) -> _Registration | None:
  """The registration a node serialized under ``name`` is read with, or None."""
  return _by_name.get(name) or _read_only.get(name)


def registered_names() -> list[str]:
  """Every name a node is read under."""
  return sorted({*_by_name, *_read_only})


def _read_only_name(nodetype: Any) -> str | None:
  """The name jaxport once wrote ``nodetype`` under, for one of jax's own result
  namedtuples that only reads now; None for any other type."""
  return next((n for n, r in _read_only.items() if r.nodetype is nodetype), None)


def unregistered_fix(nodetype: type) -> str:
  """What to do about ``nodetype`` met unregistered in a tree being serialized: return
  plain containers, or register it (with both libraries, in one call)."""
  cls = getattr(nodetype, "__name__", repr(nodetype))
  name = _read_only_name(nodetype) or (
      f"{getattr(nodetype, '__module__', 'your_module')}.{getattr(nodetype, '__qualname__', cls)}")
  if _is_namedtuple(nodetype):
    how = "Return a tuple instead (tuple(result)), or register it"
    call = f"jaxport.register_namedtuple_serialization({cls}, serialized_name={name!r})"
  else:
    how = "Return its contents as a tuple or dict instead, or register it"
    call = (f"jaxport.register_pytree_node_serialization({cls}, serialized_name={name!r}, "
            "serialize_auxdata=..., deserialize_auxdata=...)")
  return (f"{how}: {call}, which registers it with jax.export too; a consumer reading the "
          "blob with plain jax registers it under the same name as well")
