"""Verifying and decoding a serialized Exported buffer in one bounds-checked pass.

The flatbuffers Python runtime trusts its input: a bad offset turns into an
IndexError, a struct.error, a huge allocation or an endless walk. :func:`decode`
walks the whole buffer along the schema (``_layout``) once, checks what the C++
flatbuffers verifier checks (every offset, vtable, table, vector and string
lies inside the buffer and is aligned, strings are NUL-terminated UTF-8,
nesting stays under a depth limit, the number of tables visited is bounded by
the buffer size) and, as it goes, reads every field into plain Python values.
The reader then works on those values and never touches the bytes again.

A decoded table is a list indexed by field id (``_layout.field_ids``): a scalar
is its int/bool (the schema default when absent), a string a ``str``, a vector
of 1-byte scalars ``bytes``, another scalar vector a tuple of ints, a table a
list like this one, a vector of strings or tables a list; absent non-scalars
are None. A field this schema no longer reads is only checked to lie inside
its table; slots past the fields it knows (a newer writer's) are skipped.

Speed: a vtable is validated once per (vtable, table type) and shared by every
table using it, and each string position is decoded once, so a buffer with
shared strings costs no more than one without.
"""

from __future__ import annotations

import struct
from typing import Any

from jaxport import _limits
from jaxport.errors import DeserializationError, JaxportError
from jaxport.serde import _layout

MAX_DEPTH = _limits.MAX_TABLE_DEPTH
_MAX_BUFFER = _limits.MAX_BLOB_BYTES

_u16x2 = struct.Struct("<HH").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from

_SCALAR, _STRING, _TABLE = _layout.SCALAR, _layout.STRING, _layout.TABLE
_VECTOR_SCALAR, _VECTOR_STRING = _layout.VECTOR_SCALAR, _layout.VECTOR_STRING


class _Fail(JaxportError):
  """A structural fault; frames on the way up add their path segment (``decode`` turns it into
  a ``DeserializationError``)."""

  def __init__(self, what: str):
    self.what = what
    self.path: list[str] = []


def _field_fail(what: str, field: str) -> _Fail:
  e = _Fail(what)
  e.path.append(f".{field}")
  return e


def _fail(what: str, where: str) -> DeserializationError:
  return DeserializationError(
      f"Not a valid serialized Exported: {what} at {where}. The bytes are "
      "truncated or corrupted, or were not produced by serialize(); "
      "re-serialize the Exported or check how the bytes were stored.")


class _TableType:
  """What decoding needs to know about one table type, derived once from the schema."""

  __slots__ = ("name", "fields", "template", "index")

  def __init__(self, name: str, fields: tuple[_layout.Field, ...], index: int):
    self.name = name
    self.fields = fields
    self.template = [f.default if f.kind == _SCALAR else None for f in fields]
    self.index = index  # distinguishes table types in the vtable cache key


def _table_types() -> dict[str, _TableType]:
  return {name: _TableType(name, fields, i)
          for i, (name, fields) in enumerate(_layout.schema().tables.items())}


_TYPES = _table_types()
_TYPE_BITS = len(_TYPES).bit_length()
_ROOT = _TYPES[_layout.schema().root]
_SCALAR_READERS = {code: struct.Struct("<" + code).unpack_from
                   for code in set(_layout.SCALAR_CODES.values())}


def decode(buf: bytes) -> list[Any]:
  """The root Exported table of ``buf`` as a decoded list; raises DeserializationError
  unless ``buf`` is a well-formed Exported flatbuffer."""
  n = len(buf)
  if n < 8:
    raise _fail(f"buffer of {n} bytes is too short for a root table", "the start")
  if n > _MAX_BUFFER:
    raise _fail(f"buffer of {n} bytes exceeds the 2 GiB flatbuffers limit", "the start")
  walk = _Walk(buf)
  try:
    with _limits.recursion_room(MAX_DEPTH):
      return walk.table(_u32(buf, 0)[0], _ROOT, 0)
  except _Fail as e:
    raise _fail(e.what, "Exported" + "".join(reversed(e.path))) from None


def verify(buf: bytes | bytearray | memoryview) -> None:
  """Raises DeserializationError unless ``buf`` is a well-formed Exported flatbuffer."""
  decode(bytes(buf))


