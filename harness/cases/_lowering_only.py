"""Lowering-only cases: exported on a CPU host for cuda, rocm and tpu.

jax lowers these platforms without their hardware, so a CPU run can record and
check the blob, the module and the custom-call signatures; nothing is executed.
"""

from __future__ import annotations

import numpy as np

from harness.cases import _lapack
from harness.cases._case import Case, random_matrix


def _spd():
  m = random_matrix(41, (4, 4), np.float32)
  return ((m @ m.T + 4 * np.eye(4)).astype(np.float32),), {}


def _square():
  return (random_matrix(42, (4, 4), np.float32),), {}


# The op functions are the CPU cases' own, so a target's module differs only by platform.
_cholesky, _qr, _eigh, _lu = _lapack._cholesky, _lapack._qr, _lapack._eigh, _lapack._lu


# (platform, op, function, inputs, targets its lowering emits)
_TABLE = (
    ("cuda", "cholesky", _cholesky, _spd, ("cusolver_potrf_ffi",)),
    ("cuda", "qr", _qr, _square, ("cusolver_geqrf_ffi", "cusolver_orgqr_ffi")),
    ("cuda", "lu", _lu, _square, ("cu_lu_pivots_to_permutation", "cusolver_getrf_ffi")),
    ("rocm", "cholesky", _cholesky, _spd, ("hipsolver_potrf_ffi",)),
    ("rocm", "eigh", _eigh, _spd, ("hipsolver_syevd_ffi",)),
    ("tpu", "eigh", _eigh, _spd, ("Eigh",)),
    ("tpu", "qr", _qr, _square, ("ProductOfElementaryHouseholderReflectors", "Qr")),
)


def cases() -> list[Case]:
  return [Case(f"{platform}_{op}_f32", f"lowering_{platform}", fun, make, targets=targets,
               platforms=(platform,), lowering_only=True, checker="none")
          for platform, op, fun, make, targets in _TABLE]
