"""Hypothesis strategies for symbolic shapes, and the oracle they are checked against.

The only module of the harness that builds hypothesis strategies for shapes.
Everything is generated as a small syntax tree that follows the documented
grammar of symbolic dimensions, so that each drawn value can be

* rendered to the exact text a user would write (``render``), and
* evaluated with Python integer semantics in an environment (``evaluate``),

which makes the tree its own oracle: whatever an implementation answers about
the parsed expression must agree with the tree's value in every environment
that satisfies the constraints. ``parse_dim_text`` reads the *printed* form of
an implementation's expression back into a tree, so printed results can be
evaluated without any implementation internals.

Layout: syntax trees; text reader; strategies (variables, expressions,
constraint sets, environments, decision cases, argument-list specs, their
concrete shapes and violations); the implementations under test
(``jax.export`` as the reference and ``jaxport``) behind one small adapter;
exporting and calling a spec case, including running a serialized module with
only its own ``shape_assertion`` checks.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import re
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from hypothesis import assume, strategies as st

from jaxport.errors import JaxportError

if TYPE_CHECKING:
  from jaxport.harness._replacement import Replacement

# ---------------------------------------------------------------------------
# Syntax trees
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Strategies: variables and expressions
# ---------------------------------------------------------------------------

def dim_var_names(pool: Sequence[str] = VAR_POOL) -> st.SearchStrategy[str]:
  """One dimension variable name; shrinks towards ``a``."""
  return st.sampled_from(tuple(pool))


def var_sets(min_size: int = 1, max_size: int = 3) -> st.SearchStrategy[tuple[str, ...]]:
  """Distinct variable names, sorted (shrinks towards ``('a',)``)."""
  return st.lists(dim_var_names(), min_size=min_size, max_size=max_size,
                  unique=True).map(lambda xs: tuple(sorted(xs)))


def small_ints(lo: int = -6, hi: int = 6) -> st.SearchStrategy[int]:
  return st.integers(lo, hi)


def divisors(names: Sequence[str]) -> st.SearchStrategy[Expr]:
  """Expressions that are never 0 when every variable is >= 1, positive and negative.

  Nonzero constants, ``v``, ``- v``, ``v + k`` (k >= 0).
  """
  consts = st.sampled_from((1, 2, 3, 5, -1, -2, -3)).map(const_expr)
  if not names:
    return consts
  v = st.sampled_from(tuple(names))
  return st.one_of(
      consts,
      v.map(var_expr),
      v.map(lambda n: expr_of(Var(n), sign=-1)),
      st.tuples(v, st.integers(0, 3)).map(lambda p: linear(1, p[0], p[1])),
  )


def exprs(names: Sequence[str], *, max_depth: int = 2, max_terms: int = 3,
          max_factors: int = 2, max_exponent: int = 2,
          operations: Sequence[str] = OPERATIONS) -> st.SearchStrategy[Expr]:
  """Dimension expressions over ``names``: sums, products, powers, mod/floordiv/max/min.

  Divisors of ``mod``/``floordiv`` come from :func:`divisors` (both signs), so no
  environment with variables >= 1 divides by zero.
  """
  names = tuple(names)

  def at_depth(depth: int) -> st.SearchStrategy[Expr]:
    leaves: list[st.SearchStrategy[Factor]] = [small_ints().map(Const)]
    if names:
      leaves.insert(0, st.sampled_from(names).map(Var))
    choices = list(leaves)
    if depth > 0 and operations:
      sub = exprs(names, max_depth=depth - 1, max_terms=2, max_factors=1,
                  max_exponent=max_exponent, operations=operations)
      op = st.sampled_from(tuple(operations))
      choices.append(
          op.flatmap(lambda o: st.tuples(
              st.just(o), sub,
              divisors(names) if o in ("mod", "floordiv") else sub)).map(lambda t: Op(*t)))
    factor = st.one_of(*choices)
    power = st.one_of(st.just(1), st.integers(2, max_exponent)) if max_exponent > 1 else st.just(1)
    # No exponent on a constant: '-1^2' reads as -(1^2), as in Python.
    term = st.lists(st.tuples(factor, power), min_size=1, max_size=max_factors).map(
        lambda fs: Term(tuple((f, 1 if isinstance(f, Const) else k) for f, k in fs)))
    return st.lists(st.tuples(st.sampled_from((1, -1)), term), min_size=1,
                    max_size=max_terms).map(lambda ps: Expr(tuple(ps)))

  return at_depth(max_depth)


def nonneg_exprs(names: Sequence[str], *, max_terms: int = 2) -> st.SearchStrategy[Expr]:
  """Expressions that are >= 0 whenever every variable is >= 1 (for shape dims).

  Positive coefficients only; mod/floordiv by positive constants; max/min of such.
  """
  names = tuple(names)
  v = st.sampled_from(names)
  atom = st.one_of(
      v.map(Var),
      st.tuples(st.sampled_from(("mod", "floordiv")), v, st.integers(1, 4)).map(
          lambda t: Op(t[0], var_expr(t[1]), const_expr(t[2]))),
      st.tuples(st.sampled_from(("max", "min")), v, v, st.integers(0, 3)).map(
          lambda t: Op(t[0], var_expr(t[1]), linear(1, t[2], t[3]))),
  )
  term = st.tuples(st.integers(1, 3), st.lists(st.tuples(atom, st.integers(1, 2)), min_size=1,
                                               max_size=2)).map(
      lambda p: Term(((Const(p[0]), 1),) + tuple(p[1])) if p[0] != 1 else Term(tuple(p[1])))
  return st.tuples(st.lists(term, min_size=1, max_size=max_terms), st.integers(0, 3)).map(
      lambda p: add(Expr(tuple((1, t) for t in p[0])),
                    *([const_expr(p[1])] if p[1] else [])))


# ---------------------------------------------------------------------------
# Constraint sets and environments
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Constraints:
  """Explicit constraints of a symbolic scope.

  ``equalities``: ``(v, e)`` meaning ``v == e`` where ``e`` mentions only free
  variables (no variable defined by an equality), so an environment is built
  from the free variables and completed. ``inequalities``: ``(lhs, cmp, rhs)``
  with cmp ``>=`` or ``<=``.
  """
  equalities: tuple[tuple[str, Expr], ...] = ()
  inequalities: tuple[tuple[Expr, str, Expr], ...] = ()
  divisibilities: tuple[tuple[Expr, int], ...] = ()

  def strings(self) -> list[str]:
    return ([f"{v} == {e.render()}" for v, e in self.equalities] +
            [f"{l.render()} {c} {r.render()}" for l, c, r in self.inequalities] +
            [f"mod({e.render()}, {k}) == 0" for e, k in self.divisibilities])

  def defined(self) -> frozenset[str]:
    return frozenset(v for v, _ in self.equalities)

  def complete(self, free_env: Env) -> dict[str, int]:
    env = dict(free_env)
    for v, e in self.equalities:
      env[v] = e.evaluate(env)
    return env

  def violated(self, env: Env) -> list[str]:
    """The constraint strings false in ``env`` (variables must be >= 1 separately)."""
    bad = []
    for s, (l, c, r) in zip(self.strings()[len(self.equalities):], self.inequalities):
      x, y = l.evaluate(env), r.evaluate(env)
      if not (x >= y if c == ">=" else x <= y):
        bad.append(s)
    for s, (v, e) in zip(self.strings(), self.equalities):
      if env[v] != e.evaluate(env):
        bad.append(s)
    first = len(self.equalities) + len(self.inequalities)
    for s, (e, k) in zip(self.strings()[first:], self.divisibilities):
      if e.evaluate(env) % k:
        bad.append(s)
    return bad

  def holds(self, env: Env) -> bool:
    return all(x >= 1 for x in env.values()) and not self.violated(env)

  def __repr__(self) -> str:
    return f"Constraints({self.strings()!r})"

  def _repr_pretty_(self, p, cycle) -> None:  # how hypothesis prints a counterexample
    p.text(repr(self))


NO_CONSTRAINTS = Constraints()


@st.composite
def constraint_sets(draw, names: Sequence[str], *, max_equalities: int = 1,
                    max_inequalities: int = 2, max_divisibilities: int = 1,
                    exprs_for: Callable[..., Any] | None = None) -> Constraints:
  """Constraints over ``names``: a few ``v == e`` (acyclic), ``e1 >= e2``/``e1 <= e2``
  and ``mod(e, k) == 0``."""
  names = tuple(names)
  make = exprs_for or (lambda ns: exprs(ns, max_depth=1, max_terms=2, max_factors=2))
  eqs: list[tuple[str, Expr]] = []
  if len(names) >= 2 and max_equalities:
    n_eq = draw(st.integers(0, min(max_equalities, len(names) - 1)))
    defined = draw(st.lists(st.sampled_from(names), min_size=n_eq, max_size=n_eq, unique=True))
    free = tuple(n for n in names if n not in defined)
    for v in defined:
      eqs.append((v, draw(nonneg_exprs(free, max_terms=2))))
  ineqs = draw(st.lists(st.tuples(make(names), st.sampled_from((">=", "<=")), make(names)),
                        max_size=max_inequalities))
  divs = draw(st.lists(st.tuples(nonneg_exprs(names, max_terms=1), st.integers(2, 4)),
                       max_size=max_divisibilities))
  return Constraints(tuple(eqs), tuple(ineqs), tuple(divs))


VALUE_GRID = (1, 2, 3, 5, 11)


def env_grid(names: Sequence[str], constraints: Constraints = NO_CONSTRAINTS,
             values: Sequence[int] = VALUE_GRID) -> list[dict[str, int]]:
  """Every assignment of ``values`` to the free variables, completed by the equalities."""
  free = [n for n in names if n not in constraints.defined()]
  return [constraints.complete(dict(zip(free, vs)))
          for vs in itertools.product(values, repeat=len(free))]


@st.composite
def environments(draw, names: Sequence[str], constraints: Constraints = NO_CONSTRAINTS, *,
                 satisfying: bool | None = True, max_value: int = 40) -> dict[str, int]:
  """An assignment of the variables; ``satisfying`` True/False filters on the constraints."""
  free = [n for n in names if n not in constraints.defined()]
  env = constraints.complete({n: draw(st.integers(1, max_value)) for n in free})
  if satisfying is not None:
    assume(constraints.holds(env) == satisfying)
  return env


# ---------------------------------------------------------------------------
# Decision cases
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DecisionCase:
  names: tuple[str, ...]
  constraints: Constraints
  lhs: Expr
  rhs: Expr

  def __repr__(self) -> str:
    return (f"DecisionCase(lhs={self.lhs.render()!r}, rhs={self.rhs.render()!r}, "
            f"constraints={self.constraints.strings()!r})")

  def _repr_pretty_(self, p, cycle) -> None:  # how hypothesis prints a counterexample
    p.text(repr(self))


@st.composite
def decision_cases(draw, *, with_constraints: bool = True) -> DecisionCase:
  """Two expressions to compare, under a drawn constraint set."""
  names = draw(var_sets(1, 3))
  cons = draw(constraint_sets(names)) if with_constraints and draw(st.booleans()) else NO_CONSTRAINTS
  if cons.inequalities and draw(st.booleans()):
    # Near a constraint's own sides, where the answer should come from the constraint.
    lhs, _, rhs = draw(st.sampled_from(cons.inequalities))
    k = draw(st.integers(-2, 2))
    return DecisionCase(names, cons, lhs, add(rhs, const_expr(k)) if k else rhs)
  lhs = draw(exprs(names))
  rhs = draw(st.one_of(small_ints().map(const_expr), exprs(names, max_depth=1)))
  return DecisionCase(names, cons, lhs, rhs)


# ---------------------------------------------------------------------------
# Argument-list specs and concrete shapes
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Wild:
  """``_``: the size is taken from the ``like`` argument."""
  size: int

  def render(self) -> str:
    return "_"


@dataclasses.dataclass(frozen=True)
class Rest:
  """``...``: the remaining sizes are taken from the ``like`` argument."""
  sizes: tuple[int, ...]

  def render(self) -> str:
    return "..."


Dim = Union[Expr, Wild, Rest]


@dataclasses.dataclass(frozen=True)
class SpecCase:
  """A polymorphic spec for a whole argument list, with constraints.

  ``anchors[v] = (arg, dim, k, c)`` says that ``args[arg].shape[dim]`` is
  ``k*v + c``, which determines ``v`` from the concrete sizes, so the case is
  solvable whatever order a solver works in. ``unsolvable`` names variables
  that appear only inside non-linear dimensions.
  """
  names: tuple[str, ...]
  args: tuple[tuple[Dim, ...], ...]
  constraints: Constraints
  anchors: tuple[tuple[str, tuple[int, int, int, int]], ...]
  unsolvable: tuple[str, ...] = ()

  def spec_strings(self) -> list[str]:
    return [", ".join(d.render() for d in arg) for arg in self.args]

  def like_shapes(self) -> list[tuple[int, ...]]:
    """Shapes for the ``like`` arguments: the sizes with every variable 1.

    A placeholder takes its size from there, and a dimension that is (or
    normalizes to) a constant must agree with it; symbolic ones ignore it.
    """
    return self.shapes({n: 1 for n in self.names})

  def shapes(self, env: Env) -> list[tuple[int, ...]]:
    """The concrete shapes for the values ``env``."""
    out = []
    for arg in self.args:
      shape: list[int] = []
      for d in arg:
        if isinstance(d, Wild):
          shape.append(d.size)
        elif isinstance(d, Rest):
          shape.extend(d.sizes)
        else:
          shape.append(d.evaluate(env))
      out.append(tuple(shape))
    return out

  def symbolic_positions(self) -> list[tuple[int, int, Expr]]:
    """``(arg, position in the concrete shape, dim)`` of every non-constant dimension."""
    out = []
    for i, arg in enumerate(self.args):
      j = 0
      for d in arg:
        if isinstance(d, Rest):
          j += len(d.sizes)
          continue
        if isinstance(d, Expr) and d.vars():
          out.append((i, j, d))
        j += 1
    return out

  def solve(self, shapes: Sequence[Sequence[int]]) -> tuple[dict[str, int] | None, str]:
    """The oracle: the environment the concrete ``shapes`` determine, or None and why not."""
    if [len(s) for s in shapes] != [len(s) for s in self.shapes({n: 1 for n in self.names})]:
      return None, "rank"
    env: dict[str, int] = {}
    for v, (i, j, k, c) in self.anchors:
      q, r = divmod(shapes[i][j] - c, k)
      if r:
        return None, f"remainder:{v}"
      env[v] = q
    for v in self.names:
      if env.get(v, 1) < 1:
        return None, f"var:{v}"
    for i, arg in enumerate(self.args):
      j = 0
      for d in arg:
        if isinstance(d, Rest):
          if tuple(shapes[i][j:j + len(d.sizes)]) != d.sizes:
            return None, f"dim:{i}:{j}"
          j += len(d.sizes)
          continue
        want = d.size if isinstance(d, Wild) else d.evaluate(env)
        if shapes[i][j] != want:
          return None, f"dim:{i}:{j}"
        j += 1
    bad = self.constraints.violated(env)
    if bad:
      return None, f"constraint:{bad[0]}"
    return env, "ok"

  def __repr__(self) -> str:
    return (f"SpecCase(specs={self.spec_strings()!r}, "
            f"constraints={self.constraints.strings()!r})")

  def _repr_pretty_(self, p, cycle) -> None:  # how hypothesis prints a counterexample
    p.text(repr(self))


MAX_ELEMENTS = 4096


def _place(draw, args: list[list[Dim]], dim: Dim) -> tuple[int, int]:
  i = draw(st.integers(0, len(args) - 1))
  j = draw(st.integers(0, len(args[i])))
  args[i].insert(j, dim)
  return i, j


@st.composite
def spec_cases(draw, *, solvable: bool = True, max_args: int = 3,
               with_constraints: bool = True) -> SpecCase:
  """Polymorphic specs for an argument list.

  Each variable gets an anchor ``k*v + c``; other dimensions are constants,
  ``_``, repeated variables, derived non-negative expressions (``2*b + 1``,
  ``a*b``, ``max(a, c + 1)``, ``floordiv(b, 2)``), and optionally a trailing
  ``...``. With ``solvable=False`` one more variable appears only inside
  non-linear dimensions (``v^2``, ``v*w``, ``mod(v, 3)``, ...).
  """
  names = draw(var_sets(1, 3))
  n_args = draw(st.integers(1, max_args))
  args: list[list[Dim]] = [[] for _ in range(n_args)]
  placed: list[tuple[str, tuple[int, int], int, int]] = []
  for v in names:
    k = draw(st.sampled_from((1, 1, 2, 3)))
    c = draw(st.integers(0, 2)) if draw(st.booleans()) else 0
    dim = linear(k, v, c)
    placed.append((v, _place(draw, args, dim), k, c))
  extras = draw(st.lists(st.one_of(
      st.integers(0, 4).map(const_expr),
      st.integers(1, 4).map(Wild),
      st.sampled_from(names).map(var_expr),
      nonneg_exprs(names),
  ), max_size=3))
  for d in extras:
    _place(draw, args, d)
  unsolvable: tuple[str, ...] = ()
  if not solvable:
    hidden = next(n for n in VAR_POOL if n not in names)
    shape_of = draw(st.sampled_from(("pow", "mul", "mod", "floordiv", "max")))
    w = draw(st.sampled_from(names))
    h = Var(hidden)
    dim = {"pow": expr_of((h, 2)),
           "mul": expr_of(h, Var(w)),
           "mod": expr_of(Op("mod", var_expr(hidden), const_expr(3))),
           "floordiv": expr_of(Op("floordiv", var_expr(hidden), const_expr(2))),
           "max": expr_of(Op("max", var_expr(hidden), var_expr(w)))}[shape_of]
    _place(draw, args, dim)
    unsolvable = (hidden,)
    names = tuple(sorted(names + (hidden,)))
  if draw(st.booleans()):
    i = draw(st.integers(0, n_args - 1))
    args[i].append(Rest(tuple(draw(st.lists(st.integers(1, 3), max_size=2)))))
  cons = NO_CONSTRAINTS
  if with_constraints and solvable and draw(st.booleans()):
    solved = tuple(n for n in names if n not in unsolvable)
    cons = draw(constraint_sets(solved, max_equalities=0, max_inequalities=2,
                                exprs_for=lambda ns: exprs(ns, max_depth=1, max_terms=2,
                                                           max_factors=1, max_exponent=1)))
  # Anchors: where each variable's k*v + c sits in the concrete shape.
  frozen_args = tuple(tuple(a) for a in args)
  anchors = []
  for v, _, k, c in placed:
    dim = linear(k, v, c)
    for i, arg in enumerate(frozen_args):
      j = 0
      hit = None
      for d in arg:
        if isinstance(d, Rest):
          j += len(d.sizes)
          continue
        if d is dim or d == dim:
          hit = j
          break
        j += 1
      if hit is not None:
        anchors.append((v, (i, hit, k, c)))
        break
  return SpecCase(names, frozen_args, cons, tuple(anchors), unsolvable)


def fits(case: SpecCase, env: Env) -> bool:
  """Every concrete size is >= 0 and every array small."""
  for shape in case.shapes(env):
    n = 1
    for s in shape:
      if s < 0:
        return False
      n *= s
    if n > MAX_ELEMENTS:
      return False
  return True


@st.composite
def spec_envs(draw, case: SpecCase, *, satisfying: bool = True, max_value: int = 5) -> dict[str, int]:
  """Values for ``case``'s variables giving small valid shapes; on or off the constraints."""
  env = {n: draw(st.integers(1, max_value)) for n in case.names}
  assume(fits(case, env))
  assume(case.constraints.holds(env) == satisfying)
  return env


