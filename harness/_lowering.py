"""Custom-call signatures of a serialized module: target, operand and result types, attributes.

Signatures are what a compatibility promise is about: the same target name
called with other operand types or attributes is a different contract. They
are read with jaxport's MLIR helpers, which own jaxlib's bindings.
"""

from __future__ import annotations

from jaxport.custom_calls import _walk
from jaxport.export import _mlir
from jaxport.golden._manifest import CustomCallSignature

_SKIPPED_ATTRIBUTES = ("call_target_name",)


def signatures(mlir_module_serialized: bytes) -> tuple[CustomCallSignature, ...]:
  """The distinct custom-call signatures of the module, sorted by target then types."""
  with _mlir.make_context():
    module = _mlir.module_from_bytes(bytes(mlir_module_serialized))
    sites = _walk.custom_call_sites(module)
  found = {
      CustomCallSignature(
          target=s.target, operand_types=s.operand_types, result_types=s.result_types,
          attributes={k: v for k, v in s.attributes if k not in _SKIPPED_ATTRIBUTES})
      for s in sites}
  return tuple(sorted(found, key=_sort_key))


def _sort_key(s: CustomCallSignature):
  return (s.target, s.operand_types, s.result_types, tuple(s.attributes.items()))


def targets(sigs) -> list[str]:
  """The distinct target names of ``sigs``, sorted."""
  return sorted({s.target for s in sigs})


def describe(s: CustomCallSignature) -> str:
  attrs = ", ".join(f"{k}={v}" for k, v in s.attributes.items())
  return f"{s.target}({', '.join(s.operand_types)}) -> ({', '.join(s.result_types)}) {{{attrs}}}"


def diff(recorded, current) -> list[str]:
  """How the current signatures differ from the recorded ones, one line per difference."""
  recorded, current = set(recorded), set(current)
  lines = []
  rec_targets, cur_targets = {s.target for s in recorded}, {s.target for s in current}
  for t in sorted(rec_targets - cur_targets):
    lines.append(f"target {t} is no longer emitted by the current lowering")
  for t in sorted(cur_targets - rec_targets):
    lines.append(f"target {t} is emitted now but was not recorded")
  for t in sorted(rec_targets & cur_targets):
    old = sorted((describe(s) for s in recorded if s.target == t))
    new = sorted((describe(s) for s in current if s.target == t))
    if old != new:
      lines.append(f"target {t} changed signature: recorded {old}, now {new}")
  return lines
