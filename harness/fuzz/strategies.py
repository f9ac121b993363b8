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

The trees and their text reader are ``shape_trees``'s; the implementations under
test and the exporting and calling of a spec case are ``shape_impls``'s. Here:
strategies of variables, expressions, constraint sets, environments, decision
cases, argument-list specs, their concrete shapes and violations.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any, Union

from hypothesis import assume, strategies as st

from harness.fuzz.shape_trees import (OPERATIONS, VAR_POOL, Const, Env, Expr, Factor, Op, Term,
                                      Var, add, const_expr, expr_of, linear, var_expr)


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
