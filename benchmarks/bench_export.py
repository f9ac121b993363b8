"""Export time of jaxport.export against jax.export on the same functions, in one run.

Run by hand: ``python benchmarks/bench_export.py [--reps N]``. Each repetition
builds a fresh jitted function (so tracing and lowering are not served from
jax's caches) and exports it with both libraries in alternating order. Prints
the median and the minimum per library and their ratios jaxport/jax; the
target is <= 1.1 on the median. The minimum is the steadier figure on a busy
machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxport
from _timing import TARGET_RATIO, alternate, mlp, ratios

F32 = np.float32


def _cases():
  x = jax.ShapeDtypeStruct((128,), F32)
  params = [(jax.ShapeDtypeStruct((64, 64), F32), jax.ShapeDtypeStruct((64,), F32))] * 4
  batch = jax.ShapeDtypeStruct((32, 64), F32)
  spd = jax.ShapeDtypeStruct((16, 16), F32)
  cases = {
      "elementwise": (lambda: (lambda x: jnp.sin(x) * 2 + jnp.cos(x)), (x,), {}),
      "mlp_4_layers": (lambda: mlp, (params, batch), {}),
      "cholesky_qr_eigh": (lambda: (lambda a: (jnp.linalg.cholesky(a), jnp.linalg.qr(a),
                                              jnp.linalg.eigh(a))), (spd,), {}),
      "multi_platform": (lambda: (lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)),
                         (x,), {"platforms": ("cpu", "cuda", "tpu")}),
  }
  try:
    sym = jaxport.symbolic_shape("b, 64")
    sym_jax = jax.export.symbolic_shape("b, 64")
  except Exception as err:  # symbolic shapes may be unavailable in a partial checkout
    print(f"(skipping the symbolic case: {type(err).__name__}: {err})")
  else:
    cases["symbolic_batch"] = (lambda: mlp, None, {}, (params, jax.ShapeDtypeStruct(sym, F32)),
                               (params, jax.ShapeDtypeStruct(sym_jax, F32)))
  return cases


def _fresh(make):
  fun = make()
  # A new function object per repetition, so jit's tracing cache cannot hit.
  return jax.jit(lambda *a, **k: fun(*a, **k))


def _time_once(module, make, args, opts) -> float:
  jitted = _fresh(make)
  start = time.perf_counter()
  module.export(jitted, **opts)(*args)
  return time.perf_counter() - start


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--reps", type=int, default=15)
  reps = parser.parse_args().reps
  print(f"{'case':<20} {'jaxport ms':>11} {'jax ms':>9} {'ratio':>7} {'min ratio':>10}")
  worst = 0.0
  for name, case in _cases().items():
    make, args, opts = case[:3]
    ours_args, jax_args = (args, args) if args is not None else case[3:]
    for module, a in ((jaxport, ours_args), (jax.export, jax_args)):  # warm up both
      _time_once(module, make, a, opts)
    ours, theirs = alternate(reps, lambda: _time_once(jaxport, make, ours_args, opts),
                             lambda: _time_once(jax.export, make, jax_args, opts))
    o, t = statistics.median(ours), statistics.median(theirs)
    ratio, min_ratio = ratios(ours, theirs)
    worst = max(worst, ratio)
    print(f"{name:<20} {o * 1e3:>11.2f} {t * 1e3:>9.2f} {ratio:>7.3f} {min_ratio:>10.3f}")
  verdict = "meets" if worst <= TARGET_RATIO else "misses"
  print(f"worst ratio {worst:.3f}: {verdict} the target of {TARGET_RATIO}")


if __name__ == "__main__":
  main()
