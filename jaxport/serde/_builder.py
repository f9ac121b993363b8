"""flatbuffers' Builder with its hot paths rewritten, writing the same bytes.

The generated ``*Start``/``*Add*``/``*End`` functions call the builder a few
times per field, and the runtime's generic versions check and dispatch on
every call. This subclass replaces the methods those functions and the writer
use with straight-line versions of the same arithmetic (alignment, padding,
relative offsets, vtable slots), so the layout, and hence every byte, is the
runtime's. Methods not overridden (vtable writing, finishing, growing) are the
runtime's own and call the fast ones.

With ``share_strings`` each distinct string is written once and every later
use points to the first copy; readers follow offsets, so shared strings read
exactly like copies (jax's reader included).
"""

from __future__ import annotations

import struct

import flatbuffers
from flatbuffers.builder import IsNestedError, IsNotNestedError, OffsetArithmeticError

_u32 = struct.Struct("<I").pack_into
_i32 = struct.Struct("<i").pack_into
_SCALARS = {code: struct.Struct("<" + code).pack_into for code in "?bBhHiI"}


def _arithmetic_error() -> OffsetArithmeticError:
  return OffsetArithmeticError("flatbuffers: Offset arithmetic error.")


class Builder(flatbuffers.Builder):
  """A flatbuffers Builder producing the runtime's bytes in less time."""

  __slots__ = ("_strings",)

  def __init__(self, initial_size: int = 1024, *, share_strings: bool = False):
    super().__init__(initial_size)
    self._strings: dict[str, int] | None = {} if share_strings else None

  def Prep(self, size: int, additional_bytes: int) -> None:  # noqa: N802 (runtime API)
    """Aligns the head so that ``size`` bytes fit after ``additional_bytes``, growing if needed."""
    if size > self.minalign:
      self.minalign = size
    head = self.head
    align = (head - len(self.Bytes) - additional_bytes) & (size - 1)
    needed = align + size + additional_bytes
    while head < needed:
      old = len(self.Bytes)
      self.GrowByteBuffer()
      head += len(self.Bytes) - old
    if align:
      self.Bytes[head - align:head] = bytes(align)
      head -= align
    self.head = head

  def _prepend(self, pack, width: int, x) -> None:
    self.Prep(width, 0)
    head = self.head - width
    pack(self.Bytes, head, x)
    self.head = head

  def PrependUOffsetTRelative(self, off: int) -> None:  # noqa: N802
    self.Prep(4, 0)
    head = self.head
    here = len(self.Bytes) - head
    if off > here:
      raise _arithmetic_error()
    head -= 4
    _u32(self.Bytes, head, here - off + 4)
    self.head = head

  def PrependSOffsetTRelative(self, off: int) -> None:  # noqa: N802
    self.Prep(4, 0)
    head = self.head
    here = len(self.Bytes) - head
    if off > here:
      raise _arithmetic_error()
    head -= 4
    _i32(self.Bytes, head, here - off + 4)
    self.head = head

  def PrependVOffsetT(self, x: int) -> None:  # noqa: N802
    self._prepend(_SCALARS["H"], 2, x)

  def PrependUint32(self, x: int) -> None:  # noqa: N802
    self._prepend(_SCALARS["I"], 4, x)

  def PrependByte(self, x: int) -> None:  # noqa: N802
    self._prepend(_SCALARS["B"], 1, x)

  def Slot(self, slotnum: int) -> None:  # noqa: N802
    self.current_vtable[slotnum] = len(self.Bytes) - self.head

  def _scalar_slot(self, pack, width: int, o: int, x, d) -> None:
    if x != d or (self.forceDefaults and d is not None):
      self._prepend(pack, width, x)
      self.current_vtable[o] = len(self.Bytes) - self.head

  def PrependBoolSlot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["?"], 1, o, x, d)

  def PrependInt8Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["b"], 1, o, x, d)

  def PrependUint8Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["B"], 1, o, x, d)

  def PrependInt16Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["h"], 2, o, x, d)

  def PrependUint16Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["H"], 2, o, x, d)

  def PrependInt32Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["i"], 4, o, x, d)

  def PrependUint32Slot(self, o, x, d):  # noqa: N802
    self._scalar_slot(_SCALARS["I"], 4, o, x, d)

  def PrependUOffsetTRelativeSlot(self, o, x, d):  # noqa: N802
    if x != d or self.forceDefaults:
      self.PrependUOffsetTRelative(x)
      self.current_vtable[o] = len(self.Bytes) - self.head

  def StartVector(self, elemSize, numElems, alignment):  # noqa: N802, N803
    if self.nested:
      raise IsNestedError()
    self.nested = True
    self.vectorNumElems = numElems
    self.Prep(4, elemSize * numElems)
    self.Prep(alignment, elemSize * numElems)
    return len(self.Bytes) - self.head

  def EndVector(self, numElems=None):  # noqa: N802, N803
    if numElems is not None:
      return super().EndVector(numElems)
    if not self.nested:
      raise IsNotNestedError()
    self.nested = False
    head = self.head - 4
    _u32(self.Bytes, head, self.vectorNumElems)
    self.head = head
    self.vectorNumElems = None
    return len(self.Bytes) - head

  def CreateString(self, s, encoding="utf-8", errors="strict"):  # noqa: N802
    strings = self._strings
    if strings is not None:
      known = strings.get(s)
      if known is not None:
        return known
    if self.nested:
      raise IsNestedError()
    if isinstance(s, str):
      data = s.encode(encoding, errors)
    elif isinstance(s, bytes):
      data = s
    else:
      raise TypeError("non-string passed to CreateString")
    n = len(data)
    self.Prep(4, n + 1)
    head = self.head - 1
    buf = self.Bytes
    buf[head] = 0
    head -= n
    buf[head:head + n] = data
    head -= 4
    _u32(buf, head, n)
    self.head = head
    off = len(buf) - head
    if strings is not None:
      strings[s] = off
    return off

  def CreateScalarVector(self, code: str, values) -> int:  # noqa: N802
    """A vector of ``values`` packed with struct ``code``; the bytes CreateNumpyVector writes."""
    width = struct.calcsize(code)
    n = len(values)
    self.StartVector(width, n, width)
    data = struct.pack(f"<{n}{code}", *values)
    head = self.head - len(data)
    self.Bytes[head:head + len(data)] = data
    self.head = head
    return self.EndVector()

  def WriteVtable(self) -> int:  # noqa: N802
    """Ends the current object with its vtable, reusing an equal earlier vtable."""
    self.PrependSOffsetTRelative(0)
    object_offset = len(self.Bytes) - self.head
    fields = self.current_vtable
    n = len(fields)
    while n and fields[n - 1] == 0:
      n -= 1
    slots = [object_offset - e if e else 0 for e in fields[:n]]
    object_size = object_offset - self.objectEnd
    key = (*reversed(slots), object_size)
    existing = self.vtables.get(key)
    if existing is None:
      self.Prep(2, 2 * (n + 1))
      head = self.head - 2 * (n + 2)
      struct.pack_into(f"<{n + 2}H", self.Bytes, head, 2 * (n + 2), object_size, *slots)
      self.head = head
      here = len(self.Bytes) - head
      _i32(self.Bytes, len(self.Bytes) - object_offset, here - object_offset)
      self.vtables[key] = here
    else:
      self.head = len(self.Bytes) - object_offset
      _i32(self.Bytes, self.head, existing - object_offset)
    self.current_vtable = None
    return object_offset
