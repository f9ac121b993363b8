"""Symbolic-shape inputs that cost much work for their size, shared by the hostile tests and
``benchmarks/bench_symbolic_budgets.py``: chained equalities, nested ``max``, and blobs
carrying them."""

from __future__ import annotations


def chained(n: int) -> list[str]:
  """``a0 == a1 + 1``, ``a1 == a2 + 1``, ...: every constraint shares a term with the next."""
  return [f"a{i} == a{i + 1} + 1" for i in range(n)]


def nested_max(i: int, depth: int, distinct: bool) -> str:
  """Dimension ``i`` as ``max`` nested ``depth`` deep, over 5 shared variables or over
  ``depth`` variables of its own."""
  e = f"a{i}"
  for j in range(depth):
    v = f"v{i}_{j}" if distinct else f"b{j % 5}"
    e = f"max({e}, {v})" if j % 2 else f"max({v}, {e})"
  return e


def blob_of_shape(dims: list[str], constraints: list[str]) -> bytes:
  """A jaxport blob whose one input has the shape ``dims`` in a scope with ``constraints``:
  a stand-in of the same lengths is exported and its strings replaced in the bytes, so that
  inputs too costly to export can still be written."""
  import jax
  import numpy as np

  import jaxport
  stand_ins = [d if d.isidentifier() else (f"q{i:04d}" + "z" * len(d))[:len(d)]
               for i, d in enumerate(dims)]
  placeholder = [f"{stand_ins[0]} >= -{i}".ljust(len(c)) for i, c in enumerate(constraints)]
  scope = jaxport.SymbolicScope(placeholder)
  shape = jaxport.symbolic_shape(",".join(stand_ins), scope=scope)
  exp = jaxport.export(jax.jit(lambda x: x * 2.0))(jax.ShapeDtypeStruct(shape, np.float32))
  blob = bytes(exp.serialize())
  for old, new in zip(stand_ins + placeholder, dims + constraints):
    if old.encode() not in blob:
      raise ValueError(f"the stand-in {old!r} is not in the exported blob")
    blob = blob.replace(old.encode(), new.encode())
  return blob
