"""Throughput of jaxport's symbolic shapes against jax's shape_poly, on the same inputs.

Run by hand: ``python benchmarks/bench_shapes.py [--repeat N]``. Prints one line
per workload with operations per second for each side and the ratio
jaxport/jax (above 1.0 means jaxport is faster).
"""

from __future__ import annotations

import argparse
import random
import time

import jax
import jax.export
import numpy as np
from jax import tree_util

import jaxport
from jaxport.shapes import _bridge

SPECS = [
    "b, 4", "2*h + 1, w", "a, a + b, 3*c", "batch, seq, 4*heads", "floordiv(n, 2), mod(n, 3) + 1",
    "max(a, b), min(a, 4)", "a^2*b - a + 7, b", "3*a*b - 2*a + 5", "n, 2*n - 1, n + m",
]
CONSTRAINTS = ["a >= b", "c >= a + 2", "b >= 2"]


def _exprs(mod, seed=0):
  rng = random.Random(seed)
  scope = mod.SymbolicScope(CONSTRAINTS)
  a, b, c = mod.symbolic_shape("a, b, c", scope=scope)
  base = [a, b, c, 2 * a + 1, a * b, a - b, c - a, a // 2, b % 3]
  return [(rng.choice(base), rng.choice(base), rng.randint(1, 5)) for _ in range(200)]


def _time(fn, repeat):
  best = float("inf")
  for _ in range(repeat):
    t0 = time.perf_counter()
    n = fn()
    best = min(best, time.perf_counter() - t0)
  return n / best


def bench_parse(mod):
  def run():
    for s in SPECS * 20:
      mod.symbolic_shape(s)
    return len(SPECS) * 20
  return run


def bench_arith(mod):
  triples = _exprs(mod)

  def run():
    for x, y, k in triples:
      _ = x + y, x - y, x * k, (x * k) // k, x * y, (x + k) % k
    return len(triples) * 6
  return run


def bench_compare(mod):
  triples = _exprs(mod, seed=1)
  inconclusive = jax.errors.InconclusiveDimensionOperation

  def run():
    for x, y, k in triples:
      for lhs, rhs in ((x, y), (x, k), (x + k, y)):
        try:
          _ = lhs >= rhs
        except inconclusive:
          pass
      scope = getattr(x, "scope", None)
      if scope is not None:
        scope._bounds_cache.clear()
    return len(triples) * 3
  return run


def _jax_solver():
  from jax._src.export import shape_poly
  return shape_poly


def bench_solve(mod):
  specs = ["b, 4", "2*h + 1, w", "a, a + b", "3*n - 2, n + m"]
  sizes = [(6, 4), (7, 5), (3, 8), (10, 9)]
  tree = tree_util.tree_structure(((0,), {}))
  avals = [jax.core.ShapedArray(mod.symbolic_shape(s), np.float32) for s in specs]
  actual = [jax.core.ShapedArray(s, np.float32) for s in sizes]

  if mod is jaxport:
    def solve_one(aval, act):
      _bridge._solve.cache_clear()
      return _bridge.solve_dim_vars_for_call([aval], tree, [act])
  else:
    poly = _jax_solver()

    def solve_one(aval, act):
      poly.solve_dim_vars.cache_clear()
      solution, constraints, synth = poly.solve_dim_vars((aval,), tree)
      env = {name: act.shape[d] for name, _, d in synth}
      ev = poly.ShapeEvaluator(env)
      constraints.check_statically(ev)
      return [ev.evaluate(solution[v]) for v in poly.all_dim_vars((aval,))]

  def run():
    for _ in range(25):
      for aval, act in zip(avals, actual):
        solve_one(aval, act)
    return 25 * len(avals)
  return run


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--repeat", type=int, default=5)
  args = parser.parse_args()
  print(f"{'workload':<12} {'jaxport ops/s':>14} {'jax ops/s':>12} {'ratio':>7}")
  for name, make in [("parse", bench_parse), ("arithmetic", bench_arith),
                     ("compare", bench_compare), ("solve", bench_solve)]:
    ours = _time(make(jaxport), args.repeat)
    theirs = _time(make(jax.export), args.repeat)
    print(f"{name:<12} {ours:>14,.0f} {theirs:>12,.0f} {ours / theirs:>7.2f}")


if __name__ == "__main__":
  main()
