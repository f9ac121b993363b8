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
  root = _u32(buf, 0)[0]
  _table(walk, root, _layout.schema().root, "Exported", 0)


def _offset_target(walk: _Walk, pos: int, where: str) -> int:
  """The absolute position a uoffset stored at ``pos`` points to."""
  if pos + 4 > walk.n:
    raise _fail(f"offset at byte {pos} runs past the end ({walk.n} bytes)", where)
  target = pos + _u32(walk.buf, pos)[0]
  if target >= walk.n or target == pos:
    raise _fail(f"offset at byte {pos} points to byte {target}, outside the "
                f"{walk.n}-byte buffer", where)
  return target


def _table(walk: _Walk, pos: int, tname: str, where: str, depth: int) -> None:
  if depth > MAX_DEPTH:
    raise _fail(f"tables nested more than {MAX_DEPTH} deep", where)
  walk.tables += 1
  if walk.tables > walk.max_tables:
    raise _fail(f"more than {walk.max_tables} tables reached in a {walk.n}-byte "
                "buffer (tables are shared or overlap)", where)
  buf, n = walk.buf, walk.n
  if pos % 4 or pos + 4 > n:
    raise _fail(f"table {tname} at byte {pos} is misaligned or past the end", where)
  vt = pos - _i32(buf, pos)[0]
  if vt < 0 or vt % 2 or vt + 4 > n:
    raise _fail(f"vtable of {tname} at byte {vt} lies outside the buffer", where)
  vt_size, tbl_size = _u16(buf, vt)[0], _u16(buf, vt + 2)[0]
  if vt_size < 4 or vt_size % 2 or vt + vt_size > n:
    raise _fail(f"vtable of {tname} at byte {vt} has bad size {vt_size}", where)
  if tbl_size < 4 or pos + tbl_size > n:
    raise _fail(f"table {tname} at byte {pos} has size {tbl_size} past the end", where)
  fields = walk.fields[tname]
  for fid in range((vt_size - 4) // 2):
    off = _u16(buf, vt + 4 + 2 * fid)[0]
    if off == 0:
      continue
    field = fields[fid] if fid < len(fields) else None
    fwhere = f"{where}.{field.name if field else f'<field {fid}>'}"
    if field is None or field.deprecated:
      # A field this schema does not know (a newer writer's) or no longer
      # reads: only its slot must lie inside the table.
      if off >= tbl_size:
        raise _fail(f"field slot {off} outside the {tbl_size}-byte table", fwhere)
      continue
    width = field.size if field.kind == _layout.SCALAR else 4
    if off < 4 or off + width > tbl_size:
      raise _fail(f"field slot {off} (+{width} bytes) outside the {tbl_size}-byte "
                  "table", fwhere)
    if field.kind == _layout.SCALAR:
      continue
    target = _offset_target(walk, pos + off, fwhere)
    kind = field.kind
    if kind == _layout.STRING:
      _string(walk, target, fwhere)
    elif kind == _layout.TABLE:
      _table(walk, target, field.table, fwhere, depth + 1)
    else:
      elem_size = field.size if kind == _layout.VECTOR_SCALAR else 4
      length = _vector(walk, target, elem_size, fwhere)
      start = target + 4
      if kind == _layout.VECTOR_STRING:
        for i in range(length):
          epos = start + 4 * i
          _string(walk, _offset_target(walk, epos, f"{fwhere}[{i}]"), f"{fwhere}[{i}]")
      elif kind == _layout.VECTOR_TABLE:
        for i in range(length):
          epos = start + 4 * i
          _table(walk, _offset_target(walk, epos, f"{fwhere}[{i}]"), field.table,
                 f"{fwhere}[{i}]", depth + 1)


def _vector(walk: _Walk, pos: int, elem_size: int, where: str) -> int:
  if pos % 4 or pos + 4 > walk.n:
    raise _fail(f"vector at byte {pos} is misaligned or past the end", where)
  length = _u32(walk.buf, pos)[0]
  end = pos + 4 + length * elem_size
  if end > walk.n:
    raise _fail(f"vector of {length} elements at byte {pos} ends at byte {end}, "
                f"past the end of the {walk.n}-byte buffer", where)
  return length


def _string(walk: _Walk, pos: int, where: str) -> None:
  length = _vector(walk, pos, 1, where)
  end = pos + 4 + length
  if end >= walk.n or walk.buf[end] != 0:
    raise _fail(f"string at byte {pos} is not NUL-terminated", where)
  try:
    walk.buf[pos + 4:end].decode("utf-8")
  except UnicodeDecodeError as e:
    raise _fail(f"string at byte {pos} is not UTF-8 ({e.reason})", where) from None