@dataclasses.dataclass(frozen=True)
class Violation:
  """Concrete shapes that do not satisfy a spec, and the kind of fault put in."""
  kind: str  # "constraint", "variable", "dimension"
  shapes: tuple[tuple[int, ...], ...]
  env: tuple[tuple[str, int], ...]


@st.composite
def violations(draw, case: SpecCase) -> Violation:
  """Shapes that break ``case``: an explicit constraint, ``v >= 1``, or one symbolic size."""
  kinds = ["dimension", "variable"] + (["constraint"] if case.constraints.inequalities else [])
  kind = draw(st.sampled_from(kinds))
  if kind == "constraint":
    env = draw(spec_envs(case, satisfying=False))
    shapes = case.shapes(env)
  elif kind == "variable":
    env = draw(spec_envs(case, satisfying=True))
    v = draw(st.sampled_from(case.names))
    env = {**env, v: 0}
    assume(fits(case, env))
    shapes = case.shapes(env)
  else:
    env = draw(spec_envs(case, satisfying=True))
    positions = case.symbolic_positions()
    assume(positions)
    i, j, _ = draw(st.sampled_from(positions))
    shapes = [list(s) for s in case.shapes(env)]
    delta = draw(st.sampled_from((1, -1)))
    assume(shapes[i][j] + delta >= 0)
    shapes[i][j] += delta
    shapes = [tuple(s) for s in shapes]
  solved, _ = case.solve(shapes)
  assume(solved is None)
  return Violation(kind, tuple(tuple(s) for s in shapes), tuple(sorted(env.items())))


