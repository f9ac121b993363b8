"""Two recordings of an entry compared without their source locations.

A module's locations name the case's file and line (``loc("mycases.py":12:8)``),
so two comment lines above a case change ``exported.bin`` and ``module.mlir``
without changing what they compute. Recording again on the same day asks
whether the new recording equals the entry already stored; these comparisons
answer it with the locations left out and everything else compared in full: the
blob's every field (shapes, trees, shardings, effects, checks, the nested VJPs)
as decoded from the wire, each module by its text without locations.
"""

from __future__ import annotations

from typing import Any

from jaxport.errors import JaxportError
from jaxport.export import _mlir
from jaxport.golden._manifest import BLOB_FILE, LOCATED_FILES
from jaxport.serde import _layout, _verify

_X = _layout.field_ids("Exported")


def blob_without_locations(blob: bytes) -> list[Any]:
  """The decoded fields of a serialized Exported, each module (the function's and those of its
  VJPs) replaced by its text without locations."""
  return _strip(_verify.decode(bytes(blob)))


def _strip(table: list[Any]) -> list[Any]:
  out = list(table)
  module = out[_X.mlir_module_serialized]
  if module:
    out[_X.mlir_module_serialized] = _mlir.module_text_without_locations(module)
  if out[_X.vjp] is not None:
    out[_X.vjp] = _strip(out[_X.vjp])
  return out


def same_without_locations(name: str, a: bytes, b: bytes) -> bool:
  """Whether the entry file ``name`` (one of :data:`LOCATED_FILES`) holds the same in ``a`` and
  ``b`` once locations are left out; content that does not parse is the same only if equal."""
  assert name in LOCATED_FILES, name
  if a == b:
    return True
  try:
    if name == BLOB_FILE:
      return blob_without_locations(a) == blob_without_locations(b)
    return (_mlir.text_without_locations(a.decode("utf-8"))
            == _mlir.text_without_locations(b.decode("utf-8")))
  except (JaxportError, UnicodeDecodeError):
    return False
