"""Timing helpers shared by the benchmarks: alternating measurements, quartiles and ratios.

Each benchmark measures jaxport and jax.export in the same run, alternating
which goes first so warm caches and a busy machine favour neither.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

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


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
  """``(q1, median, q3)`` of ``samples`` (at least two), by the inclusive method.

  The interquartile range ``q3 - q1`` says how much a busy machine spread the
  rounds: a ratio of medians is only as good as the spread around them.
  """
  q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
  return q1, q2, q3


def mlp(params, x):
  """A small tanh MLP: ``params`` is a list of ``(w, b)``."""
  for w, b in params:
    x = jnp.tanh(x @ w + b)
  return x