# ---------------------------------------------------------------------------
# Implementations under test
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShapesImpl:
  """One implementation of the public symbolic-shape API: ``jax.export`` or ``jaxport``."""
  name: str
  load: Callable[[], Any]

  @property
  def api(self) -> Any:
    return self.load()

  def scope(self, constraints: Sequence[str] = ()) -> Any:
    return self.api.SymbolicScope(list(constraints))

  def parse(self, spec: str, scope: Any = None, like: Any = None) -> tuple[Any, ...]:
    return self.api.symbolic_shape(spec, scope=scope, like=like)

  def args_specs(self, case: SpecCase, scope: Any, dtype: Any = "float32") -> list[Any]:
    """One ShapeDtypeStruct per argument of ``case``, all in ``scope``, by ``symbolic_args_specs``."""
    import jax
    like = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape in case.like_shapes())
    return list(self.api.symbolic_args_specs(like, case.spec_strings(), scope=scope))

  def export(self, fun_jit: Callable[..., Any], specs: Sequence[Any]) -> Any:
    return self.api.export(fun_jit)(*specs)

  def is_symbolic_dim(self, d: Any) -> bool:
    return self.api.is_symbolic_dim(d)

  def __repr__(self) -> str:
    return self.name


def _load_jax() -> Any:
  from jax import export
  return export


