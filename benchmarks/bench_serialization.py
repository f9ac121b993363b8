"""Serialize/deserialize time and blob size: jaxport vs jax.export on the same records.

Run by hand: ``python benchmarks/bench_serialization.py``. Targets: ratios of
time <= 1.0 (no slower) and blob size within 1%. jaxport's deserialize also
verifies the whole buffer before reading, which jax does not.
"""

from __future__ import annotations

import sys
import timeit

import jax
import jax.export
import jax.numpy as jnp

import jaxport
from jaxport.serde import _write


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
  import dataclasses
  with_vjp = dataclasses.replace(with_vjp, _get_vjp=lambda _: vjp)
  return {"small": (small, 0), "tree64": (tree, 0), "symbolic": (symbolic, 0),
          "vjp1": (with_vjp, 1)}


def _best(fn, number):
  return min(timeit.repeat(fn, number=number, repeat=5)) / number


def main() -> int:
  rows = []
  for name, (rec, order) in _records().items():
    number = 200
    jax_blob = rec.serialize(vjp_order=order)
    our_blob = _write.serialize(rec, vjp_order=order)
    t_ser_jax = _best(lambda: rec.serialize(vjp_order=order), number)
    t_ser_ours = _best(lambda: _write.serialize(rec, vjp_order=order), number)
    t_de_jax = _best(lambda: jax.export.deserialize(jax_blob), number)
    t_de_ours = _best(lambda: jaxport.deserialize(jax_blob), number)
    rows.append((name, t_ser_jax, t_ser_ours, t_de_jax, t_de_ours, len(jax_blob), len(our_blob)))
  print(f"{'record':<10} {'ser jax us':>10} {'ser ours':>9} {'ratio':>6} "
        f"{'de jax us':>10} {'de ours':>8} {'ratio':>6} {'size jax':>9} {'ours':>6} {'ratio':>7}")
  for name, sj, so, dj, do, zj, zo in rows:
    print(f"{name:<10} {sj * 1e6:10.1f} {so * 1e6:9.1f} {so / sj:6.2f} "
          f"{dj * 1e6:10.1f} {do * 1e6:8.1f} {do / dj:6.2f} {zj:9d} {zo:6d} {zo / zj:7.4f}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
