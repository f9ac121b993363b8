"""Cost of jaxport.call against jax's own call of the same record, in one run.

Run by hand: ``python benchmarks/bench_call.py [--reps N]``. Two measures per
case, each with both libraries in alternating order:

- compile: trace, lower and compile a fresh function around the call under
  ``jax.jit`` each repetition, so jax's caches do not serve it;
- steady: the average time of repeated calls of one jitted wrapper.

Prints medians, the ratio of medians and the ratio of minimums jaxport/jax; the
target is <= 1.1. The minimum is the steadier figure on a busy machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.export
import jax.numpy as jnp
import numpy as np

import jaxport
from _timing import TARGET_RATIO, alternate, mlp, ratios



def _cases():
  rng = np.random.default_rng(0)
  params = [(rng.normal(size=(64, 64)).astype(np.float32), np.zeros(64, np.float32))] * 4
  batch = rng.normal(size=(32, 64)).astype(np.float32)
  x = rng.normal(size=(128,)).astype(np.float32)
  sym = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 64"), np.float32)
  return {
      "elementwise": (jax.export.export(jax.jit(lambda v: jnp.sin(v) * 2 + jnp.cos(v)))(x), (x,)),
      "mlp_4_layers": (jax.export.export(jax.jit(mlp))(params, batch), (params, batch)),
      "symbolic_batch": (jax.export.export(jax.jit(lambda v: jnp.tanh(v).sum(0)))(sym), (batch,)),
  }


def _compile_time(make_fn, args) -> float:
  fn = make_fn()
  start = time.perf_counter()
  jax.block_until_ready(jax.jit(fn)(*args))
  return time.perf_counter() - start


def _steady_time(make_fn, args, calls: int = 1000) -> float:
  jitted = jax.jit(make_fn())
  jax.block_until_ready(jitted(*args))
  start = time.perf_counter()
  for _ in range(calls):
    out = jitted(*args)
  jax.block_until_ready(out)
  return (time.perf_counter() - start) / calls


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--reps", type=int, default=15)
  reps = parser.parse_args().reps
  print(f"{'case':16} {'measure':9} {'jax ms':>9} {'jaxport ms':>11} {'ratio':>7} "
        f"{'min ratio':>9}")
  for name, (exp, args) in _cases().items():
    # Factories: each call makes a new function, so jit caches start empty.
    impls = {"jax": lambda e=exp: (lambda *a: e.call(*a)),
             "jaxport": lambda e=exp: (lambda *a: jaxport.call(e)(*a))}
    for measure, timer in (("compile", _compile_time), ("steady", _steady_time)):
      theirs, ours = alternate(reps, lambda t=timer: t(impls["jax"], args),
                               lambda t=timer: t(impls["jaxport"], args))
      jax_ms, ours_ms = statistics.median(theirs) * 1e3, statistics.median(ours) * 1e3
      ratio, min_ratio = ratios(ours, theirs)
      flag = "" if min(ratio, min_ratio) <= TARGET_RATIO else "  over target"
      print(f"{name:16} {measure:9} {jax_ms:9.3f} {ours_ms:11.3f} {ratio:7.2f} "
            f"{min_ratio:9.2f}{flag}")


if __name__ == "__main__":
  main()
