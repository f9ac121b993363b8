"""Finding the custom calls in a StableHLO module, with jaxlib's MLIR bindings.

The walk visits every operation and recurses into regions (function bodies,
``while``/``case``/``reduce`` bodies), so a call nested anywhere is seen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from jaxlib.mlir import ir

CUSTOM_CALL_OP = "stablehlo.custom_call"
_TARGET_ATTR = "call_target_name"


@dataclasses.dataclass(frozen=True)
class CustomCallSite:
  """One ``stablehlo.custom_call`` operation: its target, where it is, and its signature.

  Types and attribute values are MLIR text, so sites from different contexts
  compare and serialize as plain data.
  """

  target: str
  location: str
  operand_types: tuple[str, ...]
  result_types: tuple[str, ...]
  attributes: tuple[tuple[str, str], ...]
  op_text: str

  def attribute(self, name: str) -> str | None:
    """The text of attribute ``name``, or None if the op does not carry it."""
    return dict(self.attributes).get(name)


def walk_operations(root: ir.Module | ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
  """Every operation under ``root`` (itself included), depth first, in program order."""
  stack = [root.operation]
  while stack:
    op = stack.pop()
    yield op
    nested = [inner.operation for region in op.regions for block in region for inner in block]
    stack.extend(reversed(nested))


def custom_call_ops(root: ir.Module | ir.Operation | ir.OpView) -> Iterator[ir.Operation]:
  """Every ``stablehlo.custom_call`` operation under ``root``, in program order."""
  return (op for op in walk_operations(root) if op.name == CUSTOM_CALL_OP)


def call_target(op: ir.Operation) -> str:
  """The target a custom-call operation calls."""
  return ir.StringAttr(op.attributes[_TARGET_ATTR]).value


def operand_types(op: ir.Operation) -> tuple[str, ...]:
  """The operation's operand types, as MLIR text."""
  return tuple(str(v.type) for v in op.operands)


def result_types(op: ir.Operation) -> tuple[str, ...]:
  """The operation's result types, as MLIR text."""
  return tuple(str(r.type) for r in op.results)


def attribute_texts(op: ir.Operation) -> tuple[tuple[str, str], ...]:
  """The operation's attributes as ``(name, MLIR text)``, sorted by name."""
  named = (op.attributes[i] for i in range(len(op.attributes)))
  return tuple(sorted((a.name, str(a.attr)) for a in named))


def _site(op: ir.Operation) -> CustomCallSite:
  return CustomCallSite(
      target=call_target(op),
      location=str(op.location),
      operand_types=operand_types(op),
      result_types=result_types(op),
      attributes=attribute_texts(op),
      op_text=op.get_asm(large_elements_limit=16),
  )


def custom_call_sites(root: ir.Module | ir.Operation | ir.OpView) -> list[CustomCallSite]:
  """Every custom call under ``root``, in program order."""
  return [_site(op) for op in custom_call_ops(root)]


def disallowed_sites(root: ir.Module | ir.Operation | ir.OpView, allowed: frozenset[str] | set[str],
                     *, allow_all: bool = False) -> list[CustomCallSite]:
  """The custom calls under ``root`` whose target is not in ``allowed``."""
  if allow_all:
    return []
  return [_site(op) for op in custom_call_ops(root) if call_target(op) not in allowed]
