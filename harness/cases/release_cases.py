"""Cases that older jax releases can record, using only jax's public API.

This module is executed inside the environment of an older jax release (it is
this repository's ``jaxport_release_cases``, recorded by ``jaxport record
--with-jax``), so it imports nothing from jaxport's package or from the rest of
the repository: only ``jax``, ``jax.numpy``, ``numpy``, and the case type
``jaxport/harness/_case.py`` (numpy only), loaded by its path there
(``jaxport_in_release/release_jax.py``: ``case_type``). Its cases are plain
``jaxport.harness.Case`` values, so the harness's case registry lists them too
(``cases()``), and entries of older producers are replayed against today's
lowering of the same function.

Every case returns plain tuples of arrays (older releases cannot serialize
NamedTuple results) and, where a decomposition is not unique (eig, eigh,
schur, svd, qr), returns quantities that are: eigenvalues in a canonical
order, reconstructions, normalised signs. A plain ``allclose`` comparison is
then enough for every producer and consumer.

Adding a case, step by step:
  1. Write ``_make_<name>()`` returning ``_case(...)``, a ``Case``: a function of
     arrays, a deterministic input builder (``numpy.random.RandomState`` with a
     seed written in the case, never derived from its place in a table), and
     tolerances fit for float32.
  2. Add it to ``SPECS`` with its family and the custom-call targets the
     current lowering emits. Narrow ``record_range`` (default: every release from
     ``MIN_JAX`` on) if older releases lack an API, or if only older releases
     should record it (the dtype variants of the legacy LAPACK cases,
     ``LEGACY_RANGE``); set ``enable_x64`` for 64-bit inputs.
  3. Record it: ``jaxport record --with-jax 0.9.2``.
  4. Add a row to ``harness/expected_status.json`` if a producer is expected
     to fail under the current build, with the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

# What the release scripts share. Loaded by the recorder in a release's environment, the
# recorder's folder is on sys.path; imported by the harness and the tests, the package is.
try:
  import release_jax as _release
except ImportError:
  from jaxport_in_release import release_jax as _release

Case = _release.case_type()

# The oldest release whose export API the recorder drives (jax.experimental.export).
MIN_JAX = "0.4.26"
# Every release from MIN_JAX on records a case unless it says otherwise.
ANY_RELEASE = (MIN_JAX, None)


def _case(case_id: str, family: str, fun: Callable, make_args: Callable[[], list], *,
          rtol: float = 1e-5, atol: float = 1e-5, unguaranteed_targets: tuple[str, ...] = (),
          record_range: tuple[str, str | None] = ANY_RELEASE, **fields) -> Case:
  """A release case: ``make_args`` gives the positional arrays; ``unguaranteed_targets`` are
  targets older releases lower to without a stability guarantee, exported with
  ``DisabledSafetyCheck.custom_call`` of the recording release, as a user of it had to."""
  checks = tuple(_release.export_module().DisabledSafetyCheck.custom_call(t)
                 for t in unguaranteed_targets)
  return Case(case_id, family, fun, lambda: (tuple(make_args()), {}), rtol=rtol, atol=atol,
              disabled_checks=checks, record_range=record_range, **fields)


def _rng(seed: int) -> np.random.RandomState:
  return np.random.RandomState(seed)


def _matrix(shape, seed: int, dtype) -> np.ndarray:
  """Uniform entries in [-1, 1); complex dtypes get an imaginary part from the next seed."""
  m = _rng(seed).uniform(-1.0, 1.0, size=shape)
  if np.issubdtype(dtype, np.complexfloating):
    m = m + 1j * _rng(seed + 1000).uniform(-1.0, 1.0, size=shape)
  return m.astype(dtype)


def _spd_variant(n: int, seed: int, dtype) -> np.ndarray:
  m = _matrix((n, n), seed, dtype)
  return (m @ np.conj(m.T) + n * np.eye(n)).astype(dtype)


def _hermitian(n: int, seed: int, dtype) -> np.ndarray:
  m = _matrix((n, n), seed, dtype)
  return ((m + np.conj(m.T)) / 2).astype(dtype)


def _spd(n: int, seed: int, dtype=np.float32) -> np.ndarray:
  m = _rng(seed).uniform(-1.0, 1.0, size=(n, n))
  return (m @ m.T + n * np.eye(n)).astype(dtype)


def _symmetric(n: int, seed: int, dtype=np.float32) -> np.ndarray:
  m = _rng(seed).uniform(-1.0, 1.0, size=(n, n))
  return ((m + m.T) / 2).astype(dtype)


def _general(shape, seed: int, dtype=np.float32) -> np.ndarray:
  return _rng(seed).uniform(-1.0, 1.0, size=shape).astype(dtype)


def _make_cholesky():
  import jax.numpy as jnp

  def cholesky(a):
    return (jnp.linalg.cholesky(a),)
  return _case("release_cholesky_f32", "lapack_potrf", cholesky,
               lambda: [_spd(4, 1)], rtol=1e-5, atol=1e-5)


def _make_cholesky_poly():
  import jax.numpy as jnp

  def cholesky_batch(a):
    return (jnp.linalg.cholesky(a),)

  def inputs():
    return [np.stack([_spd(3, 10), _spd(3, 11)])]
  return _case("release_cholesky_poly_f32", "lapack_potrf", cholesky_batch,
               inputs, polymorphic_shapes=("b, 3, 3",))


def _make_qr():
  import jax.numpy as jnp

  def qr(a):
    q, r = jnp.linalg.qr(a)
    signs = jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0).astype(a.dtype)
    return (q * signs[None, :], r * signs[:, None])
  return _case("release_qr_f32", "lapack_geqrf", qr, lambda: [_general((4, 3), 2)],
               rtol=1e-4, atol=1e-5)


def _make_eigh():
  import jax.numpy as jnp

  def eigh(a):
    w, v = jnp.linalg.eigh(a)
    return (w, (v * w[None, :]) @ jnp.conj(v).T)
  return _case("release_eigh_f32", "lapack_syevd", eigh, lambda: [_symmetric(4, 3)],
               rtol=1e-4, atol=1e-5)


def _make_eigh_c64():
  import jax.numpy as jnp

  def eigh(a):
    w, v = jnp.linalg.eigh(a)
    return (w, (v * w[None, :]) @ jnp.conj(v).T)

  def inputs():
    rng = _rng(4)
    m = rng.uniform(-1, 1, (3, 3)) + 1j * rng.uniform(-1, 1, (3, 3))
    return [((m + np.conj(m.T)) / 2).astype(np.complex64)]
  return _case("release_eigh_c64", "lapack_syevd", eigh, inputs, rtol=1e-4, atol=1e-5)


def _make_eig():
  import jax.numpy as jnp

  def eig(a):
    w, v = jnp.linalg.eig(a)
    residual = jnp.abs(a.astype(w.dtype) @ v - v * w[None, :]).max()
    order = jnp.lexsort((jnp.round(w.imag, 4), jnp.round(w.real, 4)))
    return (w[order], residual)
  return _case("release_eig_f32", "lapack_geev", eig, lambda: [_general((4, 4), 5)],
               rtol=1e-4, atol=1e-4)


def _make_svd():
  import jax.numpy as jnp

  def svd(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return (s, (u * s[None, :]) @ vh)
  return _case("release_svd_f32", "lapack_gesdd", svd, lambda: [_general((4, 3), 6)],
               rtol=1e-4, atol=1e-5)


def _make_lu():
  from jax import lax

  def lu(a):
    lu_, pivots, perm = lax.linalg.lu(a)
    return (lu_, pivots, perm)
  return _case("release_lu_f32", "lapack_getrf", lu, lambda: [_general((4, 4), 7)],
               rtol=1e-5, atol=1e-5)


def _make_hessenberg():
  import jax.numpy as jnp
  from jax import lax

  def hessenberg(a):
    h, taus = lax.linalg.hessenberg(a)
    # Below the first subdiagonal LAPACK leaves its reflectors; keep H only.
    return (jnp.triu(h, -1), taus)
  return _case("release_hessenberg_f32", "lapack_gehrd", hessenberg,
               lambda: [_general((4, 4), 8)], rtol=1e-4, atol=1e-5,
               unguaranteed_targets=("lapack_sgehrd",))


def _make_schur():
  import jax.numpy as jnp
  from jax import lax

  def schur(a):
    t, z = lax.linalg.schur(a)
    return ((z @ t) @ z.T, jnp.trace(t))
  return _case("release_schur_f32", "lapack_gees", schur, lambda: [_general((4, 4), 9)],
               rtol=1e-4, atol=1e-5)


def _make_triangular_solve():
  import jax.scipy.linalg as jsl

  def solve(a, b):
    return (jsl.solve_triangular(a, b, lower=True),)

  def inputs():
    a = np.tril(_general((4, 4), 12)) + 4 * np.eye(4, dtype=np.float32)
    return [a.astype(np.float32), _general((4, 2), 13)]
  return _case("release_triangular_solve_f32", "lapack_trsm", solve, inputs)


def _make_tridiagonal():
  from jax import lax

  def tridiagonal(a):
    _, d, e, _ = lax.linalg.tridiagonal(a, lower=True)
    return (d, e)
  return _case("release_tridiagonal_f32", "lapack_sytrd", tridiagonal,
               lambda: [_symmetric(4, 14)], rtol=1e-4, atol=1e-5,
               unguaranteed_targets=("lapack_ssytrd",))


def _make_tridiagonal_solve():
  from jax import lax

  def solve(dl, d, du, b):
    return (lax.linalg.tridiagonal_solve(dl, d, du, b),)

  def inputs():
    n = 5
    dl = _general((n,), 15)
    du = _general((n,), 16)
    dl[0] = 0.0
    du[-1] = 0.0
    d = (4.0 + _general((n,), 17)).astype(np.float32)
    return [dl, d, du, _general((n, 2), 18)]
  return _case("release_tridiagonal_solve_f32", "lapack_gtsv", solve,
               inputs)


def _make_poly_matmul():
  import jax.numpy as jnp

  def gram(x):
    return (jnp.sum(x @ x.T, axis=0), x.shape[0] * jnp.ones((), x.dtype))
  return _case("release_poly_gram_f32", "feature_shape_poly", gram,
               lambda: [_general((3, 4), 19)],
               polymorphic_shapes=("b, 4",))


def _make_multi_platform():
  import jax.numpy as jnp

  def sin_cos(x):
    return (jnp.sin(x) * jnp.cos(x),)
  return _case("release_multi_platform_f32", "feature_multi_platform", sin_cos,
               lambda: [_general((5,), 20)], platforms=("cpu", "cuda"))


def _make_vjp():
  import jax.numpy as jnp

  def tanh_sum(x):
    return (jnp.tanh(x).sum(),)
  return _case("release_vjp_tanh_f32", "feature_vjp", tanh_sum,
               lambda: [_general((6,), 21)], vjp_order=1)


# Dtype variants of the LAPACK/BLAS cases, recorded only by the releases that
# lower them to the legacy untyped targets (jax <= 0.4.30), so that every
# rule of ``jaxport.upgrade`` is exercised on the s, d, c and z targets.
LEGACY_MAX_JAX = "0.4.30"
LEGACY_RANGE = (MIN_JAX, LEGACY_MAX_JAX)
_VARIANT_DTYPES = {"f64": np.float64, "c64": np.complex64, "c128": np.complex128}
_LETTER = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}


def _variant_cholesky(tag, dtype):
  import jax.numpy as jnp

  def cholesky(a):
    return (jnp.linalg.cholesky(a),)
  return cholesky, lambda: [_spd_variant(4, 1, dtype)], 1e-5


def _variant_qr(tag, dtype):
  import jax.numpy as jnp

  def qr(a):
    q, r = jnp.linalg.qr(a)
    d = jnp.diagonal(r)
    phase = jnp.where(jnp.abs(d) == 0, 1, d / jnp.abs(d)).astype(a.dtype)
    return (q * phase[None, :], r * jnp.conj(phase)[:, None])
  return qr, lambda: [_matrix((4, 3), 2, dtype)], 1e-4


def _variant_eigh(tag, dtype):
  import jax.numpy as jnp

  def eigh(a):
    w, v = jnp.linalg.eigh(a)
    return (w, (v * w[None, :]) @ jnp.conj(v).T)
  return eigh, lambda: [_hermitian(4, 3, dtype)], 1e-4


def _variant_eig(tag, dtype):
  import jax.numpy as jnp

  def eig(a):
    w, v = jnp.linalg.eig(a)
    residual = jnp.abs(a.astype(w.dtype) @ v - v * w[None, :]).max()
    order = jnp.lexsort((jnp.round(w.imag, 4), jnp.round(w.real, 4)))
    return (w[order], residual)
  return eig, lambda: [_matrix((4, 4), 5, dtype)], 1e-4


def _variant_svd(tag, dtype):
  import jax.numpy as jnp

  def svd(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return (s, (u * s[None, :]) @ vh)
  return svd, lambda: [_matrix((4, 3), 6, dtype)], 1e-4


def _variant_lu(tag, dtype):
  from jax import lax

  def lu(a):
    lu_, pivots, perm = lax.linalg.lu(a)
    return (lu_, pivots, perm)
  return lu, lambda: [_matrix((4, 4), 7, dtype)], 1e-5


def _variant_schur(tag, dtype):
  import jax.numpy as jnp
  from jax import lax

  def schur(a):
    t, z = lax.linalg.schur(a)
    return ((z @ t) @ jnp.conj(z).T, jnp.trace(t))
  return schur, lambda: [_matrix((4, 4), 9, dtype)], 1e-4


def _variant_triangular_solve(tag, dtype):
  import jax.scipy.linalg as jsl

  def solve(a, b):
    return (jsl.solve_triangular(a, b, lower=True),)

  def inputs():
    a = np.tril(_matrix((4, 4), 12, dtype)) + 4 * np.eye(4)
    return [a.astype(dtype), _matrix((4, 2), 13, dtype)]
  return solve, inputs, 1e-5


def _variant_hessenberg(tag, dtype):
  import jax.numpy as jnp
  from jax import lax

  def hessenberg(a):
    h, taus = lax.linalg.hessenberg(a)
    return (jnp.triu(h, -1), taus)
  return hessenberg, lambda: [_matrix((4, 4), 8, dtype)], 1e-4


def _variant_tridiagonal(tag, dtype):
  from jax import lax

  def tridiagonal(a):
    _, d, e, _ = lax.linalg.tridiagonal(a, lower=True)
    return (d, e)
  return tridiagonal, lambda: [_hermitian(4, 14, dtype)], 1e-4


def _variant_maker(name, family, tag, build, unguaranteed):
  dtype = _VARIANT_DTYPES[tag]

  def make():
    fun, inputs, tol = build(tag, dtype)
    return _case(f"release_{name}_{tag}", family, fun, inputs, rtol=tol, atol=tol,
                 record_range=LEGACY_RANGE, enable_x64=tag in ("f64", "c128"),
                 unguaranteed_targets=unguaranteed)
  return make


def _variant_targets(templates, tag):
  letter = _LETTER[tag]
  complex_ = tag.startswith("c")
  out = []
  for t in templates:
    if complex_:
      t = t.replace("?syevd", "?heevd").replace("?orgqr", "?ungqr").replace("?sytrd", "?hetrd")
    out.append(t.replace("?", letter))
  return tuple(out)


# name -> (family, targets today (``?`` = dtype letter), builder, dtype tags).
_VARIANTS = {
    "cholesky": ("lapack_potrf", ("lapack_?potrf_ffi",), _variant_cholesky),
    "qr": ("lapack_geqrf", ("lapack_?geqrf_ffi", "lapack_?orgqr_ffi"), _variant_qr),
    "eigh": ("lapack_syevd", ("lapack_?syevd_ffi",), _variant_eigh),
    "eig": ("lapack_geev", ("lapack_?geev_ffi",), _variant_eig),
    "svd": ("lapack_gesdd", ("lapack_?gesdd_ffi",), _variant_svd),
    "lu": ("lapack_getrf", ("lapack_?getrf_ffi",), _variant_lu),
    "schur": ("lapack_gees", ("lapack_?gees_ffi",), _variant_schur),
    "triangular_solve": ("lapack_trsm", ("lapack_?trsm_ffi",), _variant_triangular_solve),
    "hessenberg": ("lapack_gehrd", ("lapack_?gehrd_ffi",), _variant_hessenberg),
    "tridiagonal": ("lapack_sytrd", ("lapack_?sytrd_ffi",), _variant_tridiagonal),
}
# The legacy targets of jax <= 0.4.30 outside its stability guarantee, per variant.
_UNGUARANTEED = {"hessenberg": ("lapack_?gehrd",), "tridiagonal": ("lapack_?sytrd",)}


def _variant_specs() -> dict:
  out = {}
  for name, (family, templates, build) in _VARIANTS.items():
    for tag in _VARIANT_DTYPES:
      case_id = f"release_{name}_{tag}"
      if name == "eigh" and tag == "c64":
        continue  # release_eigh_c64 is a base case, recorded by every release.
      unguaranteed = _variant_targets(_UNGUARANTEED.get(name, ()), tag)
      out[case_id] = (family, _variant_targets(templates, tag),
                      _variant_maker(name, family, tag, build, unguaranteed))
  return out


_VARIANT_SPECS = _variant_specs()

# case id -> (family, custom-call targets the current lowering emits, maker).
# Ids and families are readable without importing jax.
SPECS = {
    "release_cholesky_f32": ("lapack_potrf", ("lapack_spotrf_ffi",), _make_cholesky),
    "release_cholesky_poly_f32": ("lapack_potrf", ("lapack_spotrf_ffi", "shape_assertion"),
                                  _make_cholesky_poly),
    "release_qr_f32": ("lapack_geqrf", ("lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"), _make_qr),
    "release_eigh_f32": ("lapack_syevd", ("lapack_ssyevd_ffi",), _make_eigh),
    "release_eigh_c64": ("lapack_syevd", ("lapack_cheevd_ffi",), _make_eigh_c64),
    "release_eig_f32": ("lapack_geev", ("lapack_sgeev_ffi",), _make_eig),
    "release_svd_f32": ("lapack_gesdd", ("lapack_sgesdd_ffi",), _make_svd),
    "release_lu_f32": ("lapack_getrf", ("lapack_sgetrf_ffi",), _make_lu),
    "release_hessenberg_f32": ("lapack_gehrd", ("lapack_sgehrd_ffi",), _make_hessenberg),
    "release_schur_f32": ("lapack_gees", ("lapack_sgees_ffi",), _make_schur),
    "release_triangular_solve_f32": ("lapack_trsm", ("lapack_strsm_ffi",),
                                     _make_triangular_solve),
    "release_tridiagonal_f32": ("lapack_sytrd", ("lapack_ssytrd_ffi",), _make_tridiagonal),
    "release_tridiagonal_solve_f32": ("lapack_gtsv", ("lapack_sgtsv_ffi",),
                                      _make_tridiagonal_solve),
    "release_poly_gram_f32": ("feature_shape_poly", ("shape_assertion",), _make_poly_matmul),
    "release_multi_platform_f32": ("feature_multi_platform", (), _make_multi_platform),
    "release_vjp_tanh_f32": ("feature_vjp", (), _make_vjp),
    **_VARIANT_SPECS,
}


def all_cases() -> list[Case]:
  """Every release case, in a fixed order, with its targets from ``SPECS`` (building them
  imports jax)."""
  out = []
  for case_id, (family, targets, make) in SPECS.items():
    case = make()
    if (case.case_id, case.family) != (case_id, family):
      raise ValueError(f"release case {case_id}: its maker builds {case.case_id!r} of family "
                       f"{case.family!r}; SPECS says {family!r}.")
    if case.record_range is None or case.rtol is None or case.atol is None:
      raise ValueError(f"release case {case_id}: give it a record_range and its rtol and atol "
                       "(the recorder compares the round trip with them).")
    out.append(dataclasses.replace(case, targets=tuple(targets)))
  return out


def cases() -> list[Case]:
  """The case-module hook: the release cases, for the harness's case registry."""
  return all_cases()
