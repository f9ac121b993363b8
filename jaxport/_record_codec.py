"""Records that read and write themselves: ``to_json`` and ``from_json`` derived from a frozen
dataclass's fields, so a record's keys, types and refusals are declared once, by its fields.

:func:`json_record` gives a dataclass both methods. Each field is one key of the record's JSON
object, read by its type hint through a :class:`jaxport._records.Strict` (the record's own, or
the one its reader passes in), so a refusal names the key path (``entries[3].findings[0].kind``)
and raises the reader's error:

* ``str``, ``int``, ``bool``: the value, of that type (a boolean is no number); ``float``: a
  JSON integer or decimal, as a float;
* ``X | None``: null, or an ``X``;
* an :class:`enum.Enum` of text values: one of its values; ``datetime.date``: ``YYYY-MM-DD``;
* an :class:`~jaxport.golden._entry_id.EntryId` or a :class:`pathlib.Path`: its text;
* ``tuple[X, ...]``: a list of ``X``; ``tuple[X, Y]``: a list of an ``X`` and a ``Y``;
  ``Mapping[str, X]``: an object of ``X``; ``Any``: as is;
* another record of :func:`json_record`, or one with its own ``from_json(d, where, strict)``
  (a record of a module that imports the standard library alone): its object.

:func:`key` declares what a field's key does otherwise: another name, omitted when the field
holds its default, optional on read, read and written by the field's own converters, not on the
wire at all, or a mapping whose items are keys of the record's own object. A record whose wire
needs another shape than its fields give keeps a hand-written pair, with a comment saying why.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import pathlib
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from jaxport._records import Strict
from jaxport.golden._entry_id import EntryId, read_entry_id

# The metadata key of a field's wire options (:func:`key`).
_WIRE = "jaxport.json"

Reader = Callable[[Strict, Any, str], Any]
Writer = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class _Wire:
  """How one field crosses to JSON (:func:`key`)."""
  name: str | None = None
  omit_default: bool = False
  optional: bool = False
  read: Reader | None = None
  write: Writer | None = None
  skip: bool = False
  inline: tuple[str, ...] | None = None


def key(*, name: str | None = None, omit_default: bool = False, optional: bool = False,
        read: Reader | None = None, write: Writer | None = None, skip: bool = False,
        inline: tuple[str, ...] | None = None, **field_options: Any) -> Any:
  """A dataclass field (``dataclasses.field(**field_options)``) whose JSON key is ``name``
  (default: the field's name); ``omit_default``: the key is left out when the field holds its
  default, and a missing key reads as the default; ``optional``: always written, a missing key
  reads as the default; ``read(strict, value, where)`` and ``write(value)``: the field's own
  converters; ``skip``: the field is the run's own, never on the wire; ``inline``: the field is
  a mapping whose keys, among these names, sit in the record's own object beside the other
  fields' (each required, or each optional where the field has a default), ``read`` and
  ``write`` then converting one value."""
  metadata = dict(field_options.pop("metadata", {}))
  metadata[_WIRE] = _Wire(name, omit_default, optional, read, write, skip, inline)
  return dataclasses.field(metadata=metadata, **field_options)


@dataclasses.dataclass(frozen=True)
class _Key:
  field: str
  key: str
  read: Reader
  write: Writer
  # The field's default where its key may be missing on read (None: the key is required).
  default: Callable[[], Any] | None
  omit_default: bool
  # An inline mapping's names (:func:`key`), and its keys' reader (from their text) and writer.
  inline: tuple[str, ...] | None = None
  name_read: Callable[[str], Any] = str
  name_write: Callable[[Any], str] = str


def json_record(strict: Strict, *, unknown_keys: bool = False,
                check: Callable[[Any, Mapping[str, Any], Strict, str], None] | None = None,
                also: tuple[str, ...] = (),
                names: tuple[str, str] = ("to_json", "from_json"),
                where: str | None = None) -> Callable[[type], type]:
  """Give the dataclass ``to_json()`` and ``from_json(d, where, strict=None)`` derived from its
  fields; refusals are raised by ``strict`` (the record's reader) unless the caller passes its
  own. ``unknown_keys``: keys beside the fields' are ignored (a reader of files that newer
  releases may write), instead of refused; ``check(record, d, strict, where)``: what the record
  read must also hold, beyond its fields' types; ``also``: properties written after the fields
  (what a reader of the JSON is told, derived from the fields; a record with some is written,
  never read); ``names``: the writer's and the reader's names, where the record's JSON of
  another name (a report file's) keeps a hand-written pair; ``where``: what a refusal names the
  record when its reader names nothing (else the reader must)."""
  def derive(cls: type) -> type:
    if any(name in vars(cls) for name in names):
      raise TypeError(f"{cls.__name__}: a record of json_record writes no {' or '.join(names)} "
                      "of its own")
    cls.__json_strict__ = strict
    cls.__json_unknown__ = unknown_keys
    cls.__json_check__ = staticmethod(check) if check is not None else None
    cls.__json_also__ = also
    cls.__json_names__ = names
    cls.__json_where__ = where
    setattr(cls, names[0], _to_json)
    setattr(cls, names[1], classmethod(_from_json))
    return cls
  return derive


def is_record(cls: Any) -> bool:
  """Whether ``cls`` is a record of :func:`json_record`."""
  return isinstance(cls, type) and "__json_strict__" in vars(cls)


def _keys(cls: type) -> tuple[_Key, ...]:
  """The record's keys, in the order of its fields (resolved once, on first use: the hints may
  name records defined after it)."""
  cached = vars(cls).get("__json_keys__")
  if cached is not None:
    return cached
  hints = typing.get_type_hints(cls)
  out = []
  for f in dataclasses.fields(cls):
    wire = f.metadata.get(_WIRE, _Wire())
    if wire.skip:
      continue
    if wire.inline is not None:
      out.append(_inline(f, wire, hints[f.name], f"{cls.__name__}.{f.name}"))
      continue
    reader, writer = ((wire.read, wire.write) if wire.read and wire.write
                      else _converters(hints[f.name], f"{cls.__name__}.{f.name}"))
    if f.default is not dataclasses.MISSING:
      default = (lambda v: lambda: v)(f.default)
    elif f.default_factory is not dataclasses.MISSING:
      default = f.default_factory
    else:
      default = None
    if (wire.omit_default or wire.optional) and default is None:
      raise TypeError(f"{cls.__name__}.{f.name}: a key omitted or optional needs a default")
    out.append(_Key(f.name, wire.name or f.name, wire.read or reader, wire.write or writer,
                    default if (wire.omit_default or wire.optional) else None,
                    wire.omit_default))
  cls.__json_keys__ = tuple(out)
  return cls.__json_keys__


def _inline(f: dataclasses.Field, wire: _Wire, hint: Any, name: str) -> _Key:
  """The key of a mapping field whose items sit in the record's own object."""
  names, values = typing.get_args(hint) or (None, None)
  if typing.get_origin(hint) not in (Mapping, dict) or not (
      names is str or (isinstance(names, type) and issubclass(names, enum.Enum))):
    raise TypeError(f"{name}: an inline field is a mapping of text or enum keys")
  reader, writer = ((wire.read, wire.write) if wire.read and wire.write
                    else _converters(values, name))
  has_default = f.default_factory is not dataclasses.MISSING
  return _Key(f.name, f.name, wire.read or reader, wire.write or writer,
              f.default_factory if has_default else None, False, wire.inline,
              names, (lambda k: k.value) if names is not str else str)


def _to_json(self: Any) -> dict[str, Any]:
  """The record as its JSON object: each field's key, in the order of the fields."""
  out = {}
  for k in _keys(type(self)):
    value = getattr(self, k.field)
    if k.inline is not None:
      out.update((k.name_write(n), k.write(v)) for n, v in value.items())
      continue
    if k.omit_default and value == k.default():
      continue
    out[k.key] = k.write(value)
  for name in type(self).__json_also__:
    out[name] = _plain(getattr(self, name))
  return out


def _plain(value: Any) -> Any:
  """A derived value as JSON: a record as its object, a tuple as a list, an enum as its
  value."""
  if isinstance(value, (tuple, list)):
    return [_plain(x) for x in value]
  if is_record(type(value)):
    return getattr(value, type(value).__json_names__[0])()
  if _reads_with_strict(type(value)):
    return value.to_json()
  if isinstance(value, enum.Enum):
    return value.value
  return value


def _from_json(cls: type, d: Any, where: str | None = None, strict: Strict | None = None,
               **given: Any) -> Any:
  """The record :meth:`to_json` wrote, read strictly by ``strict`` (default: the record's own):
  a missing, unknown or mistyped key raises its error, naming the key path. ``given``: the
  fields that are not on the wire (``key(skip=True)``), as the reader knows them (a record
  keyed by one of its fields in the object holding it)."""
  s = strict or cls.__json_strict__
  where = where if where is not None else cls.__json_where__
  if where is None:
    raise TypeError(f"{cls.__name__}.{cls.__json_names__[1]}: its reader names where the "
                    "record is (json_record gives it no name of its own)")
  if cls.__json_also__:
    raise TypeError(f"{cls.__name__} is written for a reader of its JSON, never read back")
  keys = _keys(cls)
  required = [n for k in keys if k.default is None for n in (k.inline or (k.key,))]
  optional = None if cls.__json_unknown__ else [
      n for k in keys if k.default is not None for n in (k.inline or (k.key,))]
  d = s.obj(d, where, required, optional)
  record = cls(**{k.field: _read_key(k, s, d, where) for k in keys}, **given)
  if cls.__json_check__ is not None:
    cls.__json_check__(record, d, s, where)
  return record


def _read_key(k: _Key, s: Strict, d: Mapping[str, Any], where: str) -> Any:
  if k.inline is not None:
    return {k.name_read(n): k.read(s, d[n], f"{where}.{n}") for n in k.inline if n in d}
  return k.read(s, d[k.key], f"{where}.{k.key}") if k.key in d else k.default()


# --- converters, by type hint ---------------------------------------------------------------

def _reads_with_strict(cls: Any) -> bool:
  """Whether ``cls`` writes itself and reads itself with the reader's strict
  (``from_json(d, where, strict)``), as a record of the standard library's alone does."""
  reader = getattr(cls, "from_json", None) if isinstance(cls, type) else None
  return (callable(reader) and callable(getattr(cls, "to_json", None))
          and "strict" in inspect.signature(reader).parameters)


def _as_is(value: Any) -> Any:
  return value


def _converters(hint: Any, name: str, nullable: bool = False) -> tuple[Reader, Writer]:
  """How a value of type ``hint`` (or null, when ``nullable``) is read from and written to
  JSON."""
  origin, args = typing.get_origin(hint), typing.get_args(hint)
  if origin in (typing.Union, types.UnionType):
    inner = tuple(a for a in args if a is not type(None))
    if len(inner) == len(args):
      return _one_of(inner, name, nullable)
    return (_converters(inner[0], name, True) if len(inner) == 1
            else _one_of(inner, name, True))
  read, write = _base(hint, origin, args, name, nullable)
  if not nullable:
    return read, write
  return read, lambda v: None if v is None else write(v)


def _base(hint: Any, origin: Any, args: tuple[Any, ...], name: str,
          nullable: bool) -> tuple[Reader, Writer]:
  """The converters of a type that is no union; a reader that reads null itself where
  ``nullable`` (the refusal then says "or null")."""
  def or_null(read: Reader) -> Reader:
    return (lambda s, v, where: None if v is None else read(s, v, where)) if nullable else read

  if hint is Any:
    return (lambda s, v, where: v), _as_is
  if hint is float:
    return or_null(lambda s, v, where: s.number(v, where)), _as_is
  if hint in (str, int, bool):
    return (lambda s, v, where: s.of(v, hint, where, nullable=nullable)), _as_is
  if hint is datetime.date:
    return (lambda s, v, where: s.date(v, where, nullable=nullable)), lambda v: v.isoformat()
  if hint is EntryId:
    return (lambda s, v, where: read_entry_id(s, v, where, nullable=nullable)), str
  if isinstance(hint, type) and issubclass(hint, enum.Enum):
    return (lambda s, v, where: s.enum(hint, v, where, nullable=nullable)), lambda v: v.value
  if is_record(hint):
    to_name, from_name = hint.__json_names__
    return (or_null(lambda s, v, where: getattr(hint, from_name)(v, where, s)),
            lambda v: getattr(v, to_name)())
  if _reads_with_strict(hint):
    return (or_null(lambda s, v, where: hint.from_json(v, where, s)), lambda v: v.to_json())
  if hint is pathlib.Path:
    return (lambda s, v, where: None if v is None and nullable
            else pathlib.Path(s.of(v, str, where, nullable=nullable))), str
  if origin is tuple and args and Ellipsis not in args:
    items = [_converters(a, name) for a in args]

    def read_fixed(s: Strict, v: Any, where: str) -> tuple[Any, ...]:
      values = s.of(v, list, where)
      if len(values) != len(items):
        raise s.fail(where, f"expected a list of {len(items)}, got {len(values)} items")
      return tuple(r(s, x, f"{where}[{i}]") for i, ((r, _), x) in enumerate(zip(items, values)))
    return or_null(read_fixed), lambda v: [w(x) for (_, w), x in zip(items, v)]
  if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
    item_read, item_write = _converters(args[0], name)
    return (or_null(lambda s, v, where: tuple(item_read(s, x, f"{where}[{i}]")
                                              for i, x in enumerate(s.of(v, list, where)))),
            lambda v: [item_write(x) for x in v])
  if origin in (Mapping, dict) and args and args[0] is str:
    item_read, item_write = _converters(args[1], name)
    return ((lambda s, v, where: None if v is None and nullable else {
                k: item_read(s, x, f"{where}.{k}")
                for k, x in s.of(v, Mapping, where, nullable=nullable).items()}),
            lambda v: {k: item_write(x) for k, x in v.items()})
  raise TypeError(f"{name}: no JSON form for the type {hint!r}; give the field read and write "
                  "converters (jaxport._record_codec.key)")


def _one_of(kinds: tuple[Any, ...], name: str, nullable: bool) -> tuple[Reader, Writer]:
  """A value of one of several JSON scalar types."""
  if not all(k in (str, int, float, bool) for k in kinds):
    raise TypeError(f"{name}: a union of {kinds!r} has no JSON form; give the field read and "
                    "write converters (jaxport._record_codec.key)")
  return (lambda s, v, where: s.of(v, kinds, where, nullable=nullable)), _as_is


def counted(strict: Strict, value: Any, where: str) -> int:
  """A field's reader (:func:`key`) of a whole number of zero or more."""
  return strict.count(value, where)