def _load_jaxport() -> Any:
  import jaxport
  return jaxport


JAX = ShapesImpl("jax.export", _load_jax)
JAXPORT = ShapesImpl("jaxport", _load_jaxport)
IMPLS = (JAX, JAXPORT)


def is_inconclusive(e: BaseException) -> bool:
  """True for either implementation's InconclusiveDimensionOperation."""
  return any(c.__name__ == "InconclusiveDimensionOperation" for c in type(e).__mro__)


def error_chain_text(e: BaseException) -> str:
  """The messages of ``e`` and its causes, for errors re-raised by compilation."""
  out, seen = [], set()
  cur: BaseException | None = e
  while cur is not None and id(cur) not in seen:
    seen.add(id(cur))
    out.append(str(cur))
    cur = cur.__cause__ or cur.__context__
  return "\n".join(out)


SHAPE_ASSERTION_PREFIXES = (
    "Input shapes do not match the polymorphic shapes specification.",
    "Input shapes do not match the symbolic shape constraint",
)

_INCONSISTENT = re.compile(
    r"Found inconsistency between dimension size (args|kwargs)\[(\d+)\]\.shape\[(\d+)\] "
    r"\(= (-?\d+)\) and the specification '([^']*)' \(= (-?\d+)\)")
_REMAINDER = re.compile(r"Division had remainder (-?\d+) when computing the value of '(\w+)'")
_VAR_GE_1 = re.compile(r"Expected value >= 1 for dimension variable '(\w+)'")
_CONSTRAINT = re.compile(
    r"Input shapes do not match the symbolic shape constraint (.*?)\. Expected '(.*?)' to be "
    r"(greater or equal to|equal to) 0, but found (-?\d+)")


