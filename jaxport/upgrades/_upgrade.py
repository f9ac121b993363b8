"""Rewriting removed custom calls of an Exported into today's targets.

``upgrade`` parses the module with jaxlib's MLIR bindings, finds every
``stablehlo.custom_call`` whose target has a rule (``rules.json``), checks
the rule's preconditions (operand count and types, sizes that agree with the
operand types, flags that are constants, dropped results that are unused),
builds the successor call, moves every use of the legacy results onto it, and
serializes the module again. Any failed precondition refuses the whole
upgrade with an :class:`~jaxport.errors.UpgradeError` naming the target, the
location and the reason: a half-upgraded module is never returned.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from typing import Any

from jaxlib.mlir import ir

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.custom_calls._registry import stable_targets
from jaxport.custom_calls._walk import CUSTOM_CALL_OP, walk_operations
from jaxport.errors import UpgradeError
from jaxport.export import _mlir
from jaxport.export._exported import Exported
from jaxport.upgrades import _ir, _rules, _table

logger = logging.getLogger(__name__)

# The upgrade's records are written for a reader of ``jaxport upgrade --json``, never read back.
_STRICT = Strict.raising(UpgradeError)

_TARGET = "call_target_name"
# A typed-FFI call built in memory carries its attributes as ``backend_config``
# (with api_version 4); read back from a portable artifact they appear as
# ``mhlo.backend_config``. Calls being rewritten may hold either.
_BACKEND_CONFIG = "backend_config"
_READ_BACK_BACKEND_CONFIG = "mhlo.backend_config"
_SHAPE_OPERANDS = "indices_of_shape_operands"
# Attributes the successor call gets anew; every other attribute carries over.
_REBUILT = {_TARGET, "api_version", _BACKEND_CONFIG, _READ_BACK_BACKEND_CONFIG, "operand_layouts",
            "result_layouts", "output_operand_aliases", _SHAPE_OPERANDS}


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class Rewrite:
  """One custom call rewritten: which rule, from what to what, where."""
  rule: str
  legacy_target: str
  target: str
  location: str
  dropped_operands: tuple[str, ...]
  # Successor attribute -> its character (or integer); an object in JSON.
  attributes: tuple[tuple[str, str], ...] = key(
      read=lambda s, v, where: tuple(s.str_map(v, where).items()), write=dict)


@json_record(_STRICT, also=("fun_name", "rules_applied"))
@dataclasses.dataclass(frozen=True)
class UpgradeReport:
  """The upgraded record and the rewrites that made it (none: the record is returned as is)."""
  exported: Exported = key(skip=True)
  rewrites: tuple[Rewrite, ...]

  @property
  def fun_name(self) -> str:
    """The name of the upgraded exported function."""
    return self.exported.fun_name

  @property
  def rules_applied(self) -> tuple[str, ...]:
    """The names of the rules applied, sorted, each once."""
    return tuple(sorted({r.rule for r in self.rewrites}))


class _Call:
  """A legacy call bound to a rule: the view rule functions see (``_rules.CallView``)."""

  def __init__(self, op: ir.Operation, rule: _table.Rule, letter: str, target: str,
               fun_name: str | None):
    self.op, self.rule, self.letter, self.target = op, rule, letter, target
    self.fun_name = fun_name
    self.operands = {o.name: op.operands[i] for i, o in enumerate(rule.operands)}
    self.operand_index = {o.name: i for i, o in enumerate(rule.operands)}

  def refuse(self, reason: str) -> UpgradeError:
    of = f" of the exported function '{self.fun_name}'" if self.fun_name else ""
    return UpgradeError(
        f"Cannot upgrade the custom call to {self.target}{of} at {self.op.location} with rule "
        f"{self.rule.name!r} (into {self.rule.successor_target(self.letter)}): {reason}. "
        "The module is left unchanged; re-export the function with today's jax, or add a rule "
        "for this form of the call (docs/upgrade.md).")

  def flag(self, name: str) -> int | float | complex:
    try:
      return _ir.scalar_constant(self.operands[name])
    except _ir.NotConstant as e:
      raise self.refuse(
          f"operand {name!r} (operand {self.operand_index[name]}) becomes an attribute of the "
          f"successor, so it must be a constant, but it is computed by {e.producer}") from None


def _string(op: ir.Operation, name: str) -> str:
  return ir.StringAttr(op.attributes[name]).value


def _attr(op: ir.Operation, name: str) -> ir.Attribute | None:
  return op.attributes[name] if name in op.attributes else None


def _shape_operand_indices(op: ir.Operation) -> list[int]:
  attr = _attr(op, _SHAPE_OPERANDS)
  return [] if attr is None else [int(i) for i in ir.DenseIntElementsAttr(attr)]


def _bind(op: ir.Operation, fun_name: str | None) -> _Call | None:
  """The rule for ``op`` (None when no rule applies and the target is registered today)."""
  target = _string(op, _TARGET)
  candidates = _table.rules_by_target().get(target)
  if not candidates:
    return None
  shape_indices = _shape_operand_indices(op)
  n = len(op.operands) - len(shape_indices)
  for rule, letter in candidates:
    if len(rule.operands) == n:
      call = _Call(op, rule, letter, target, fun_name)
      if shape_indices != list(range(n, len(op.operands))):
        raise call.refuse(f"its shape operands {shape_indices} are not the trailing operands")
      return call
  if target in stable_targets():
    return None  # today's form of a target that also had an older one
  rule, letter = candidates[0]
  raise _Call(op, rule, letter, target, fun_name).refuse(
      f"it has {n} operands; the rule expects {len(rule.operands)} "
      f"({', '.join(o.name for o in rule.operands)})")


def _check(call: _Call) -> None:
  """Preconditions on types, sizes and results before anything is built."""
  rule, op = call.rule, call.op
  want = _ir.ELEMENT_TYPES[call.letter]
  got = _ir.element_type(call.operands[rule.new_operands[0]])
  if got != want:
    raise call.refuse(f"operand {rule.new_operands[0]!r} has element type {got}; "
                      f"{call.target} works on {want}")
  legacy_results = rule.legacy_results[rule.kind(call.letter)]
  if len(op.results) != len(legacy_results):
    raise call.refuse(f"it has {len(op.results)} results; the rule expects "
                      f"{len(legacy_results)} ({', '.join(legacy_results)})")
  for name, expr in rule.sizes.items():
    try:
      value = _ir.scalar_constant(call.operands[name])
    except _ir.NotConstant:
      continue  # computed from dimension variables: the successor reads it from the types
    expected = _ir.size_of(expr, call.operands)
    if expected is not None and value != expected:
      raise call.refuse(f"size operand {name!r} is {value}, but {expr} of the operand types "
                        f"is {expected}; the successor would read {expected}")
  kept = set(rule.results[rule.kind(call.letter)])
  for i, name in enumerate(legacy_results):
    if name in kept or not any(True for _ in op.results[i].uses):
      continue
    if name not in rule.zero_results:
      raise call.refuse(f"result {i} ({name!r}) is used, but the successor does not produce it")
    if None in _ir.static_shape(op.results[i]):
      raise call.refuse(f"result {i} ({name!r}) is used and has a dynamic shape; the successor "
                        "does not produce it and a 0 of that shape cannot be built")
  if "mhlo.sharding" in op.attributes and len(kept) != len(legacy_results):
    raise call.refuse("it carries an mhlo.sharding for its legacy result list, which the "
                      "successor changes")


def _successor_attributes(call: _Call, successor: str, attrs: dict[str, int],
                          operand_indices: list[int], result_indices: list[int],
                          n_shape_operands: int) -> dict[str, ir.Attribute]:
  """The successor's attributes: the legacy call's own, minus those rebuilt for the new lists."""
  op, rule = call.op, call.rule
  results = rule.results[rule.kind(call.letter)]
  attributes = {a.name: a.attr for a in (op.attributes[i] for i in range(len(op.attributes)))
                if a.name not in _REBUILT}
  attributes[_TARGET] = ir.StringAttr.get(successor)
  attributes["api_version"] = _ir.api_version_typed_ffi()
  previous = _attr(op, _READ_BACK_BACKEND_CONFIG) or _attr(op, _BACKEND_CONFIG)
  if previous is not None and not isinstance(previous, ir.DictAttr):
    previous = ir.DictAttr(previous) if previous.typeid == ir.DictAttr.static_typeid else None
  int32 = frozenset(k for k, v in attrs.items() if isinstance(v, _rules.Int32))
  attributes[_BACKEND_CONFIG] = _ir.attribute_dict(attrs, previous, int32)
  operand_layouts = _attr(op, "operand_layouts")
  if operand_layouts is not None:
    layouts = ir.ArrayAttr(operand_layouts)
    attributes["operand_layouts"] = ir.ArrayAttr.get([layouts[i] for i in operand_indices])
  result_layouts = _attr(op, "result_layouts")
  if result_layouts is not None:
    layouts = ir.ArrayAttr(result_layouts)
    attributes["result_layouts"] = ir.ArrayAttr.get([layouts[i] for i in result_indices])
  pairs = [(results.index(r), rule.new_operands.index(o)) for r, o in rule.aliases.items()]
  if pairs:
    attributes["output_operand_aliases"] = _ir.aliases(pairs, len(results) > 1)
  if n_shape_operands:
    first = len(rule.new_operands)
    attributes[_SHAPE_OPERANDS] = _ir.i64_vector(range(first, first + n_shape_operands))
  return attributes


def _rewrite(call: _Call) -> Rewrite:
  _check(call)
  rule, op, kind = call.rule, call.op, call.rule.kind(call.letter)
  attrs = _rules.FUNCTIONS[rule.function](call)
  legacy_results = rule.legacy_results[kind]
  results = rule.results[kind]
  legacy_index = {name: legacy_results.index(name) for name in results}
  shape_indices = _shape_operand_indices(op)
  # Legacy shape operands describe every legacy result, in order; keep those of kept results.
  shape_operands = [shape_indices[legacy_index[n]] for n in results] if shape_indices else []
  operand_indices = [call.operand_index[n] for n in rule.new_operands] + shape_operands
  new_operands = [op.operands[i] for i in operand_indices]
  successor = rule.successor_target(call.letter)
  attributes = _successor_attributes(call, successor, attrs, operand_indices,
                                     [legacy_index[n] for n in results], len(shape_operands))

  with ir.InsertionPoint(op), op.location:
    new = ir.Operation.create(CUSTOM_CALL_OP, results=[op.results[legacy_index[n]].type
                                                       for n in results],
                              operands=new_operands, attributes=attributes)
  for j, name in enumerate(results):
    op.results[legacy_index[name]].replace_all_uses_with(new.results[j])
  for name in rule.zero_results:
    i = legacy_results.index(name)
    if any(True for _ in op.results[i].uses):
      op.results[i].replace_all_uses_with(_ir.zeros_like(op.results[i], new))
  dropped = tuple(o.name for o in rule.operands if o.name not in rule.new_operands)
  dead: list[ir.Operation] = []
  for n in dropped:
    producer = _ir.defining_op(op.operands[call.operand_index[n]])
    if producer is not None and producer.name == _ir.CONSTANT_OP and producer not in dead:
      dead.append(producer)  # one constant may feed several operands
  location = str(op.location)
  op.erase()
  for producer in dead:
    if not any(True for _ in producer.results[0].uses):
      producer.erase()
  rewrite = Rewrite(rule=rule.name, legacy_target=call.target, target=successor,
                    location=location, dropped_operands=dropped,
                    attributes=tuple(sorted((k, str(v) if isinstance(v, _rules.Int32) else chr(v))
                                            for k, v in attrs.items())))
  logger.info("upgraded %s -> %s at %s (rule %s)", call.target, successor, location, rule.name)
  return rewrite


def upgrade_module(serialized: bytes, fun_name: str | None = None) -> tuple[bytes, tuple[Rewrite, ...]]:
  """Rewrite the removed custom calls of a serialized module; the bytes are unchanged if none.

  The result depends on the bytes alone, so the last few are kept: a module read by
  several readers (the compat harness's two, on two threads at once) is rewritten once.
  """
  with _upgrading:
    return _upgrade_module(bytes(serialized), fun_name)


# One rewrite at a time, so that a thread asking for a module another is rewriting waits for
# that result instead of rewriting it too.
_upgrading = threading.RLock()


@functools.lru_cache(maxsize=32)
def _upgrade_module(serialized: bytes, fun_name: str | None) -> tuple[bytes, tuple[Rewrite, ...]]:
  with _mlir.scratch_context():
    module = _mlir.module_from_bytes(serialized, fun_name)
    calls = [op for op in walk_operations(module) if op.name == CUSTOM_CALL_OP]
    bound = [c for c in (_bind(op, fun_name) for op in calls) if c is not None]
    if not bound:
      return serialized, ()
    rewrites = tuple(_rewrite(c) for c in bound)
    if not module.operation.verify():
      raise UpgradeError(f"The upgraded module of '{fun_name}' does not verify; this is a bug "
                         "in a rule of jaxport/upgrades (please report it with the blob).")
    return _mlir.module_to_portable_artifact(module), rewrites


@functools.cache
def rewritable_targets() -> frozenset[str]:
  """The legacy custom-call targets some upgrade rule rewrites."""
  return frozenset(_table.rules_by_target())


def upgrade_with_report(exported: Exported) -> UpgradeReport:
  """``exported`` with its removed custom calls rewritten, and what was rewritten.

  Every other field of the record is kept. A nested VJP is upgraded when it is
  built. Refuses with :class:`~jaxport.errors.UpgradeError` when a rule's
  preconditions do not hold.
  """
  serialized, rewrites = upgrade_module(exported.mlir_module_serialized, exported.fun_name)
  if not rewrites:
    return UpgradeReport(exported, ())
  get_vjp = exported._get_vjp
  upgraded_vjp = None
  if get_vjp is not None:
    def upgraded_vjp(_: Exported, original: Exported = exported) -> Exported:
      return upgrade(get_vjp(original))
  return UpgradeReport(dataclasses.replace(exported, mlir_module_serialized=serialized,
                                           _get_vjp=upgraded_vjp), rewrites)


def upgrade(exported: Exported) -> Exported:
  """``exported`` with custom calls that jaxlib no longer registers rewritten into today's.

  See :func:`upgrade_with_report` for what was rewritten; the rewrites are
  also logged at INFO level.
  """
  return upgrade_with_report(exported).exported
