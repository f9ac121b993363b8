"""Serialize/deserialize time and blob size: jaxport vs jax.export on the same records.

Run by hand: ``python benchmarks/bench_serialization.py [--rounds N]``.
Targets: time ratios (jaxport / jax) <= 1.0 and blob size within 1%.

The machine this runs on may be busy, so each measurement alternates jax and
jaxport in rounds (order flipped every round) and reports the median time of
each and the median of the per-round ratios; the load average is printed
before and after. Both deserializers read jax's blob. jaxport also verifies
the whole buffer before building anything, which jax does not. ``vjp1+vjp``
also builds the nested VJP record, which both build only when ``vjp()`` is
called.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import timeit

import jax
import jax.export
import jax.numpy as jnp

import jaxport
from jaxport.serde import _write
from _timing import alternate


def _records():
  f32 = jax.ShapeDtypeStruct((128,), jnp.float32)
  small = jax.export.export(jax.jit(jnp.sin))(f32)
  tree = jax.export.export(jax.jit(lambda d: {k: v * 2 for k, v in d.items()}))(
      {f"w{i}": f32 for i in range(64)})
  scope = jax.export.SymbolicScope()
  poly = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 2*n", scope=scope), jnp.float32)
  symbolic = jax.export.export(jax.jit(lambda x: jnp.tanh(x) @ x.T))(poly)
  with_vjp = jax.export.export(jax.jit(lambda x: jnp.sum(jnp.sin(x))))(f32)
  vjp = with_vjp.vjp()
  with_vjp = dataclasses.replace(with_vjp, _get_vjp=lambda _: vjp)
  return {"small": (small, 0), "tree64": (tree, 0), "symbolic": (symbolic, 0),
          "vjp1": (with_vjp, 1)}


def _per_call(fn, number: int) -> float:
  return timeit.timeit(fn, number=number) / number


def _compare(theirs, ours, rounds: int) -> tuple[float, float, float]:
  """Median seconds per call of each, and the median of the per-round ratios."""
  _per_call(theirs, 5), _per_call(ours, 5)  # warm up
  number = max(1, int(0.02 / max(_per_call(theirs, 3), 1e-7)))
  t_theirs, t_ours = alternate(rounds, lambda: _per_call(theirs, number),
                               lambda: _per_call(ours, number))
  return (statistics.median(t_theirs), statistics.median(t_ours),
          statistics.median(b / a for a, b in zip(t_theirs, t_ours)))


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=15, help="alternating rounds per measurement")
  args = parser.parse_args(argv)
  print("load average before: %.2f %.2f %.2f" % os.getloadavg())
  rows = []
  for name, (rec, order) in _records().items():
    jax_blob = bytes(rec.serialize(vjp_order=order))
    our_blob = bytes(_write.serialize(rec, vjp_order=order))
    ser = _compare(lambda: rec.serialize(vjp_order=order),
                   lambda: _write.serialize(rec, vjp_order=order), args.rounds)
    de = _compare(lambda: jax.export.deserialize(jax_blob),
                  lambda: jaxport.deserialize(jax_blob), args.rounds)
    rows.append((name, ser, de, len(jax_blob), len(our_blob)))
    if order:
      de_vjp = _compare(lambda: jax.export.deserialize(jax_blob).vjp(),
                        lambda: jaxport.deserialize(jax_blob).vjp(), args.rounds)
      rows.append((name + "+vjp", None, de_vjp, None, None))
  print(f"{'record':<12} {'ser jax us':>10} {'ser ours':>9} {'ratio':>6} "
        f"{'de jax us':>10} {'de ours':>8} {'ratio':>6} {'size jax':>9} {'ours':>6} {'ratio':>7}")
  for name, ser, de, zj, zo in rows:
    ser_cols = (f"{ser[0] * 1e6:10.1f} {ser[1] * 1e6:9.1f} {ser[2]:6.2f}" if ser
                else f"{'':>10} {'':>9} {'':>6}")
    size_cols = f"{zj:9d} {zo:6d} {zo / zj:7.4f}" if zj else ""
    print(f"{name:<12} {ser_cols} {de[0] * 1e6:10.1f} {de[1] * 1e6:8.1f} {de[2]:6.2f} "
          f"{size_cols}")
  print("load average after: %.2f %.2f %.2f" % os.getloadavg())
  return 0


if __name__ == "__main__":
  sys.exit(main())