def explain_shape_assertion(message: str, shapes: Sequence[Sequence[int]],
                            env: Env) -> str | None:
  """Checks that a shape-assertion message names something that is really violated.

  Returns None when the message is one of the documented forms and its
  numbers agree with ``shapes`` (and, for constraints and variables, with
  ``env``, the values the concrete sizes were built from); otherwise a
  sentence saying what is wrong with it.
  """
  if not any(p in message for p in SHAPE_ASSERTION_PREFIXES):
    return f"not a documented shape-assertion message: {message[:300]!r}"
  if m := _INCONSISTENT.search(message):
    i, j, got, want = int(m[2]), int(m[3]), int(m[4]), int(m[6])
    if m[1] == "args" and (i >= len(shapes) or j >= len(shapes[i])):
      return f"names args[{i}].shape[{j}], which does not exist"
    if m[1] == "args" and shapes[i][j] != got:
      return f"says args[{i}].shape[{j}] is {got} but it is {shapes[i][j]}"
    if got == want:
      return f"reports an inconsistency between equal sizes {got}"
    return None
  if m := _REMAINDER.search(message):
    return None if int(m[1]) != 0 else "reports a division remainder of 0"
  if m := _VAR_GE_1.search(message):
    return None  # the solved value depends on the solve order; the form is documented
  if m := _CONSTRAINT.search(message):
    try:
      value = int(m[4])
    except ValueError:
      return f"constraint message without a value: {message[:200]!r}"
    if m[3].startswith("greater") and value >= 0:
      return f"reports a >= constraint as violated with difference {value} >= 0"
    if m[3].startswith("equal") and value == 0:
      return "reports an == constraint as violated with difference 0"
    return None
  return f"message of an undocumented form: {message[:300]!r}"


