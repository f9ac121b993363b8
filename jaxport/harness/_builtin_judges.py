"""The built-in checkers' judging functions, ``judge(j, inputs, expected, actual)`` over a
``checkers.Judge`` ``j``: one per routine whose results are unique only up to a choice (see
``jaxport.harness.checkers``), plus ``allclose`` and ``none``, and the adapters for jax's own
back-compat datasets.

Each sees the function's outputs only: where an entry records a VJP, ``checkers.Judged``
compares the VJP's outputs by tolerance itself. Like ``checkers``, this module imports only
numpy (the scripts that replay inside an older jax release's virtual environment load both by
their paths); it never imports ``checkers``, whose ``Judge`` it is handed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def wide(x: np.ndarray) -> np.ndarray:
  """``x`` in float64 (complex128 if complex), to measure errors without rounding them."""
  if np.iscomplexobj(x):
    return x.astype(np.complex128)
  if x.dtype.kind in "fiub":
    return x.astype(np.float64)
  return x


def _h(x: np.ndarray) -> np.ndarray:
  return np.conj(np.swapaxes(x, -1, -2))


def _largest(x) -> float:
  """The largest magnitude in ``x`` (0 for an empty array)."""
  return float(np.max(np.abs(wide(np.asarray(x))), initial=0.0))


def _eye_like(m: np.ndarray) -> np.ndarray:
  return np.eye(m.shape[-1])


def _allclose(j, inputs, want, got):
  for i, (w, g) in enumerate(zip(want, got)):
    with j.output(i) as what:
      j.close(what, w, g)


def _cholesky(j, inputs, want, got):
  _allclose(j, inputs, want, got)
  a, (l,) = wide(inputs[0]), got
  j.residual("cholesky: L L^H - A", wide(l) @ _h(wide(l)) - a)


def _qr(j, inputs, want, got):
  a, (q, r) = wide(inputs[0]), [wide(x) for x in got]
  j.residual("qr: Q R - A", q @ r - a)
  j.residual("qr: Q^H Q - I", _h(q) @ q - _eye_like(q))
  j.residual("qr: R below the diagonal", np.tril(r, -1))
  j.close("qr: |diag R|", np.abs(np.diagonal(wide(want[1]))), np.abs(np.diagonal(r)))


def _eigh(j, inputs, want, got):
  a, (w, v) = wide(inputs[0]), [wide(x) for x in got]
  j.require("eigh: eigenvalues are not sorted ascending", bool(np.all(np.diff(np.real(w)) >= 0)))
  j.close("eigh: eigenvalues", want[0], got[0], norm=_largest(want[0]))
  j.residual("eigh: A V - V diag(w)", a @ v - v * w)
  j.residual("eigh: V^H V - I", _h(v) @ v - _eye_like(v))


def _eig(j, inputs, want, got):
  a, (w, v) = wide(inputs[0]), [wide(x) for x in got]
  j.residual("eig: A V - V diag(w)", a @ v - v * w)
  j.residual("eig: column norms of V - 1", np.linalg.norm(v, axis=0) - 1)
  j.same_spectrum("eig", want[0], got[0])


def _svd(j, inputs, want, got):
  a, (u, s, vh) = wide(inputs[0]), [wide(x) for x in got]
  j.require("svd: singular values are not sorted descending", bool(np.all(np.diff(s) <= 0)))
  j.close("svd: singular values", want[1], got[1], norm=_largest(want[1]))
  k = s.shape[-1]  # full_matrices=True gives square U and V^H; only k columns/rows pair with s
  j.residual("svd: U diag(s) V^H - A", (u[:, :k] * s) @ vh[:k, :] - a)
  j.residual("svd: U^H U - I", _h(u) @ u - _eye_like(u))
  j.residual("svd: V^H V - I", vh @ _h(vh) - np.eye(vh.shape[-2]))


def _lu(j, inputs, want, got):
  a = wide(inputs[0])
  lu, pivots, perm = got
  lu = wide(lu)
  n = min(lu.shape)
  perm = np.asarray(perm)
  j.require(f"lu: permutation {perm.tolist()} is not a permutation of 0..{a.shape[0] - 1}",
            sorted(perm.tolist()) == list(range(a.shape[0])))
  if j.problems:
    return
  swapped = list(range(a.shape[0]))
  for i, p in enumerate(np.asarray(pivots).tolist()):
    swapped[i], swapped[p] = swapped[p], swapped[i]
  j.require(f"lu: pivots {np.asarray(pivots).tolist()} do not produce permutation {perm.tolist()}",
            swapped == perm.tolist())
  l = np.tril(lu[:, :n], -1) + np.eye(lu.shape[0], n)
  u = np.triu(lu[:n, :])
  j.residual("lu: L U - A[perm]", l @ u - a[perm])


def _tridiagonal(j, inputs, want, got):
  a = wide(inputs[0])
  _, d, e, _ = got
  d, e = wide(d), wide(e)
  t = np.diag(d).astype(np.complex128) + np.diag(e, -1) + np.diag(np.conj(e), 1)
  j.residual("tridiagonal: eigenvalues of T - eigenvalues of A",
          np.linalg.eigvalsh(t) - np.linalg.eigvalsh(a))
  j.close("tridiagonal: diagonal", want[1], got[1])
  j.close("tridiagonal: |off-diagonal|", np.abs(wide(want[2])), np.abs(e))


def _hessenberg(j, inputs, want, got):
  a, (h, q) = wide(inputs[0]), [wide(x) for x in got]
  j.residual("hessenberg: Q H Q^H - A", q @ h @ _h(q) - a)
  j.residual("hessenberg: Q^H Q - I", _h(q) @ q - _eye_like(q))
  j.residual("hessenberg: H below the first subdiagonal", np.tril(h, -2))


def _schur(j, inputs, want, got):
  a, (t, z) = wide(inputs[0]), [wide(x) for x in got]
  j.residual("schur: Z T Z^H - A", z @ t @ _h(z) - a)
  j.residual("schur: Z^H Z - I", _h(z) @ z - _eye_like(z))
  j.residual("schur: T below the first subdiagonal", np.tril(t, -2))
  sub = np.abs(np.diagonal(t, -1))
  if np.iscomplexobj(got[0]):
    j.residual("schur: complex T below the diagonal", sub)
  else:
    blocks = sub > j.residual_tol
    j.require("schur: real T has adjacent 2x2 blocks (two consecutive nonzero subdiagonal entries)",
              not bool(np.any(blocks[1:] & blocks[:-1])))
  j.same_spectrum("schur", np.linalg.eigvals(wide(want[0])), np.linalg.eigvals(t))


def _top_k(j, inputs, want, got):
  """Top-k along the last axis: ties may come back in another order, so compare sorted values.
  Where the operand is built inside the module (jax's datasets take no input), only the sorted
  values of each (values, indices) pair of outputs can be compared."""
  if not inputs:
    for k in range(0, len(want), 2):
      j.close(f"top_k: sorted values of output {k}", np.sort(wide(want[k]), axis=-1),
              np.sort(wide(got[k]), axis=-1))
    return
  a = wide(inputs[0])
  values, indices = got
  idx = np.asarray(indices).astype(np.int64)
  j.require(f"top_k: indices outside 0..{a.shape[-1] - 1}",
            bool(np.all((idx >= 0) & (idx < a.shape[-1]))))
  if j.problems:
    return
  j.close("top_k: values - operand[indices]", np.take_along_axis(a, idx, axis=-1), values)
  j.close("top_k: sorted values", np.sort(wide(want[0]), axis=-1), np.sort(wide(values), axis=-1))


def _none(j, inputs, want, got):
  """Lowering-only entries have no results to judge."""


# --- JAX's own back-compat datasets ---------------------------------------------
# Their functions mostly build the operand inside the module (``iota``), output
# the raw results of ``lax.linalg`` (other orders than the cases here) and add
# batch dimensions. Each adapter below takes one matrix of the batch at a time,
# recovers the operand from the *recorded* results where the dataset has no
# input (A = V diag(w) V^-1, Q R, P^T L U, ...), and runs the checker above on
# the harness's own layout, so the invariants are the same ones.


def _per_matrix(core_rank: int, arrays: Sequence[np.ndarray]):
  """Index tuples over the batch dimensions of ``arrays[0]`` (a matrix has ``core_rank`` dims)."""
  first = np.asarray(arrays[0])
  return list(np.ndindex(*first.shape[:first.ndim - core_rank]))


def _jax_eig(j, inputs, want, got):
  """``lax.linalg.eig`` with both eigenvector sets: outputs (w, vl, vr)."""
  for i in _per_matrix(1, want):
    (w0, _, vr0), (w, vl, vr) = [[wide(np.asarray(x)[i]) for x in xs] for xs in (want, got)]
    a = vr0 @ np.diag(w0) @ np.linalg.inv(vr0)
    _eig(j, [a], [w0, vr0], [w, vr])
    j.residual("eig: A^H VL - VL diag(conj w)", _h(a) @ vl - vl * np.conj(w))


def _jax_eigh(j, inputs, want, got):
  """``lax.linalg.eigh``: outputs (v, w)."""
  for i in _per_matrix(1, [want[1]]):
    (v0, w0), (v, w) = [[wide(np.asarray(x)[i]) for x in xs] for xs in (want, got)]
    a = (v0 * w0) @ _h(v0)
    _eigh(j, [a], [np.asarray(want[1])[i], v0], [np.asarray(got[1])[i], v])


def _jax_qr(j, inputs, want, got):
  """``lax.linalg.qr`` of an operand built in the module: outputs (q, r)."""
  for i in _per_matrix(2, want):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    _qr(j, [wide(w[0]) @ wide(w[1])], w, g)


def _jax_lu(j, inputs, want, got):
  """``lax.linalg.lu`` of an operand built in the module: outputs (lu, pivots, permutation)."""
  for i in _per_matrix(2, want):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    lu0, perm0 = wide(w[0]), np.asarray(w[2])
    n = min(lu0.shape)
    l0 = np.tril(lu0[:, :n], -1) + np.eye(lu0.shape[0], n)
    a = np.zeros_like(lu0)
    a[perm0] = l0 @ np.triu(lu0[:n, :])
    _lu(j, [a], w, g)


def _jax_svd(j, inputs, want, got):
  """``lax.linalg.svd`` with ``compute_uv``: outputs (u, s, vh), batched."""
  for i in _per_matrix(1, [want[1]]):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    _svd(j, [np.asarray(inputs[0])[i]], w, g)


def _jax_tridiagonal(j, inputs, want, got):
  """``lax.linalg.tridiagonal``: outputs (a, d, e, taus); the operand's spectrum is the recorded T's."""
  for i in _per_matrix(1, [want[1]]):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    d0, e0 = wide(w[1]), wide(w[2])
    t0 = np.diag(d0).astype(np.complex128) + np.diag(e0, -1) + np.diag(np.conj(e0), 1)
    _tridiagonal(j, [t0], w, g)


# The built-in checkers' judging functions by name (``checkers.BUILTIN`` wraps each).
JUDGES: dict[str, Callable[..., None]] = {
    "allclose": _allclose,
    "cholesky": _cholesky,
    "qr": _qr,
    "eigh": _eigh,
    "eig": _eig,
    "svd": _svd,
    "lu": _lu,
    "tridiagonal": _tridiagonal,
    "hessenberg": _hessenberg,
    "schur": _schur,
    "top_k": _top_k,
    "jax_eig": _jax_eig,
    "jax_eigh": _jax_eigh,
    "jax_qr": _jax_qr,
    "jax_lu": _jax_lu,
    "jax_svd": _jax_svd,
    "jax_tridiagonal": _jax_tridiagonal,
    "none": _none,
}
