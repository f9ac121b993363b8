"""tinyops' golden cases: what the compat harness exports, records and replays.

The project's ``pyproject.toml`` names this module in ``jaxport_cases``. The
harness imports it in the pytest process and in its worker process and calls
:func:`cases` and reads :data:`CHECKERS`, the project's own checkers; importing
it also imports ``tinyops``, which registers ``RunningStats`` for serialization
and, when it is built, the native kernel.

Each case exports one function with fixed example inputs (deterministic, so a
re-record on the same jax is byte-identical) and names the custom-call targets
its lowering must reach.
"""

import jax
import numpy as np

import jaxport
from jaxport.harness import Case, Judge, jit_kwargs_from, judged, random_matrix
from tinyops import RunningStats, layers, linalg, native, noise, sharded, stats


@judged
def _rows_normalized(judge: Judge, inputs, expected, actual) -> None:
  """normalize_rows' results: close to the recorded ones, and every row of mean 0, variance 1."""
  (want,), (got,) = expected, actual
  judge.close("rows", want, got)
  off = max(float(np.max(np.abs(got.mean(axis=-1)))), float(np.max(np.abs(got.var(axis=-1) - 1))))
  judge.require(f"rows are not normalized: mean or variance off by {off:.3g}", off <= 1e-3)


# The project's own checkers, by the name its cases give in checker=.
CHECKERS = {"rows_normalized": _rows_normalized}


def _mlp_inputs():
  w1 = random_matrix(1, (8, 16), np.float32) / 4
  w2 = random_matrix(2, (16, 4), np.float32) / 4
  return (w1, w2, random_matrix(3, (5, 8), np.float32)), {}


def _stats_inputs():
  state = RunningStats(count=np.float32(10), mean=random_matrix(4, (3,), np.float32),
                       m2=np.abs(random_matrix(5, (3,), np.float32)) * 10)
  return (state, random_matrix(6, (7, 3), np.float32)), {}


def cases() -> list[Case]:
  out = [
      Case("mlp", "layers", layers.mlp, _mlp_inputs),
      # Exported once for every batch size b; the entry is recorded and replayed with b = 6.
      Case("normalize_rows", "layers", layers.normalize_rows,
           lambda: ((random_matrix(7, (6, 8), np.float32),), {}),
           polymorphic_shapes=("b, 8",), checker="rows_normalized"),
      # Shipped to CPU and TPU serving fleets: one artifact lowered for both (on any host), whose
      # platforms are part of what its callers load. Dropping "tpu" fails the entry; adding a
      # platform is a warning.
      Case("serve_scores", "layers", layers.scores,
           lambda: ((random_matrix(12, (8, 4), np.float32), random_matrix(13, (5, 8), np.float32)),
                    {}), platforms=("cpu", "tpu")),
      # On CPU, Cholesky is LAPACK's potrf: the targets stable_targets.json guarantees.
      Case("whiten_f32", "linalg", linalg.whiten,
           lambda: ((random_matrix(8, (16, 4), np.float32),), {}),
           targets=("lapack_spotrf_ffi",)),
      # float64 needs jax's 64-bit mode; the entry records it and the replay turns it on.
      Case("whiten_f64", "linalg", linalg.whiten,
           lambda: ((random_matrix(8, (16, 4), np.float64),), {}),
           targets=("lapack_dpotrf_ffi",), enable_x64=True),
      Case("update_stats", "stats", stats.update_stats, _stats_inputs),
      # vjp_order=1 records the gradient too (for cotangents of ones), so a changed backward
      # rule fails even where the function's own outputs stay the same.
      Case("soft_clip", "noise", noise.soft_clip,
           lambda: ((random_matrix(10, (4, 4), np.float32) * 3,), {}), vjp_order=1),
      # The key comes first; the float32 output still gets float32's default tolerance.
      Case("jitter", "noise", noise.jitter,
           lambda: ((jax.random.key(0), random_matrix(11, (8,), np.float32)), {})),
      # Eight devices (simulated on a CPU host): exported with the shardings of the jax.jit
      # object tinyops ships, built in the worker, which has the devices.
      Case("dense", "sharded", sharded.dense,
           lambda: ((random_matrix(14, (8, 16), np.float32),
                     random_matrix(15, (16, 4), np.float32)), {}),
           num_devices=sharded.NUM_DEVICES, jit_kwargs=jit_kwargs_from(sharded.sharded_dense)),
  ]
  if native.available():
    # jaxport refuses to export a custom call that no stable table lists, unless the case
    # declares it as the project's own.
    out.append(Case("softsign", "native", native.softsign,
                    lambda: ((random_matrix(9, (4, 4), np.float32),), {}),
                    targets=(native.TARGET,),
                    disabled_checks=(jaxport.DisabledSafetyCheck.custom_call(native.TARGET),)))
  return out