def assertion_kind(message: str) -> str:
  """The kind of a shape error: ``inconsistency``, ``remainder``, ``variable``,
  ``constraint``, ``unsolvable``, ``unsatisfiable`` or ``other``."""
  for kind, pattern in (("inconsistency", _INCONSISTENT), ("remainder", _REMAINDER),
                        ("variable", _VAR_GE_1), ("constraint", _CONSTRAINT)):
    if pattern.search(message):
      return kind
  if "Cannot solve for values of dimension variables" in message:
    return "unsolvable"
  if "nsatisfiable" in message:
    return "unsatisfiable"
  return "other"


def spec_summary(case: SpecCase, env: Env | None = None,
                 shapes: Iterable[Sequence[int]] | None = None) -> str:
  """A few lines that reproduce a case by hand, for ``hypothesis.note``."""
  lines = [f"specs = {case.spec_strings()!r}",
           f"constraints = {case.constraints.strings()!r}",
           f"like shapes = {case.like_shapes()!r}"]
  if env is not None:
    lines.append(f"values = {dict(env)!r}")
  if shapes is not None:
    lines.append(f"concrete shapes = {[tuple(s) for s in shapes]!r}")
  return "\n".join(lines)


# ---------------------------------------------------------------------------
# Exporting and calling a spec case
# ---------------------------------------------------------------------------

