"""Timing helpers shared by the benchmarks: alternating measurements and their ratios.

Each benchmark measures jaxport and jax.export in the same run, alternating
which goes first so warm caches and a busy machine favour neither.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import jax.numpy as jnp

TARGET_RATIO = 1.1


def alternate(reps: int, first: Callable[[], float],
              second: Callable[[], float]) -> tuple[list[float], list[float]]:
  """Run both measurements ``reps`` times, ``first`` leading on even repetitions."""
  a, b = [], []
  for rep in range(reps):
    if rep % 2 == 0:
      a.append(first())
      b.append(second())
    else:
      b.append(second())
      a.append(first())
  return a, b


def ratios(ours: list[float], theirs: list[float]) -> tuple[float, float]:
  """Ratio of medians and ratio of minimums, jaxport over jax (the minimum is steadier)."""
  return statistics.median(ours) / statistics.median(theirs), min(ours) / min(theirs)


def mlp(params, x):
  """A small tanh MLP: ``params`` is a list of ``(w, b)``."""
  for w, b in params:
    x = jnp.tanh(x @ w + b)
  return x
