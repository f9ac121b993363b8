"""Ordinary unit tests of tinyops; they run beside the golden items (not with --compat-only)."""

import jax
import numpy as np

import tinyops


def test_normalize_rows_gives_zero_mean_and_unit_variance():
  x = np.random.RandomState(0).standard_normal((3, 8)).astype(np.float32) * 5 + 2
  y = np.asarray(tinyops.normalize_rows(x))
  np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-5)
  np.testing.assert_allclose(y.var(axis=-1), 1, atol=1e-3)


def test_update_stats_matches_the_statistics_of_all_rows():
  rows = np.random.RandomState(1).standard_normal((12, 3)).astype(np.float32)
  start = tinyops.RunningStats(count=np.float32(0), mean=np.zeros(3, np.float32),
                               m2=np.zeros(3, np.float32))
  stats = jax.jit(tinyops.update_stats)(tinyops.update_stats(start, rows[:5]), rows[5:])
  np.testing.assert_allclose(stats.mean, rows.mean(axis=0), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(stats.m2 / stats.count, rows.var(axis=0), rtol=1e-4)


def test_scores_of_each_row_sum_to_one():
  rng = np.random.RandomState(2)
  w = rng.standard_normal((8, 4)).astype(np.float32)
  x = rng.standard_normal((5, 8)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(tinyops.scores(w, x)).sum(axis=-1), 1, rtol=1e-5)