def probe_function(dims: Sequence[Any]) -> Callable[..., Any]:
  """A function returning ``dims`` as int32 values and a weighted sum of its arguments.

  Exported with the symbolic variables as ``dims``, it reports the values the
  module solved; jitted with ints, it is the reference result.
  """
  import jax.numpy as jnp

  def probe(*args):
    values = (jnp.stack([jnp.asarray(d, jnp.int32) for d in dims]) if dims
              else jnp.zeros((0,), jnp.int32))
    total = jnp.zeros((), jnp.float32)
    for i, x in enumerate(args):
      total = total + (i + 1) * jnp.sum(jnp.sin(x))
    return values, total
  return probe


def solved_names(case: SpecCase) -> list[str]:
  return [n for n in case.names if n not in case.unsolvable]


def export_case(impl: ShapesImpl, case: SpecCase) -> Any:
  """Exports :func:`probe_function` over ``case``'s variables with ``impl``."""
  import jax
  scope = impl.scope(case.constraints.strings())
  specs = impl.args_specs(case, scope)
  names = solved_names(case)
  dims = impl.parse(", ".join(names), scope=scope) if names else ()
  return impl.export(jax.jit(probe_function(dims)), specs)


def concrete_args(shapes: Sequence[Sequence[int]]) -> list[Any]:
  import numpy as np
  return [(np.arange(int(np.prod(s)), dtype=np.float32) * 0.01).reshape(s) for s in shapes]


