"""The models' golden cases: what the compat harness exports, records and replays.

``pyproject.toml`` names this module in ``jaxport_cases``. Inputs are deterministic, so a
recording on the same jax is byte-identical. The CNN and the transformer block are exported
for every batch size (``b``), as a service exports them.
"""

import numpy as np

from jaxport.harness import Case, random_matrix
from models import eqx_mlp, linalg, training, vision


def _images():
  return (vision.cnn_params(), random_matrix(10, (3, 8, 8, 1), np.float32)), {}


def _tokens():
  return (vision.block_params(), random_matrix(11, (2, 6, 16), np.float32)), {}


def _batch():
  x = random_matrix(12, (8, 4), np.float32)
  y = random_matrix(13, (8, 3), np.float32)
  return (training.initial_params(), training.initial_state(), x, y), {}


def _mlp_inputs():
  return (eqx_mlp.weights(), random_matrix(14, (5, 4), np.float32)), {}


def _spd(seed: int, n: int = 4):
  a = random_matrix(seed, (n, n), np.float32)
  return (a @ a.T + n * np.eye(n, dtype=np.float32)).astype(np.float32)


def cases() -> list[Case]:
  return [
      Case("cnn", "flax", vision.classify, _images, polymorphic_shapes=(None, "b, 8, 8, 1"),
           rtol=1e-4, atol=1e-5),
      Case("transformer_block", "flax", vision.encode, _tokens,
           polymorphic_shapes=(None, "b, 6, 16"), rtol=1e-4, atol=1e-5),
      Case("adamw_step", "optax", training.train_step, _batch),
      Case("mlp", "equinox", eqx_mlp.predict, _mlp_inputs),
      Case("eigh_f32", "lapack", linalg.spectrum, lambda: ((_spd(20),), {}), checker="eigh",
           targets=("lapack_ssyevd_ffi",)),
      Case("cholesky_f32", "lapack", linalg.cholesky, lambda: ((_spd(21),), {}),
           checker="cholesky", targets=("lapack_spotrf_ffi",)),
      Case("qr_f32", "lapack", linalg.qr, lambda: ((random_matrix(22, (5, 3), np.float32),), {}),
           checker="qr", targets=("lapack_sgeqrf_ffi", "lapack_sorgqr_ffi")),
      Case("solve_f32", "lapack", linalg.solve,
           lambda: ((_spd(23), random_matrix(24, (4, 2), np.float32)), {}),
           targets=("lapack_sgetrf_ffi",)),
  ]
