"""One case per CPU LAPACK routine family and dtype: the 48 ``lapack_*_ffi`` targets."""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax import lax

from jaxport.harness import Case, default_tolerance, random_matrix

DTYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
_PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
N = 4


def _hermitian(seed, dtype):
  m = random_matrix(seed, (N, N), dtype)
  return ((m + m.conj().T) / 2).astype(dtype)


def _spd(seed, dtype):
  m = random_matrix(seed, (N, N), dtype)
  return (m @ m.conj().T + N * np.eye(N)).astype(dtype)


def _lower_triangular(seed, dtype):
  m = np.tril(random_matrix(seed, (N, N), dtype))
  return (m + 2 * N * np.eye(N)).astype(dtype)


def _cholesky(a):
  return jnp.linalg.cholesky(a)


def _qr(a):
  return tuple(jnp.linalg.qr(a))


def _eigh(a):
  return tuple(jnp.linalg.eigh(a))


def _eig(a):
  return tuple(jnp.linalg.eig(a))


def _svd(a):
  return tuple(jnp.linalg.svd(a, full_matrices=False))


def _lu(a):
  return lax.linalg.lu(a)


def _tridiagonal(a):
  return lax.linalg.tridiagonal(a, lower=True)


def _hessenberg(a):
  return jsl.hessenberg(a, calc_q=True)


def _schur(a):
  return jsl.schur(a, output="complex" if jnp.iscomplexobj(a) else "real")


def _trsm(l, b):
  return jsl.solve_triangular(l, b, lower=True)


def _gtsv(dl, d, du, b):
  return lax.linalg.tridiagonal_solve(dl, d, du, b)


def _gtsv_inputs(seed, dtype):
  dl = random_matrix(seed, (N,), dtype)
  du = random_matrix(seed + 1, (N,), dtype)
  d = (random_matrix(seed + 2, (N,), dtype) + 4).astype(dtype)
  dl[0] = 0
  du[-1] = 0
  return (dl, d, du, random_matrix(seed + 3, (N, 2), dtype)), {}


# (op, seed, family, target routines by dtype prefix, function, inputs(seed, dtype), checker).
# Each row declares its seed (every dtype of the op uses it); a new row takes an unused one.
_ROUTINES = (
    ("cholesky", 1000, "lapack_potrf", lambda p: [f"{p}potrf"], _cholesky,
     lambda s, dt: ((_spd(s, dt),), {}), "cholesky"),
    ("qr", 1010, "lapack_geqrf", lambda p: [f"{p}geqrf", f"{p}ungqr" if p in "cz" else f"{p}orgqr"], _qr,
     lambda s, dt: ((random_matrix(s, (N, N), dt),), {}), "qr"),
    ("eigh", 1020, "lapack_syevd", lambda p: [f"{p}heevd" if p in "cz" else f"{p}syevd"], _eigh,
     lambda s, dt: ((_hermitian(s, dt),), {}), "eigh"),
    ("eig", 1030, "lapack_geev", lambda p: [f"{p}geev"], _eig,
     lambda s, dt: ((random_matrix(s, (N, N), dt),), {}), "eig"),
    ("svd", 1040, "lapack_gesdd", lambda p: [f"{p}gesdd"], _svd,
     lambda s, dt: ((random_matrix(s, (N + 1, N), dt),), {}), "svd"),
    ("lu", 1050, "lapack_getrf", lambda p: [f"{p}getrf"], _lu,
     lambda s, dt: ((random_matrix(s, (N, N), dt),), {}), "lu"),
    ("tridiagonal", 1060, "lapack_sytrd", lambda p: [f"{p}hetrd" if p in "cz" else f"{p}sytrd"], _tridiagonal,
     lambda s, dt: ((_hermitian(s, dt),), {}), "tridiagonal"),
    ("hessenberg", 1070, "lapack_gehrd", lambda p: [f"{p}gehrd"], _hessenberg,
     lambda s, dt: ((random_matrix(s, (N, N), dt),), {}), "hessenberg"),
    ("schur", 1080, "lapack_gees", lambda p: [f"{p}gees"], _schur,
     lambda s, dt: ((random_matrix(s, (N, N), dt),), {}), "schur"),
    ("triangular_solve", 1090, "lapack_trsm", lambda p: [f"{p}trsm"], _trsm,
     lambda s, dt: ((_lower_triangular(s, dt), random_matrix(s + 1, (N, 3), dt)), {}), "allclose"),
    ("tridiagonal_solve", 1100, "lapack_gtsv", lambda p: [f"{p}gtsv"], _gtsv, _gtsv_inputs, "allclose"),
)


def _inputs(make, seed, dtype):
  return lambda: make(seed, dtype)


def cases() -> list[Case]:
  out = []
  for op, seed, family, routines, fun, make, checker in _ROUTINES:
    for name, dtype in DTYPES.items():
      rtol, atol = default_tolerance(dtype)
      out.append(Case(
          case_id=f"{op}_{name}", family=family, fun=fun,
          make_inputs=_inputs(make, seed, dtype),
          targets=tuple(f"lapack_{r}_ffi" for r in routines(_PREFIX[name])),
          checker=checker, rtol=rtol, atol=atol))
  return out
