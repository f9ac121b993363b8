"""Symbolic dimensions as small syntax trees, the fuzz suite's own oracle.

A tree follows the documented grammar of symbolic dimensions: it renders to the exact text a
user would write (``render``) and evaluates with Python integer semantics in an environment
(``evaluate``), so whatever an implementation answers about the parsed text must agree with
the tree's value wherever the constraints hold. ``parse_dim_text`` reads an implementation's
*printed* dimension back into a tree, so printed results are evaluated without any
implementation internals. Nothing here draws values: ``strategies`` does.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import tokenize
from collections.abc import Mapping
from typing import Union

from jaxport.errors import JaxportError


OPERATIONS = ("mod", "floordiv", "max", "min")
# Shrinking prefers the first names; the longer ones check tokenizing of names.
VAR_POOL = ("a", "b", "c", "d", "n_1", "batch")
RESERVED = frozenset(OPERATIONS) | {"_"}

Env = Mapping[str, int]


@dataclasses.dataclass(frozen=True)
class Var:
  name: str

  def render(self) -> str:
    return self.name

  def evaluate(self, env: Env) -> int:
    return env[self.name]

  def vars(self) -> frozenset[str]:
    return frozenset((self.name,))


@dataclasses.dataclass(frozen=True)
class Const:
  value: int

  def render(self) -> str:
    return str(self.value)

  def evaluate(self, env: Env) -> int:
    return self.value

  def vars(self) -> frozenset[str]:
    return frozenset()


@dataclasses.dataclass(frozen=True)
class Op:
  """``mod``/``floordiv``/``max``/``min`` of two expressions (Python floor semantics)."""
  op: str
  lhs: "Expr"
  rhs: "Expr"

  def render(self) -> str:
    return f"{self.op}({self.lhs.render()}, {self.rhs.render()})"

  def evaluate(self, env: Env) -> int:
    x, y = self.lhs.evaluate(env), self.rhs.evaluate(env)
    if self.op == "mod":
      return x % y
    if self.op == "floordiv":
      return x // y
    return max(x, y) if self.op == "max" else min(x, y)

  def vars(self) -> frozenset[str]:
    return self.lhs.vars() | self.rhs.vars()


Factor = Union[Var, Const, Op]


@dataclasses.dataclass(frozen=True)
class Term:
  """A product of factors, each with a positive exponent (``2*a^2*mod(b, 3)``)."""
  factors: tuple[tuple[Factor, int], ...]

  def render(self) -> str:
    return "*".join(f.render() + (f"^{k}" if k != 1 else "") for f, k in self.factors)

  def evaluate(self, env: Env) -> int:
    r = 1
    for f, k in self.factors:
      r *= f.evaluate(env) ** k
    return r

  def vars(self) -> frozenset[str]:
    return frozenset().union(*(f.vars() for f, _ in self.factors))


@dataclasses.dataclass(frozen=True)
class Expr:
  """A signed sum of terms; the grammar's ``expr`` (no parenthesized sub-expressions)."""
  parts: tuple[tuple[int, Term], ...]

  def render(self) -> str:
    out = []
    for i, (sign, t) in enumerate(self.parts):
      if i == 0:
        out.append(("- " if sign < 0 else "") + t.render())
      else:
        out.append((" - " if sign < 0 else " + ") + t.render())
    return "".join(out)

  def evaluate(self, env: Env) -> int:
    return sum(sign * t.evaluate(env) for sign, t in self.parts)

  def vars(self) -> frozenset[str]:
    return frozenset().union(*(t.vars() for _, t in self.parts))

  def __repr__(self) -> str:
    return f"Expr({self.render()!r})"

  def _repr_pretty_(self, p, cycle) -> None:  # how hypothesis prints a counterexample
    p.text(repr(self))

  __str__ = render


def expr_of(*factors: Factor | tuple[Factor, int], sign: int = 1) -> Expr:
  """A one-term expression, for building trees by hand (``expr_of(Const(2), Var('b'))``)."""
  fs = tuple(f if isinstance(f, tuple) else (f, 1) for f in factors)
  return Expr(((sign, Term(fs)),))


def var_expr(name: str) -> Expr:
  return expr_of(Var(name))


def const_expr(k: int) -> Expr:
  return expr_of(Const(k))


def add(*exprs: Expr) -> Expr:
  return Expr(tuple(itertools.chain.from_iterable(e.parts for e in exprs)))


def linear(k: int, name: str, c: int) -> Expr:
  """``k*name + c`` (``name`` when k == 1; no constant when c == 0)."""
  e = var_expr(name) if k == 1 else expr_of(Const(k), Var(name))
  if c:
    e = add(e, Expr(((1 if c > 0 else -1, Term(((Const(abs(c)), 1),))),)))
  return e


# ---------------------------------------------------------------------------
# Reading printed dimensions back into trees
# ---------------------------------------------------------------------------

class DimTextError(JaxportError, ValueError):
  """The text does not follow the grammar of a symbolic dimension."""


def parse_dim_text(text: str) -> Expr:
  """Reads one printed dimension (``'2*b + floordiv(a, - 3) - 1'``) into a tree.

  Independent of every implementation under test: it is how the properties
  evaluate what an implementation printed.
  """
  toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
          if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]
  pos = 0

  def peek() -> str | None:
    return toks[pos].string if pos < len(toks) else None

  def take(expected: str | None = None) -> str:
    nonlocal pos
    if pos >= len(toks):
      raise DimTextError(f"unexpected end of {text!r}")
    s = toks[pos].string
    if expected is not None and s != expected:
      raise DimTextError(f"expected {expected!r} at {s!r} in {text!r}")
    pos += 1
    return s

  def integer() -> int:
    s = take()
    if not s.isdigit():
      raise DimTextError(f"expected an integer at {s!r} in {text!r}")
    return int(s)

  def factor() -> Factor:
    s = peek()
    if s == "-":
      take()
      return Const(-integer())
    if s is not None and s.isdigit():
      return Const(integer())
    name = take()
    if name in OPERATIONS:
      take("(")
      lhs = expr()
      take(",")
      rhs = expr()
      take(")")
      return Op(name, lhs, rhs)
    if not name.isidentifier() or name in RESERVED:
      raise DimTextError(f"expected a factor at {name!r} in {text!r}")
    return Var(name)

  def term() -> Term:
    fs = []
    while True:
      f = factor()
      k = 1
      if peek() == "^":
        take()
        k = integer()
      fs.append((f, k))
      if peek() != "*":
        return Term(tuple(fs))
      take()

  def expr() -> Expr:
    parts = []
    sign = 1
    if peek() in ("+", "-"):
      sign = -1 if take() == "-" else 1
    parts.append((sign, term()))
    while peek() in ("+", "-"):
      sign = -1 if take() == "-" else 1
      parts.append((sign, term()))
    return Expr(tuple(parts))

  e = expr()
  if pos != len(toks):
    raise DimTextError(f"trailing text {toks[pos].string!r} in {text!r}")
  return e
