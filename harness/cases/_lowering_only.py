"""Lowering-only cases: exported on a CPU host for cuda, rocm and tpu.

jax lowers these platforms without their hardware, so a CPU run can record and
check the blob, the module and the custom-call signatures; nothing is executed.
Case ids are ``<platform>_<op>[_<variant>][_<dtype>]`` with the operation names
of jax's own corpus (``jaxport.corpus._corpus_rules``), so an imported dataset of
that platform, operation and dtype is compared with today's lowering of the case.

Stable targets of these platforms that a CPU host cannot lower would be listed in
:data:`UNREACHABLE` with the reason; the session's coverage check fails on any
other stable cuda, rocm or tpu target without a replayed lowering-only entry.
A CPU host lowers every one today: ``tpu_custom_call`` (a Pallas TPU kernel)
included, whose lowering-only case lives with the tpu cases (``_tpu``).
"""

from __future__ import annotations

import jax
import numpy as np
from jax import lax

from harness.cases import _lapack
from jaxport.harness import Case, random_matrix


def _spd():
  m = random_matrix(41, (4, 4), np.float32)
  return ((m @ m.T + 4 * np.eye(4)).astype(np.float32),), {}


def _square():
  return (random_matrix(42, (4, 4), np.float32),), {}


def _symmetric():
  m = random_matrix(43, (4, 4), np.float32)
  return (((m + m.T) / 2).astype(np.float32),), {}


def _tridiagonal_system():
  return _lapack._gtsv_inputs(44, np.float32)


def _pivots():
  return (np.array([[3, 3, 2, 3], [1, 2, 3, 3]], np.int32),), {}


def _key():
  return (np.array([0, 42], np.uint32),), {}


# The op functions are the CPU cases' own where one exists, so a target's module differs only by platform.
_cholesky, _qr, _eigh, _lu = _lapack._cholesky, _lapack._qr, _lapack._eigh, _lapack._lu
_tridiagonal, _gtsv = _lapack._tridiagonal, _lapack._gtsv


def _svd(algorithm):
  def svd(a):
    return tuple(lax.linalg.svd(a, full_matrices=False, algorithm=algorithm))
  return svd


def _lu_pivots_to_permutation(pivots):
  return lax.linalg.lu_pivots_to_permutation(pivots, permutation_size=4)


def _threefry(key_data):
  return jax.random.bits(jax.random.wrap_key_data(key_data, impl="threefry2x32"), (4,))


def _approx_max_k(a):
  return lax.approx_max_k(a, 2)


_QR, _JACOBI = lax.linalg.SvdAlgorithm.QR, lax.linalg.SvdAlgorithm.JACOBI
# jax 0.10.0 added the divide-and-conquer choice (hipsolver_gesdd_ffi); older releases lack it,
# and their registry leaves that case out (its recorded entry still replays).
_GESDD = getattr(lax.linalg.SvdAlgorithm, "DIVIDE_AND_CONQUER", None)
# jax lowers threefry to the GPU kernel only with this flag (its default lowering is generic HLO).
_THREEFRY_KERNEL = (("jax_threefry_gpu_kernel_lowering", True),)

# (platform, case suffix, function, inputs, targets its lowering emits, jax flags)
_TABLE = (
    ("cuda", "cholesky_f32", _cholesky, _spd, ("cusolver_potrf_ffi",), ()),
    ("cuda", "qr_f32", _qr, _square, ("cusolver_geqrf_ffi", "cusolver_orgqr_ffi"), ()),
    ("cuda", "lu_f32", _lu, _square, ("cu_lu_pivots_to_permutation", "cusolver_getrf_ffi"), ()),
    ("cuda", "lu_pivots_to_permutation", _lu_pivots_to_permutation, _pivots,
     ("cu_lu_pivots_to_permutation",), ()),
    ("cuda", "eigh_f32", _eigh, _symmetric, ("cusolver_syevd_ffi",), ()),
    ("cuda", "svd_qr_f32", _svd(_QR), _square, ("cusolver_gesvd_ffi",), ()),
    ("cuda", "svd_jacobi_f32", _svd(_JACOBI), _square, ("cusolver_gesvdj_ffi",), ()),
    ("cuda", "tridiagonal_f32", _tridiagonal, _symmetric, ("cusolver_sytrd_ffi",), ()),
    ("cuda", "tridiagonal_solve_f32", _gtsv, _tridiagonal_system, ("cusparse_gtsv2_ffi",), ()),
    ("cuda", "threefry2x32", _threefry, _key, ("cu_threefry2x32_ffi",), _THREEFRY_KERNEL),
    ("rocm", "cholesky_f32", _cholesky, _spd, ("hipsolver_potrf_ffi",), ()),
    ("rocm", "eigh_f32", _eigh, _spd, ("hipsolver_syevd_ffi",), ()),
    ("rocm", "qr_f32", _qr, _square, ("hipsolver_geqrf_ffi", "hipsolver_orgqr_ffi"), ()),
    ("rocm", "lu_f32", _lu, _square, ("hip_lu_pivots_to_permutation", "hipsolver_getrf_ffi"), ()),
    ("rocm", "lu_pivots_to_permutation", _lu_pivots_to_permutation, _pivots,
     ("hip_lu_pivots_to_permutation",), ()),
    ("rocm", "svd_qr_f32", _svd(_QR), _square, ("hipsolver_gesvd_ffi",), ()),
    ("rocm", "svd_jacobi_f32", _svd(_JACOBI), _square, ("hipsolver_gesvdj_ffi",), ()),
    ("rocm", "svd_gesdd_f32", _svd(_GESDD) if _GESDD else None, _square,
     ("hipsolver_gesdd_ffi",), ()),
    ("rocm", "tridiagonal_f32", _tridiagonal, _symmetric, ("hipsolver_sytrd_ffi",), ()),
    ("rocm", "threefry2x32", _threefry, _key, ("hip_threefry2x32_ffi",), _THREEFRY_KERNEL),
    ("tpu", "eigh_f32", _eigh, _spd, ("Eigh",), ()),
    ("tpu", "qr_f32", _qr, _square, ("ProductOfElementaryHouseholderReflectors", "Qr"), ()),
    ("tpu", "lu_f32", _lu, _square, ("LuDecomposition",), ()),
    ("tpu", "approx_top_k_f32", _approx_max_k, _square, ("ApproxTopK",), ()),
)


# Stable targets of cuda, rocm and tpu that jax cannot lower on a CPU host, and why: none.
UNREACHABLE: dict[str, str] = {}


def cases() -> list[Case]:
  return [Case(f"{platform}_{suffix}", f"lowering_{platform}", fun, make, targets=targets,
               platforms=(platform,), lowering_only=True, checker="none", jax_flags=flags)
          for platform, suffix, fun, make, targets, flags in _TABLE if fun is not None]
