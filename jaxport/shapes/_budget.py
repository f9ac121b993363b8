"""The work budgets of symbolic shapes: units of work counted against a limit of
``jaxport._limits`` (so that an input that would take too long is refused after the same work
on every machine), the meter of the specs being parsed, and the refusals past each limit.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from jaxport import _limits
from jaxport.errors import ShapeError
from jaxport.shapes._terms import Expression


class WorkMeter:
  """Units of work counted against one budget of ``jaxport._limits``, so that an input that
  would take too long is refused after the same amount of work on every machine."""

  __slots__ = ("spent", "limit", "refusal")

  def __init__(self, limit: str, refusal: Callable[[str], ShapeError]):
    self.spent = 0
    self.limit = limit
    self.refusal = refusal

  def charge(self, n: int) -> None:
    self.spent += n
    if self.spent > getattr(_limits, self.limit):
      raise self.refusal(_limits.name(self.limit))


# The meter of the shape specs being parsed in this thread (the parsing scope's), or None.
_parsing: contextvars.ContextVar[WorkMeter | None] = contextvars.ContextVar(
    "jaxport_shapes_parsing", default=None)


@contextlib.contextmanager
def parsing(meter: WorkMeter) -> Iterator[None]:
  """Charges the arithmetic and decisions done while the block runs to ``meter`` too."""
  token = _parsing.set(meter)
  try:
    yield
  finally:
    _parsing.reset(token)


def charge_parsing(n: int) -> None:
  """Charges ``n`` units to the meter of the specs being parsed, if any."""
  meter = _parsing.get()
  if meter is not None:
    meter.charge(n)


def spec_work_exceeded(limit: str) -> ShapeError:
  """The refusal of specs whose simplification (max/min, products) took too much work."""
  return ShapeError(
      f"The symbolic shape specs parsed in one scope did more than {limit} units of work "
      "(deciding comparisons to simplify max and min, multiplying terms). Real specs need "
      "a few hundred; max/min nested over many distinct variables and products of long "
      "sums need far more. Write the shapes with fewer nested max/min or shorter sums.")


def product_too_large(e1: Expression, e2: Expression) -> ShapeError:
  """The refusal of a multiplication that would form too many products of terms."""
  n1, n2 = len(e1.terms), len(e2.terms)
  return ShapeError(
      f"Multiplying symbolic dimensions of {n1} and {n2} terms would form {n1 * n2} "
      f"products of terms, past the limit {_limits.name('MAX_PRODUCT_TERMS')}; the "
      "dimensions start '" + _clip(str(e1)) + "' and '" + _clip(str(e2)) + "'. Real "
      "dimensions have a few terms: multiply shorter sums.")


def _clip(text: str) -> str:
  return text if len(text) <= 80 else text[:80] + "..."


def exponent_too_large(base: str, power: int) -> ShapeError:
  """The refusal of ``base ** power`` past the exponent limit (powers loop ``power`` times)."""
  return ShapeError(
      f"Symbolic dimension exponent {power} in '{base}' ** {power} exceeds the limit "
      f"{_limits.name('MAX_DIM_EXPONENT')}: no dimension size fits in 64 bits past it. "
      "Write the shape with a smaller exponent.")