class _Walk:
  """One decoding pass over one buffer."""

  __slots__ = ("buf", "n", "tables", "max_tables", "vtables", "strings")

  def __init__(self, buf: bytes):
    self.buf = buf
    self.n = len(buf)
    self.tables = 0
    self.max_tables = int(self.n * _limits.TABLES_PER_BYTE) + 1
    # vtable position and table type index -> (table size, present fields)
    self.vtables: dict[int, tuple[int, tuple[tuple, ...]]] = {}
    self.strings: dict[int, str] = {}

  def table(self, pos: int, ttype: _TableType, depth: int) -> list[Any]:
    if depth > MAX_DEPTH:
      raise _Fail(f"tables nested more than {MAX_DEPTH} deep (the limit "
                  f"{_limits.name('MAX_TABLE_DEPTH')}; jax itself reads pytrees only about "
                  "490 levels deep)")
    self.tables += 1
    if self.tables > self.max_tables:
      raise _Fail(f"more than {self.max_tables} tables reached in a {self.n}-byte "
                  "buffer (tables are shared or overlap)")
    buf, n = self.buf, self.n
    if pos & 3 or pos + 4 > n:
      raise _Fail(f"table {ttype.name} at byte {pos} is misaligned or past the end")
    vt = pos - _i32(buf, pos)[0]
    layout = self.vtables.get((vt << _TYPE_BITS) | ttype.index)
    if layout is None:
      layout = self._vtable(vt, ttype)
    size, present = layout
    if pos + size > n:
      raise _Fail(f"table {ttype.name} at byte {pos} has size {size} past the end")
    values = ttype.template.copy()
    for fid, slot, kind, arg, name in present:
      at = pos + slot
      if kind is _SCALAR:
        values[fid] = arg(buf, at)[0]
        continue
      try:
        target = at + _u32(buf, at)[0]
        if target >= n or target == at:
          raise _Fail(f"offset at byte {at} points to byte {target}, outside the "
                      f"{n}-byte buffer")
        if kind is _STRING:
          values[fid] = self.string(target)
        elif kind is _TABLE:
          values[fid] = self.table(target, arg, depth + 1)
        elif kind is _VECTOR_SCALAR:
          values[fid] = self.scalars(target, arg)
        else:
          values[fid] = self.vector_of(target, kind, arg, depth + 1)
      except _Fail as e:
        e.path.append(f".{name}")
        raise
    return values

  def _vtable(self, vt: int, ttype: _TableType) -> tuple[int, tuple[tuple, ...]]:
    """Validates the vtable at ``vt`` for ``ttype``; its size and present fields."""
    buf, n = self.buf, self.n
    if vt < 0 or vt & 1 or vt + 4 > n:
      raise _Fail(f"vtable of {ttype.name} at byte {vt} lies outside the buffer")
    vt_size, size = _u16x2(buf, vt)
    if vt_size < 4 or vt_size & 1 or vt + vt_size > n:
      raise _Fail(f"vtable of {ttype.name} at byte {vt} has bad size {vt_size}")
    if size < 4:
      raise _Fail(f"vtable of {ttype.name} at byte {vt} gives table size {size}")
    fields = ttype.fields
    # Slots past the fields this schema knows belong to a newer writer and are
    # never read, so (as in the C++ verifier) they are not looked at: the cost
    # of a vtable is bounded by the schema, not by its size.
    count = min((vt_size - 4) >> 1, len(fields))
    slots = struct.unpack_from(f"<{count}H", buf, vt + 4)
    present = []
    for fid, slot in enumerate(slots):
      if slot == 0:
        continue
      field = fields[fid]
      name = field.name
      if field.deprecated:
        # A field no longer read: only its slot must lie inside the table.
        if slot >= size:
          raise _field_fail(f"field slot {slot} outside the {size}-byte table", name)
        continue
      kind = field.kind
      width = field.size if kind == _SCALAR else 4
      if slot < 4 or slot + width > size:
        raise _field_fail(f"field slot {slot} (+{width} bytes) outside the {size}-byte "
                          "table", name)
      if kind == _SCALAR:
        arg: Any = _SCALAR_READERS[field.code]
      elif kind == _VECTOR_SCALAR:
        arg = (field.code, field.size)
      elif kind in (_STRING, _VECTOR_STRING):
        arg = None
      else:
        arg = _TYPES[field.table]
      present.append((fid, slot, kind, arg, name))
    layout = (size, tuple(present))
    self.vtables[(vt << _TYPE_BITS) | ttype.index] = layout
    return layout

  def length(self, pos: int, elem_size: int) -> int:
    """The element count of the vector at ``pos``, checked to fit in the buffer."""
    if pos & 3 or pos + 4 > self.n:
      raise _Fail(f"vector at byte {pos} is misaligned or past the end")
    length = _u32(self.buf, pos)[0]
    end = pos + 4 + length * elem_size
    if end > self.n:
      raise _Fail(f"vector of {length} elements at byte {pos} ends at byte {end}, "
                  f"past the end of the {self.n}-byte buffer")
    return length

  def string(self, pos: int) -> str:
    known = self.strings.get(pos)
    if known is not None:
      return known
    length = self.length(pos, 1)
    end = pos + 4 + length
    buf = self.buf
    if end >= self.n or buf[end] != 0:
      raise _Fail(f"string at byte {pos} is not NUL-terminated")
    try:
      text = buf[pos + 4:end].decode("utf-8")
    except UnicodeDecodeError as e:
      raise _Fail(f"string at byte {pos} is not UTF-8 ({e.reason})") from None
    self.strings[pos] = text
    return text

  def scalars(self, pos: int, code_size: tuple[str, int]) -> bytes | tuple[Any, ...]:
    code, size = code_size
    length = self.length(pos, size)
    if size == 1 and code in "bB":
      return self.buf[pos + 4:pos + 4 + length]
    if not length:
      return ()
    return struct.unpack_from(f"<{length}{code}", self.buf, pos + 4)

  def vector_of(self, pos: int, kind: str, ttype: _TableType | None,
                depth: int) -> list[Any]:
    """A vector of strings or of tables (``ttype``)."""
    length = self.length(pos, 4)
    if not length:
      return []
    start = pos + 4
    offsets = struct.unpack_from(f"<{length}I", self.buf, start)
    n = self.n
    read = self.string if kind is _VECTOR_STRING else None
    table = self.table
    out = []
    i = 0
    try:
      for i, off in enumerate(offsets):
        target = start + 4 * i + off
        if target >= n or off == 0:
          raise _Fail(f"offset at byte {start + 4 * i} points to byte {target}, outside "
                      f"the {n}-byte buffer")
        out.append(read(target) if read else table(target, ttype, depth))
    except _Fail as e:
      e.path.append(f"[{i}]")
      raise
    return out
