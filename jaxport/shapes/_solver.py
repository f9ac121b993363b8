"""Solving dimension variables from actual argument sizes, and the checks that go with it.

Every symbolic input dimension gives an equation ``spec == size`` where
``size`` is a fresh variable named after the dimension (``args[0].shape[1]``).
Equations are used in passes: one whose terms are all known except a single
``k*v`` for a bare variable ``v`` yields ``v = (size - known)`` (divided by
``k``, with a zero-remainder check); a fully known equation becomes a
consistency check. Every solved variable must be ``>= 1``, and the scope's
explicit constraints are checked on the solution.

The solution and the checks are expressions over the size variables, so the
same result serves at export time (evaluated on traced sizes, emitting
runtime assertions) and at call time (evaluated on the actual shapes).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from typing import Any

from jaxport._jaxcompat import _messages as jax_messages
from jaxport.errors import ShapeError
from jaxport.shapes import _decision
from jaxport.shapes._evaluate import UnknownVariable
from jaxport.shapes._expr import DimExpr, DimSize, evaluate, evaluate_term

MAX_ERROR_MESSAGE_INPUTS = 32
_SHAPES_MISMATCH = "Input shapes do not match the polymorphic shapes specification. "
_TRAILER = f". Please see {jax_messages.SHAPE_POLY_PAGE}#shape-assertion-errors for more details."
_UNSOLVABLE_LINK = f"{jax_messages.SHAPE_POLY_PAGE}#dimension-variables-must-be-solvable-from-the-input-shapes"

Evaluator = Callable[[DimSize], Any]


@dataclasses.dataclass(frozen=True)
class Equation:
  """``spec`` (over the dimension variables) is the size of dimension ``dim_name``."""

  spec: DimExpr
  dim_name: str


@dataclasses.dataclass(frozen=True)
class ShapeCheck:
  """``left == right`` or ``left >= right``, with the message shown when it fails.

  ``pieces`` alternates text and expressions; the expressions are evaluated and
  become the ``{0}``, ``{1}``, ... inputs of the message.
  """

  cmp: str
  left: DimSize
  right: DimSize
  pieces: tuple[str | DimSize, ...]

  def message_and_inputs(self, ev: Evaluator) -> tuple[str, list[Any]]:
    """The message with ``{i}`` placeholders, and the values they refer to (at most 32)."""
    specs: dict[Any, str] = {}
    inputs: list[Any] = []
    out: list[str] = []
    for p in self.pieces:
      if isinstance(p, str):
        out.append(p)
        continue
      key = p.key if isinstance(p, DimExpr) else ("int", p)
      spec = specs.get(key)
      if spec is None:
        if len(inputs) >= MAX_ERROR_MESSAGE_INPUTS:
          out.append("N/A")
          continue
        spec = "{" + str(len(inputs)) + "}"
        specs[key] = spec
        inputs.append(ev(p))
      out.append(spec)
    return "".join(out), inputs

  def error(self, ev: Evaluator) -> ShapeError:
    message, inputs = self.message_and_inputs(ev)
    return ShapeError(message.format(*inputs))

  def holds(self, left: Any, right: Any) -> bool:
    return left == right if self.cmp == _decision.EQ else left >= right

  def check_statically(self, ev: Evaluator, is_inconclusive: type[Exception]) -> None:
    """Raise the check's ShapeError unless it holds for these (possibly symbolic) values."""
    try:
      ok = self.holds(ev(self.left), ev(self.right))
    except is_inconclusive as e:
      raise self.error(ev) from e
    if not ok:
      raise self.error(ev)


def evaluator(env: dict[str, Any]) -> Evaluator:
  """Evaluates expressions with the size variables bound by ``env``."""
  def ev(e: DimSize) -> Any:
    if isinstance(e, DimExpr):
      return evaluate(e, env)
    return operator.index(e)
  return ev


def solve(equations: Sequence[Equation], specs: Sequence[tuple[str, str]]) -> tuple[dict[str, DimSize], list[ShapeCheck]]:
  """Solve ``equations`` for their dimension variables; ``specs`` are ``(arg name, shape)``
  pairs quoted in messages. Raises ShapeError when some variable cannot be solved."""
  env: dict[str, DimSize] = {}
  checks: list[ShapeCheck] = []
  solved_pieces: list[str | DimSize] = [" Obtained dimension variables: "]
  specs_msg = (" Using the following polymorphic shapes specifications: "
               + ",".join(f"{name}.shape = {shape}" for name, shape in specs) + ".")
  scope = equations[0].spec.scope if equations else None
  for eq in equations:
    scope._check_same_scope(eq.spec, when=f"in the shape of {eq.dim_name}",
                            self_descr=f"for {equations[0].dim_name} ",
                            other_descr=eq.dim_name)

  def use(eq: Equation) -> bool:
    size = DimExpr.from_var(eq.dim_name, scope)
    rest: DimSize = size
    var, var_k = None, 0
    for t, k in eq.spec.terms:
      try:
        value = evaluate_term(t, env, scope)
      except UnknownVariable:
        v = t.to_var()
        if v is not None and var is None:
          var, var_k = v, k
          continue
        return False
      rest = rest - value * k
    if var is None:
      expected = evaluate(eq.spec, env)
      checks.append(ShapeCheck(_decision.EQ, size, expected, (
          _SHAPES_MISMATCH + f"Found inconsistency between dimension size {eq.dim_name} (= ",
          size, f") and the specification '{eq.spec}' (= ", expected,
          ")." + specs_msg, *solved_pieces, _TRAILER)))
      return True
    if var_k == 1:
      value = rest
    else:
      value, remainder = divmod(rest, var_k)
      checks.append(ShapeCheck(_decision.EQ, remainder, 0, (
          _SHAPES_MISMATCH + "Division had remainder ", remainder,
          f" when computing the value of '{var}'." + specs_msg, *solved_pieces, _TRAILER)))
    env[var] = value
    solved_pieces.extend([f"'{var}' = ", value,
                          f" from specification '{eq.spec}' for dimension {eq.dim_name} (= ",
                          size, "), "])
    checks.append(ShapeCheck(_decision.GEQ, value, 1, (
        _SHAPES_MISMATCH + f"Expected value >= 1 for dimension variable '{var}'." + specs_msg,
        *solved_pieces, _TRAILER)))
    return True

  pending = list(equations)
  while pending:
    remaining = [eq for eq in pending if not use(eq)]
    if len(remaining) == len(pending):
      unsolved: set[str] = set()
      for eq in remaining:
        unsolved.update(eq.spec._get_vars())
      unsolved.difference_update(env)
      raise ShapeError(
          f"Cannot solve for values of dimension variables {unsolved}. "
          "We can only solve linear uni-variate constraints." + specs_msg +
          " Unprocessed specifications: " +
          ", ".join(f"'{eq.spec}' for dimension size {eq.dim_name}" for eq in remaining) +
          f". Please see {_UNSOLVABLE_LINK} for more details.")
    pending = remaining

  if env:
    for c in scope._explicit_constraints:
      diff = evaluate(c.diff, env) if isinstance(c.diff, DimExpr) else c.diff
      relation = "greater or equal" if c.cmp == _decision.GEQ else "equal"
      checks.append(ShapeCheck(c.cmp, diff, 0, (
          f"Input shapes do not match the symbolic shape constraint {c.debug_str}. "
          f"Expected '{c.diff}' to be {relation} to 0, but found ", diff,
          ". " + specs_msg, *solved_pieces, _TRAILER)))
  return env, checks
