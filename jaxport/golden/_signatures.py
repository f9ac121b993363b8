"""Custom-call signatures read from a serialized module, and their drift.

Signatures (target, operand and result types, attributes) are what a
custom-call compatibility promise is about; the manifest records them so that
a later lowering can be compared with what was recorded.
"""

from __future__ import annotations

from jaxport.custom_calls import _walk
from jaxport.export import _mlir
from jaxport.golden._manifest import CustomCallSignature
from jaxport.golden._signature_drift import (DOCUMENTATION_LINK, METADATA_ATTRIBUTES,
                                             PROSE_ATTRIBUTES, SignatureChange, describe, drift,
                                             normalized, sort_key)

__all__ = ["DOCUMENTATION_LINK", "METADATA_ATTRIBUTES", "PROSE_ATTRIBUTES", "SignatureChange",
           "describe", "drift", "normalized", "signatures", "sort_key"]

_SKIPPED_ATTRIBUTES = ("call_target_name",)


def signatures(mlir_module_serialized: bytes) -> tuple[CustomCallSignature, ...]:
  """The distinct custom-call signatures of a serialized module, sorted."""
  with _mlir.scratch_context():
    module = _mlir.module_from_bytes(bytes(mlir_module_serialized))
    # The parts of each call a signature holds (not its location or text, which cost more).
    found = {CustomCallSignature(
        target=_walk.call_target(op), operand_types=_walk.operand_types(op),
        result_types=_walk.result_types(op),
        attributes={k: v for k, v in _walk.attribute_texts(op) if k not in _SKIPPED_ATTRIBUTES})
        for op in _walk.custom_call_ops(module)}
  return tuple(sorted(found, key=sort_key))