def reference_result(case: SpecCase, env: Env, shapes: Sequence[Sequence[int]]) -> Any:
  """``jax.jit`` of the probe with the values of ``env`` in place of the variables."""
  import jax
  return jax.jit(probe_function([env[n] for n in solved_names(case)]))(*concrete_args(shapes))


def call_through_module(exported: Any, args: Sequence[Any]) -> Any:
  """Runs ``exported``'s serialized module with the caller's static shape check turned off.

  The blob is read back by ``jax.export.deserialize`` and called under
  ``jax.jit`` while jax's static discharge of the shape constraints is a
  no-op, so only the ``shape_assertion`` calls in the module (evaluated by
  shape refinement at compile time) can refuse the shapes.
  """
  import jax
  import pytest
  no_check = static_check_off()
  if not no_check.on():
    # Called with jax's check on, the module's own assertions would go untested: fail (a
    # pytest outcome, which the callers' ``except Exception`` does not take for a refusal).
    pytest.fail(f"cannot run a module with only its own shape_assertion checks: "
                f"{no_check.status.reason}", pytrace=False)
  try:
    reread = jax.export.deserialize(exported.serialize())
    return jax.jit(reread.call)(*args)
  finally:
    no_check.off()


# The signatures of jax's ``ShapeConstraints.check_statically`` that turning it off was
# written for: one, the same in each release from jax 0.9.2 to 0.12.0.1 (0.9.2,
# 0.10.0-0.10.2, 0.11.0-0.11.2, 0.12.0, 0.12.0.1).
CHECK_STATICALLY_SIGNATURES = ("(self, eval)",)


def _no_static_check(self: Any, eval: Any) -> None:  # noqa: A002  (jax's parameter name)
  """jax's static discharge of the shape constraints, doing nothing."""


@functools.cache
def static_check_off() -> Replacement:
  """The :class:`jaxport.harness._replacement.Replacement` that turns jax's static shape
  check off while on (made on first use: this module imports jax lazily)."""
  from jax._src.export import shape_poly
  from jaxport.harness._replacement import Replacement
  return Replacement(shape_poly.ShapeConstraints, "check_statically", _no_static_check,
                     written_for=CHECK_STATICALLY_SIGNATURES,
                     what="the static shape check bypass")


# Exceptions that are internal crashes, not answers: the reference has a few
# (see tests/regression/test_shape_regressions.py); jaxport must have none.
INTERNAL_CRASHES = (AssertionError, OverflowError, ZeroDivisionError, TypeError, IndexError,
                    KeyError, AttributeError, RecursionError)
