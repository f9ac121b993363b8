"""Costly symbolic shapes: jaxport against jax.export, and which jaxport budget refuses what.

Run by hand: ``python benchmarks/bench_symbolic_budgets.py [--timeout S] [--only NAME]``.
Each input is built and timed in a fresh child process per side (jaxport, then jax,
then jaxport again; the best jaxport time is kept), so that a side that hangs is cut
at ``--timeout`` seconds without stopping the run. One line per input: seconds for
each side, the ratio jaxport/jax (below 1.0 means jaxport is faster), and what each
side answered: done, the jaxport budget (``jaxport._limits.NAME``) that refused it, or
jax's error.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import string
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
from _stopping import unwind_on_terminate  # noqa: E402
from _symbolic_inputs import blob_of_shape, chained, nested_max  # noqa: E402


def short_names(n: int) -> list[str]:
  """``n`` three-letter variable names (a product of 9,000 fits in a spec)."""
  names = ("".join(p) for p in itertools.product(string.ascii_lowercase, repeat=3))
  return [x for x in names if x not in ("max", "min", "mod")][:n]


def _scope_of(mod, n: int):
  def run():
    scope = mod.SymbolicScope(chained(n))
    mod.symbolic_shape(",".join(f"a{i}" for i in range(n + 1)), scope=scope)
    return scope
  return run


def _first_comparison(mod, n: int):
  """Building the scope and its first comparison: where jax does its work (it is lazy)."""
  def run():
    dims = mod.symbolic_shape(",".join(f"a{i}" for i in range(n + 1)),
                              scope=mod.SymbolicScope(chained(n)))
    return dims[-1] >= 1
  return run


def _nested(mod, dims: int, depth: int, distinct: bool):
  spec = ",".join(nested_max(i, depth, distinct) for i in range(dims))
  return lambda: mod.symbolic_shape(spec)


def _product_spec(mod, n: int):
  spec = "*".join(short_names(n))
  return lambda: mod.symbolic_shape(spec)


def _product_reduce(mod, n: int):
  dims = mod.symbolic_shape(",".join(short_names(n)))

  def run():
    acc = dims[0]
    for d in dims[1:]:
      acc = acc * d
    return acc
  return run


def _deserialize(mod, blob_path: str):
  data = pathlib.Path(blob_path).read_bytes()
  if mod.__name__ == "jax.export":
    return lambda: mod.deserialize(bytearray(data))
  return lambda: mod.deserialize(data)


INPUTS = {
    "scope: 20 chained equalities": lambda mod: _scope_of(mod, 20),
    "scope: 60 chained equalities": lambda mod: _scope_of(mod, 60),
    "scope: 150 chained equalities": lambda mod: _scope_of(mod, 150),
    "scope + first comparison: 60 chained": lambda mod: _first_comparison(mod, 60),
    "spec: 30 dims, max nested 60 over 5 vars": lambda mod: _nested(mod, 30, 60, False),
    "spec: 1 dim, max nested 40 over distinct vars": lambda mod: _nested(mod, 1, 40, True),
    "spec: 30 dims, max nested 60 over distinct vars": lambda mod: _nested(mod, 30, 60, True),
    "spec: product of 1,000": lambda mod: _product_spec(mod, 1000),
    "spec: product of 3,000": lambda mod: _product_spec(mod, 3000),
    "spec: product of 9,000": lambda mod: _product_spec(mod, 9000),
    "arithmetic: product of 3,000 one by one": lambda mod: _product_reduce(mod, 3000),
    "arithmetic: product of 9,000 one by one": lambda mod: _product_reduce(mod, 9000),
}
BLOBS = {
    "deserialize: 30 dims, max nested 60 over 5 vars": ([nested_max(i, 60, False)
                                                         for i in range(30)], []),
    "deserialize: 30 dims, max nested 60 over distinct vars": ([nested_max(i, 60, True)
                                                               for i in range(30)], []),
    "deserialize: 60 chained equalities": ([f"a{i}" for i in range(61)], chained(60)),
    "deserialize: 150 chained equalities": ([f"a{i}" for i in range(151)], chained(150)),
}


def _child(name: str, side: str, blob_path: str | None) -> None:
  """Times one input on one side; prints a JSON line."""
  import jax.export

  import jaxport
  mod = jaxport if side == "jaxport" else jax.export
  run = _deserialize(mod, blob_path) if blob_path else INPUTS[name](mod)
  t0 = time.perf_counter()
  try:
    run()
    answer = "done"
  except Exception as e:  # what each side answers is the measurement
    text = str(e)
    budget = next((w.split("=")[0].strip() for w in text.split("jaxport._limits.")[1:]), None)
    answer = f"refused by {budget}" if budget else f"{type(e).__name__}"
  print(json.dumps({"seconds": time.perf_counter() - t0, "answer": answer}))


def _measure(name: str, side: str, blob_path: str | None, timeout: float) -> tuple[float, str]:
  cmd = [sys.executable, __file__, "--child", name, side] + ([blob_path] if blob_path else [])
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
  try:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
  except subprocess.TimeoutExpired:
    return float("inf"), f"over {timeout:.0f} s"
  lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
  if not lines:
    return float("nan"), f"crashed: {done.stderr.strip().splitlines()[-1:]}"
  result = json.loads(lines[-1])
  return result["seconds"], result["answer"]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--timeout", type=float, default=120.0,
                      help="seconds one side may take on one input (child included)")
  parser.add_argument("--only", default=None, help="only inputs whose name contains this")
  parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    _child(args.child[0], args.child[1], args.child[2] if len(args.child) > 2 else None)
    return
  unwind_on_terminate()
  names = [n for n in [*INPUTS, *BLOBS] if args.only is None or args.only in n]
  print(f"{'input':52} {'jaxport s':>10} {'jax s':>10} {'ratio':>7}  jaxport / jax answered")
  with tempfile.TemporaryDirectory() as tmp:
    for name in names:
      blob_path = None
      if name in BLOBS:
        blob_path = os.path.join(tmp, "blob.bin")
        pathlib.Path(blob_path).write_bytes(blob_of_shape(*BLOBS[name]))
      ours1, answer = _measure(name, "jaxport", blob_path, args.timeout)
      theirs, jax_answer = _measure(name, "jax", blob_path, args.timeout)
      ours2, _ = _measure(name, "jaxport", blob_path, args.timeout)
      ours = min(ours1, ours2)
      ratio = ours / theirs if theirs not in (0.0, float("inf")) else float("nan")
      shown_theirs = f">{args.timeout:.0f}" if theirs == float("inf") else f"{theirs:.3f}"
      print(f"{name:52} {ours:10.3f} {shown_theirs:>10} {ratio:7.2f}  {answer} / {jax_answer}",
            flush=True)


if __name__ == "__main__":
  main()
