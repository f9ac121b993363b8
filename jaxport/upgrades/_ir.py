"""Reading and building the MLIR pieces an upgrade rule needs (jaxlib's MLIR bindings).

Constant folding of the scalar operands legacy calls pass, the static facts
of an operand's type (batch size, a dimension), and the few attributes a
successor call carries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxport.errors import JaxportError

CONSTANT_OP = "stablehlo.constant"
_PASS_THROUGH = ("stablehlo.convert", "stablehlo.reshape", "stablehlo.broadcast_in_dim")
_ARITH = {"stablehlo.multiply": lambda a, b: a * b, "stablehlo.add": lambda a, b: a + b,
          "stablehlo.subtract": lambda a, b: a - b}
ELEMENT_TYPES = {"s": "f32", "d": "f64", "c": "complex<f32>", "z": "complex<f64>"}


class NotConstant(JaxportError):
  """The value is not computed from constants alone; carries what computes it (caught by the
  rules, which refuse the upgrade with an ``UpgradeError`` or read the value from types)."""

  def __init__(self, producer: str):
    super().__init__(producer)
    self.producer = producer


def defining_op(value: ir.Value) -> ir.Operation | None:
  owner = value.owner
  if isinstance(owner, ir.Block):
    return None
  return owner.operation if hasattr(owner, "operation") else owner


# jaxlib's bindings cannot hand out a complex dense attribute at all (the
# downcast fails), so a complex scalar constant is read from the constant op's
# printed value; only 1 is recognised, the one value a rule asks about.
_COMPLEX_ONE = "value = dense<(1.000000e+00,0.000000e+00)>"


def _complex_constant(op: ir.Operation) -> complex:
  return 1 + 0j if _COMPLEX_ONE in op.get_asm(print_generic_op_form=True) else complex("nan")


def scalar_constant(value: ir.Value) -> int | float | complex:
  """The value of a scalar computed from constants only, else ``NotConstant``.

  Legacy lowerings build sizes as products of constants (``1 * b0 * b1``)
  and pass flags as plain constants; both fold here.
  """
  op = defining_op(value)
  if op is None:
    raise NotConstant("a function argument")
  if op.name == CONSTANT_OP:
    if ir.RankedTensorType(value.type).element_type.typeid == ir.ComplexType.static_typeid:
      return _complex_constant(op)
    dense = ir.DenseElementsAttr(op.attributes["value"])
    if not dense.is_splat:
      raise NotConstant("a non-scalar constant")
    return np.asarray(dense).reshape(-1)[0].item()
  if op.name in _PASS_THROUGH:
    return scalar_constant(op.operands[0])
  if op.name in _ARITH:
    return _ARITH[op.name](scalar_constant(op.operands[0]), scalar_constant(op.operands[1]))
  raise NotConstant(f"{op.name} at {op.location}")


def static_shape(value: ir.Value) -> list[int | None]:
  """The dimensions of a ranked tensor, None where dynamic."""
  t = ir.RankedTensorType(value.type)
  return [None if t.is_dynamic_dim(i) else t.get_dim_size(i) for i in range(t.rank)]


def size_of(expr: str, operands: dict[str, ir.Value]) -> int | None:
  """Evaluate a size expression of the rule table on operand types; None when not static.

  ``batch(x)``: the product of all but the last two dimensions of ``x``;
  ``dim(x,k)``: dimension ``k`` of ``x`` (negative from the end).
  """
  head, _, rest = expr.partition("(")
  args = [a.strip() for a in rest.rstrip(")").split(",")]
  dims = static_shape(operands[args[0]])
  if head == "batch":
    batch = dims[:-2]
    if any(d is None for d in batch):
      return None
    return int(np.prod(batch, dtype=np.int64))
  if head == "dim":
    return dims[int(args[1])]
  raise ValueError(f"unknown size expression {expr!r}")


def element_type(value: ir.Value) -> str:
  return str(ir.RankedTensorType(value.type).element_type)


def attribute_dict(entries: dict[str, int], base: ir.Attribute | None = None,
                   int32: frozenset[str] = frozenset()) -> ir.Attribute:
  """A ``backend_config`` dictionary: ``base``'s entries plus ``entries`` as ui8 (i32 if in ``int32``)."""
  u8, i32 = ir.IntegerType.get_unsigned(8), ir.IntegerType.get_signless(32)
  merged: dict[str, ir.Attribute] = {}
  if base is not None:
    d = ir.DictAttr(base)
    merged.update({d[i].name: d[i].attr for i in range(len(d))})
  merged.update({k: ir.IntegerAttr.get(i32 if k in int32 else u8, int(v))
                 for k, v in entries.items()})
  return ir.DictAttr.get(merged)


def aliases(pairs: Sequence[tuple[int, int]], tuple_result: bool) -> ir.Attribute:
  """``output_operand_aliases`` for (result index, operand index) pairs."""
  return ir.ArrayAttr.get([
      hlo.OutputOperandAlias.get(output_tuple_indices=[r] if tuple_result else [],
                                 operand_index=o, operand_tuple_indices=[])
      for r, o in pairs])


def i64_vector(values: Sequence[int]) -> ir.Attribute:
  return ir.DenseIntElementsAttr.get(np.asarray(values, np.int64))


def api_version_typed_ffi() -> ir.Attribute:
  """``api_version = 4``: the typed-FFI calling convention of every ``*_ffi`` target."""
  return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4)


def zeros_like(value: ir.Value, before: ir.Operation) -> ir.Value:
  """A constant 0 of ``value``'s type (static: checked by the caller), inserted before ``before``."""
  t = ir.RankedTensorType(value.type)
  zero = ir.IntegerAttr.get(t.element_type, 0)
  with ir.InsertionPoint(before), before.location:
    return hlo.ConstantOp(ir.DenseElementsAttr.get_splat(t, zero)).result
