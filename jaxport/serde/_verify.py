"""A bounds-checking verifier for serialized Exported buffers.

The flatbuffers Python runtime trusts its input: a bad offset turns into an
IndexError, a struct.error, a huge allocation or an endless walk. Before any
field is read, :func:`verify` walks the whole buffer along the schema
(``_layout``) and checks what the C++ flatbuffers verifier checks: every
offset, vtable, table, vector and string lies inside the buffer and is
aligned, strings are NUL-terminated UTF-8, nesting stays under a depth limit
and the number of tables visited is bounded by the buffer size (a well-formed
buffer never shares tables, so a walk visiting more tables than fit in the
buffer can only come from a crafted one). After ``verify`` returns, the
generated accessors can read every field without leaving the buffer.
"""

from __future__ import annotations

import struct

from jaxport.errors import DeserializationError
from jaxport.serde import _layout

MAX_DEPTH = 128
_MAX_BUFFER = 2**31 - 1

_u16 = struct.Struct("<H").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from


class _Walk:
  __slots__ = ("buf", "n", "tables", "max_tables", "fields")

  def __init__(self, buf: bytes):
    self.buf = buf
    self.n = len(buf)
    self.tables = 0
    self.max_tables = self.n // 4 + 1
    self.fields = _layout.schema().tables


class _Fail(Exception):
  """A structural fault; frames on the way up add their path segment."""

  def __init__(self, what: str):
    self.what = what
    self.path: list[str] = []


def _fail(what: str, where: str) -> DeserializationError:
  return DeserializationError(
      f"Not a valid serialized Exported: {what} at {where}. The bytes are "
      "truncated or corrupted, or were not produced by serialize(); "
      "re-serialize the Exported or check how the bytes were stored.")


def verify(buf: bytes | bytearray | memoryview) -> None:
  """Raises DeserializationError unless ``buf`` is a well-formed Exported flatbuffer."""
  buf = bytes(buf)
  n = len(buf)
  if n < 8:
    raise _fail(f"buffer of {n} bytes is too short for a root table", "the start")
  if n > _MAX_BUFFER:
    raise _fail(f"buffer of {n} bytes exceeds the 2 GiB flatbuffers limit", "the start")
  walk = _Walk(buf)
  try:
    _table(walk, _u32(buf, 0)[0], _layout.schema().root, 0)
  except _Fail as e:
    raise _fail(e.what, "Exported" + "".join(reversed(e.path))) from None


def _offset_target(walk: _Walk, pos: int) -> int:
  """The absolute position a uoffset stored at ``pos`` points to."""
  if pos + 4 > walk.n:
    raise _Fail(f"offset at byte {pos} runs past the end ({walk.n} bytes)")
  target = pos + _u32(walk.buf, pos)[0]
  if target >= walk.n or target == pos:
    raise _Fail(f"offset at byte {pos} points to byte {target}, outside the "
                f"{walk.n}-byte buffer")
  return target


_SCALAR, _STRING, _TABLE = _layout.SCALAR, _layout.STRING, _layout.TABLE
_VECTOR_SCALAR, _VECTOR_STRING, _VECTOR_TABLE = (
    _layout.VECTOR_SCALAR, _layout.VECTOR_STRING, _layout.VECTOR_TABLE)


def _table(walk: _Walk, pos: int, tname: str, depth: int) -> None:
  if depth > MAX_DEPTH:
    raise _Fail(f"tables nested more than {MAX_DEPTH} deep")
  walk.tables += 1
  if walk.tables > walk.max_tables:
    raise _Fail(f"more than {walk.max_tables} tables reached in a {walk.n}-byte "
                "buffer (tables are shared or overlap)")
  buf, n = walk.buf, walk.n
  if pos % 4 or pos + 4 > n:
    raise _Fail(f"table {tname} at byte {pos} is misaligned or past the end")
  vt = pos - _i32(buf, pos)[0]
  if vt < 0 or vt % 2 or vt + 4 > n:
    raise _Fail(f"vtable of {tname} at byte {vt} lies outside the buffer")
  vt_size, tbl_size = _u16(buf, vt)[0], _u16(buf, vt + 2)[0]
  if vt_size < 4 or vt_size % 2 or vt + vt_size > n:
    raise _Fail(f"vtable of {tname} at byte {vt} has bad size {vt_size}")
  if tbl_size < 4 or pos + tbl_size > n:
    raise _Fail(f"table {tname} at byte {pos} has size {tbl_size} past the end")
  fields = walk.fields[tname]
  nfields = len(fields)
  for fid in range((vt_size - 4) // 2):
    off = _u16(buf, vt + 4 + 2 * fid)[0]
    if off == 0:
      continue
    field = fields[fid] if fid < nfields else None
    try:
      if field is None or field.deprecated:
        # A field this schema does not know (a newer writer's) or no longer
        # reads: only its slot must lie inside the table.
        if off >= tbl_size:
          raise _Fail(f"field slot {off} outside the {tbl_size}-byte table")
        continue
      kind = field.kind
      width = field.size if kind == _SCALAR else 4
      if off < 4 or off + width > tbl_size:
        raise _Fail(f"field slot {off} (+{width} bytes) outside the {tbl_size}-byte table")
      if kind == _SCALAR:
        continue
      target = _offset_target(walk, pos + off)
      if kind == _STRING:
        _string(walk, target)
      elif kind == _TABLE:
        _table(walk, target, field.table, depth + 1)
      elif kind == _VECTOR_SCALAR:
        _vector(walk, target, field.size)
      else:
        length = _vector(walk, target, 4)
        start = target + 4
        i = 0
        try:
          if kind == _VECTOR_STRING:
            for i in range(length):
              _string(walk, _offset_target(walk, start + 4 * i))
          else:
            sub = field.table
            for i in range(length):
              _table(walk, _offset_target(walk, start + 4 * i), sub, depth + 1)
        except _Fail as e:
          e.path.append(f"[{i}]")
          raise
    except _Fail as e:
      e.path.append(f".{field.name if field else f'<field {fid}>'}")
      raise


def _vector(walk: _Walk, pos: int, elem_size: int) -> int:
  if pos % 4 or pos + 4 > walk.n:
    raise _Fail(f"vector at byte {pos} is misaligned or past the end")
  length = _u32(walk.buf, pos)[0]
  end = pos + 4 + length * elem_size
  if end > walk.n:
    raise _Fail(f"vector of {length} elements at byte {pos} ends at byte {end}, "
                f"past the end of the {walk.n}-byte buffer")
  return length


def _string(walk: _Walk, pos: int) -> None:
  length = _vector(walk, pos, 1)
  end = pos + 4 + length
  if end >= walk.n or walk.buf[end] != 0:
    raise _Fail(f"string at byte {pos} is not NUL-terminated")
  try:
    walk.buf[pos + 4:end].decode("utf-8")
  except UnicodeDecodeError as e:
    raise _Fail(f"string at byte {pos} is not UTF-8 ({e.reason})") from None
