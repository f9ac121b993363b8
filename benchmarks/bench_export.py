"""Export time of jaxport.export against jax.export on the same functions, in one run.

Run by hand: ``python benchmarks/bench_export.py [--rounds N]`` (N >= 15,
default 21). Each round exports every function once with each library, the
order alternating between rounds, and each export starts from fresh objects:

- a new jitted function (so jit's tracing and lowering caches cannot hit);
- new argument specs; for the symbolic case a new ``symbolic_shape`` call on
  each side, so a new scope whose bounds and decision memos start empty;
- jaxport's memos keyed by shapes or trees cleared (every ``functools``
  cache of ``jaxport.shapes``, ``jaxport.export`` and ``jaxport.calling``: the
  solution of the dimension variables ``shapes._bridge._solve`` and the
  argument paths ``shapes._bridge._flat_arg_paths``, which a structurally
  equal tree would hit). A fresh scope alone misses ``_solve`` (its key holds
  the scope's identity) but not ``_flat_arg_paths``, so the benchmark clears
  them, outside the timed region. What one export computes twice may still
  be served from a memo filled earlier in the same export. The caches of
  ``jaxport.custom_calls`` stay: they hold the stable-target table read once
  from its data file, which jax keeps as a module constant;
- a collected heap (``gc.collect()`` outside the timed region), so that an
  export does not pay for collecting the reference cycles the previous one
  left. jax.export leaves the MLIR contexts it made to the cycle collector,
  and on jaxlib releases that do not reuse contexts destroying one takes
  about a millisecond; what each export leaves behind is collected untimed,
  which favours the library that leaves more.

Prints per function the median export time of each library with its
interquartile range, the ratio of medians jaxport/jax and the interquartile
range of the per-round ratios (each round's two exports ran back to back).
The goal is a ratio of medians of at most 1.0 for every function.
``--clock cpu`` measures the process's CPU time instead of wall time: on a
machine shared with other work it leaves out the time the process waited
for a core, which wall time charges to whichever export was running.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxport
from _timing import alternate, mlp, quartiles

F32 = np.float32
GOAL = 1.0
MIN_ROUNDS = 15
_MEMO_PACKAGES = ("jaxport.shapes", "jaxport.export", "jaxport.calling")


def _params():
  return [(jax.ShapeDtypeStruct((64, 64), F32), jax.ShapeDtypeStruct((64,), F32))] * 4


def _symbolic_specs(module):
  """The symbolic case's specs, in a new scope of ``module`` (jaxport or jax.export)."""
  return (_params(), jax.ShapeDtypeStruct(module.symbolic_shape("b, 64"), F32))


def _cases() -> dict[str, tuple[Callable[[], Any], Callable[[Any], tuple], dict]]:
  """name -> (function factory, specs for a library, export options)."""
  vec = lambda module: (jax.ShapeDtypeStruct((128,), F32),)
  return {
      "elementwise": (lambda: (lambda x: jnp.sin(x) * 2 + jnp.cos(x)), vec, {}),
      "mlp_4_layers": (lambda: mlp, lambda module: (_params(), jax.ShapeDtypeStruct((32, 64), F32)),
                       {}),
      "cholesky_qr_eigh": (lambda: (lambda a: (jnp.linalg.cholesky(a), jnp.linalg.qr(a),
                                              jnp.linalg.eigh(a))),
                           lambda module: (jax.ShapeDtypeStruct((16, 16), F32),), {}),
      "multi_platform": (lambda: (lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)),
                         vec, {"platforms": ("cpu", "cuda", "tpu")}),
      "symbolic_batch": (lambda: mlp, _symbolic_specs, {}),
  }


def _jaxport_memos() -> list[Any]:
  """Every functools cache in jaxport's shapes, export and calling modules."""
  memos = []
  for name, mod in list(sys.modules.items()):
    if mod is None or not name.startswith(_MEMO_PACKAGES):
      continue
    for value in vars(mod).values():
      if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
        memos.append(value)
  return memos


_CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _time_once(module, make, specs, opts, memos, clock=time.perf_counter) -> float:
  """Seconds ``module.export`` takes on a fresh function and specs (the setup untimed)."""
  fun = make()
  jitted = jax.jit(lambda *a, **k: fun(*a, **k))  # a new function object: no jit cache hit
  args = specs(module)
  if module is jaxport:
    for memo in memos:
      memo.cache_clear()
  gc.collect()
  start = clock()
  module.export(jitted, **opts)(*args)
  return clock() - start


def _rounds(value: str) -> int:
  n = int(value)
  if n < MIN_ROUNDS:
    raise argparse.ArgumentTypeError(f"at least {MIN_ROUNDS} rounds, got {n}")
  return n


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", "--reps", type=_rounds, default=21,
                      help=f"alternating rounds per function (at least {MIN_ROUNDS})")
  parser.add_argument("--clock", choices=sorted(_CLOCKS), default="wall",
                      help="wall time (default) or the process's CPU time")
  options = parser.parse_args()
  rounds, clock = options.rounds, _CLOCKS[options.clock]
  print(f"jax {jax.__version__}, python {sys.version.split()[0]}, {rounds} rounds, "
        f"{options.clock} clock; times in ms as median [q1, q3]")
  print(f"{'function':<18} {'jaxport':>22} {'jax.export':>22} {'ratio':>6} "
        f"{'round ratios [q1, q3]':>22}")
  worst = 0.0
  for name, (make, specs, opts) in _cases().items():
    for module in (jaxport, jax.export):  # warm up both
      _time_once(module, make, specs, opts, _jaxport_memos())
    memos = _jaxport_memos()
    ours, theirs = alternate(rounds, lambda: _time_once(jaxport, make, specs, opts, memos, clock),
                             lambda: _time_once(jax.export, make, specs, opts, memos, clock))
    o1, o2, o3 = (q * 1e3 for q in quartiles(ours))
    t1, t2, t3 = (q * 1e3 for q in quartiles(theirs))
    r1, _, r3 = quartiles([a / b for a, b in zip(ours, theirs)])
    ratio = statistics.median(ours) / statistics.median(theirs)
    worst = max(worst, ratio)
    print(f"{name:<18} {o2:>8.2f} [{o1:>5.2f}, {o3:>5.2f}] {t2:>8.2f} [{t1:>5.2f}, {t3:>5.2f}] "
          f"{ratio:>6.3f} {'':>7}[{r1:.3f}, {r3:.3f}]")
  verdict = "meets" if worst <= GOAL else "misses"
  print(f"worst ratio of medians {worst:.3f}: {verdict} the goal of {GOAL}")


if __name__ == "__main__":
  main()
