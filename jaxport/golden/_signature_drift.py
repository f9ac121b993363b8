"""Comparing custom-call signatures: their order, their text, what a difference is, and the
changes between two sets of them. Free of jax, so that the pytest process judges drift
without importing it (the signatures themselves are read from modules by ``_signatures``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from jaxport.golden._manifest import CustomCallSignature


def sort_key(s: CustomCallSignature) -> tuple:
  """A total order on signatures: target, types, then attributes."""
  return (s.target, s.operand_types, s.result_types, tuple(s.attributes.items()))


def describe(s: CustomCallSignature) -> str:
  """``target(operand types) -> (result types)``, one line."""
  return f"{s.target}({', '.join(s.operand_types)}) -> ({', '.join(s.result_types)})"


# Attributes that carry partitioner metadata rather than the call's ABI: a change
# in these alone is reported but does not break a serialized call.
METADATA_ATTRIBUTES = frozenset({"sdy.sharding_rule", "sdy.sharding", "mhlo.sharding"})


# Attributes whose text jax writes for people, not for the call: a documentation link in
# them moves with jax's documentation (``export/shape_poly.html`` became
# ``501/shape-polymorphism.html`` in jax 0.12, ``jax.readthedocs.io`` became
# ``docs.jax.dev``) while the call stays the same, so links are compared as one placeholder.
PROSE_ATTRIBUTES = frozenset({"error_message"})
DOCUMENTATION_LINK = "<documentation link>"
_LINK = re.compile(r"https?://[^\s\"'\\]+")


def normalized(s: CustomCallSignature) -> CustomCallSignature:
  """``s`` as signatures are compared: the links inside its prose attributes replaced by
  :data:`DOCUMENTATION_LINK`; everything else (the predicate, operands, results) as it is."""
  if not PROSE_ATTRIBUTES & s.attributes.keys():
    return s
  return dataclasses.replace(s, attributes={
      k: _LINK.sub(DOCUMENTATION_LINK, v) if k in PROSE_ATTRIBUTES and isinstance(v, str) else v
      for k, v in s.attributes.items()})


_DIMS_RE = re.compile(r"tensor<((?:[0-9?]+x)+)")
_RULE_SIZES_RE = re.compile(r"(\b[a-z]+)=\d+")


def _blind(text: str) -> str:
  text = _DIMS_RE.sub(lambda m: "tensor<" + "?x" * m.group(1).count("x"), text)
  return _RULE_SIZES_RE.sub(r"\1=?", text)


def shape_blind(sigs: Iterable[CustomCallSignature]) -> tuple[CustomCallSignature, ...]:
  """``sigs`` with every dimension size replaced by ``?`` (ranks, element types and
  attributes kept): how an imported entry, another function of the same operation than the
  case it is compared with, is compared with today's lowering."""
  out = {CustomCallSignature(
      target=s.target, operand_types=tuple(_blind(t) for t in s.operand_types),
      result_types=tuple(_blind(t) for t in s.result_types),
      attributes={k: _blind(v) for k, v in s.attributes.items()}) for s in sigs}
  return tuple(sorted(out, key=sort_key))


def gone_text(target: str) -> str:
  """The difference of a recorded target today's lowering no longer emits."""
  return f"target {target} was recorded but the current lowering no longer emits it"


def added_text(target: str) -> str:
  """The difference of a target today's lowering emits and the entry did not record."""
  return f"target {target} is emitted by the current lowering but was not recorded"


@dataclasses.dataclass(frozen=True)
class SignatureChange:
  """One difference between recorded and current custom-call signatures."""

  target: str
  message: str
  metadata_only: bool = False

  def __str__(self) -> str:
    return self.message


def drift(recorded: Iterable[CustomCallSignature],
          current: Iterable[CustomCallSignature]) -> list[SignatureChange]:
  """How the current signatures differ from the recorded ones, one change per target; a
  documentation link inside a prose attribute (:func:`normalized`) is no difference."""
  recorded, current = set(map(normalized, recorded)), set(map(normalized, current))
  rec = {s.target for s in recorded}
  cur = {s.target for s in current}
  changes = [SignatureChange(t, gone_text(t)) for t in sorted(rec - cur)]
  changes += [SignatureChange(t, added_text(t)) for t in sorted(cur - rec)]
  for t in sorted(rec & cur):
    old = sorted((s for s in recorded if s.target == t), key=sort_key)
    new = sorted((s for s in current if s.target == t), key=sort_key)
    if old == new:
      continue
    old_attrs = {k: v for s in old for k, v in s.attributes.items()}
    new_attrs = {k: v for s in new for k, v in s.attributes.items()}
    changed = sorted(k for k in old_attrs.keys() | new_attrs.keys()
                     if old_attrs.get(k) != new_attrs.get(k))
    same_types = [describe(s) for s in old] == [describe(s) for s in new]
    metadata_only = same_types and bool(changed) and set(changed) <= METADATA_ATTRIBUTES
    name = f"target {t}{_kernels(old, new)}"
    if same_types:
      message = (f"{name} changed signature (changed attributes {changed}; types unchanged: "
                 f"{[describe(s) for s in new]})")
    else:
      message = (f"{name} changed signature: recorded {[describe(s) for s in old]}, now "
                 f"{[describe(s) for s in new]}" + (f"; attributes differing: {changed}" if changed else ""))
    changes.append(SignatureChange(t, message, metadata_only))
  return changes


# The attribute that names the kernel a call runs (a Pallas TPU kernel's ``tpu_custom_call``).
KERNEL_NAME_ATTRIBUTE = "kernel_name"


def _kernels(old: Iterable[CustomCallSignature], new: Iterable[CustomCallSignature]) -> str:
  """`` (kernel 'matmul')``: the kernels the differing calls of a target run, where their
  signatures name them (a Pallas kernel's call changes with its Mosaic payload, one opaque
  attribute, so the kernel's name is what says which kernel changed); "" where none does."""
  names = sorted({s.attributes[KERNEL_NAME_ATTRIBUTE].strip('"')
                  for s in (*old, *new) if KERNEL_NAME_ATTRIBUTE in s.attributes})
  if not names:
    return ""
  return f" (kernel {', '.join(repr(n) for n in names)})"
