"""Checkers: judge replayed results against the recorded ones.

Results of many LAPACK routines are unique only up to a choice: eigenvectors up
to a phase, SVD and QR factors up to signs, Schur forms up to ordering and the
unitary factor, LU up to pivoting among ties. A bitwise or allclose comparison
would then report breaks that are not. Each checker states what is unique for
its routine (sorted spectra, singular values, absolute diagonals) and compares
that with the recorded result, and checks the rest through invariants on the
replayed result alone (reconstruction of the input, orthogonality, triangular
structure). Tolerances come from the entry's manifest (dtype-aware, chosen when
recording); invariant residuals are scaled by the input's size and magnitude.

A project adds its own checker with :func:`register_checker` in a case module
(the worker imports case modules before it replays), and names it in its
cases' ``checker=``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class Verdict:
  """The outcome of one comparison.

  ``ok``: the results are acceptable; ``exact``: every output is bitwise equal
  to the recorded one; ``max_abs_err``: the largest absolute difference seen in
  an output compared directly; ``problems``: one line per failed check, with
  numbers.
  """

  ok: bool
  exact: bool
  max_abs_err: float
  problems: tuple[str, ...] = ()

  def to_json(self) -> dict:
    return {"ok": self.ok, "exact": self.exact, "max_abs_err": self.max_abs_err,
            "problems": list(self.problems)}


class _Judge:
  """Collects problems and the largest direct difference while a checker runs."""

  def __init__(self, rtol: float, atol: float, scale: float = 1.0, size: int = 1):
    self.rtol, self.atol = rtol, atol
    self.residual_tol = atol + rtol * max(1.0, scale) * max(1, size)
    self.problems: list[str] = []
    self.max_abs_err = 0.0

  def close(self, what: str, want, got, norm: float = 0.0) -> None:
    """``got`` equals ``want`` within rtol/atol, elementwise; report counts and errors otherwise.

    ``norm``: a magnitude every element's error may be relative to (a spectrum's
    largest value: Weyl's bound moves each eigenvalue by up to the norm of the
    perturbation, so tiny eigenvalues get the absolute error of the largest).
    """
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape:
      self.problems.append(f"{what}: shape {got.shape}, recorded {want.shape}")
      return
    if want.size == 0:
      return
    w, g = _wide(want), _wide(got)
    err = np.abs(g - w)
    if not np.all(np.isfinite(err)):
      err = np.where(np.isnan(w) & np.isnan(g), 0.0, err)
    self.max_abs_err = max(self.max_abs_err, float(np.nanmax(err)) if err.size else 0.0)
    bad = ~(err <= self.atol + self.rtol * np.maximum(np.abs(w), norm))
    if np.any(bad):
      rel = err / np.maximum(np.abs(w), np.finfo(np.float64).tiny)
      self.problems.append(
          f"{what}: {int(bad.sum())} of {bad.size} elements differ beyond rtol={self.rtol:g}, "
          f"atol={self.atol:g}; max abs err {np.nanmax(err):.3g}, mean abs err {np.nanmean(err):.3g}, "
          f"max rel err {np.nanmax(rel):.3g}")

  def small(self, what: str, residual) -> None:
    """An invariant's residual is within the scaled tolerance."""
    residual = np.abs(_wide(np.asarray(residual)))
    worst = float(np.max(residual)) if residual.size else 0.0
    if not worst <= self.residual_tol:
      n_bad = int(np.sum(~(residual <= self.residual_tol)))
      self.problems.append(
          f"{what}: residual max {worst:.3g}, mean {float(np.mean(residual)):.3g} "
          f"({n_bad} of {residual.size} elements above the tolerance {self.residual_tol:.3g})")

  def require(self, what: str, condition: bool) -> None:
    if not condition:
      self.problems.append(what)


def _wide(x: np.ndarray) -> np.ndarray:
  if np.iscomplexobj(x):
    return x.astype(np.complex128)
  if x.dtype.kind in "fiub":
    return x.astype(np.float64)
  return x


def _h(x: np.ndarray) -> np.ndarray:
  return np.conj(np.swapaxes(x, -1, -2))


def _matched_distance(want: np.ndarray, got: np.ndarray) -> float:
  """Largest distance when each recorded eigenvalue is matched to its nearest unused replayed one."""
  remaining = list(_wide(got).ravel())
  worst = 0.0
  for w in sorted(_wide(want).ravel(), key=lambda z: (abs(z), np.real(z), np.imag(z))):
    dists = [abs(w - g) for g in remaining]
    i = int(np.argmin(dists))
    worst = max(worst, float(dists[i]))
    remaining.pop(i)
  return worst


def _spectra_match(j: _Judge, what: str, want, got) -> None:
  want, got = np.asarray(want).ravel(), np.asarray(got).ravel()
  if want.shape != got.shape:
    j.problems.append(f"{what}: {got.size} eigenvalues, recorded {want.size}")
    return
  dist = _matched_distance(want, got)
  tol = j.atol + j.rtol * max(1.0, float(np.max(np.abs(_wide(want)), initial=0.0)))
  j.max_abs_err = max(j.max_abs_err, dist)
  if not dist <= tol * max(1, want.size):
    j.problems.append(f"{what}: eigenvalues differ as a multiset by up to {dist:.3g} "
                      f"(tolerance {tol * max(1, want.size):.3g})")


def _largest(x) -> float:
  """The largest magnitude in ``x`` (0 for an empty array)."""
  return float(np.max(np.abs(_wide(np.asarray(x))), initial=0.0))


def _eye_like(m: np.ndarray) -> np.ndarray:
  return np.eye(m.shape[-1])


def _allclose(j, inputs, want, got):
  for i, (w, g) in enumerate(zip(want, got)):
    j.close(f"output {i}", w, g)


def _cholesky(j, inputs, want, got):
  _allclose(j, inputs, want, got)
  a, (l,) = _wide(inputs[0]), got
  j.small("cholesky: L L^H - A", _wide(l) @ _h(_wide(l)) - a)


def _qr(j, inputs, want, got):
  a, (q, r) = _wide(inputs[0]), [_wide(x) for x in got]
  j.small("qr: Q R - A", q @ r - a)
  j.small("qr: Q^H Q - I", _h(q) @ q - _eye_like(q))
  j.small("qr: R below the diagonal", np.tril(r, -1))
  j.close("qr: |diag R|", np.abs(np.diagonal(_wide(want[1]))), np.abs(np.diagonal(r)))


def _eigh(j, inputs, want, got):
  a, (w, v) = _wide(inputs[0]), [_wide(x) for x in got]
  j.require("eigh: eigenvalues are not sorted ascending", bool(np.all(np.diff(np.real(w)) >= 0)))
  j.close("eigh: eigenvalues", want[0], got[0], norm=_largest(want[0]))
  j.small("eigh: A V - V diag(w)", a @ v - v * w)
  j.small("eigh: V^H V - I", _h(v) @ v - _eye_like(v))


def _eig(j, inputs, want, got):
  a, (w, v) = _wide(inputs[0]), [_wide(x) for x in got]
  j.small("eig: A V - V diag(w)", a @ v - v * w)
  j.small("eig: column norms of V - 1", np.linalg.norm(v, axis=0) - 1)
  _spectra_match(j, "eig", want[0], got[0])


def _svd(j, inputs, want, got):
  a, (u, s, vh) = _wide(inputs[0]), [_wide(x) for x in got]
  j.require("svd: singular values are not sorted descending", bool(np.all(np.diff(s) <= 0)))
  j.close("svd: singular values", want[1], got[1], norm=_largest(want[1]))
  k = s.shape[-1]  # full_matrices=True gives square U and V^H; only k columns/rows pair with s
  j.small("svd: U diag(s) V^H - A", (u[:, :k] * s) @ vh[:k, :] - a)
  j.small("svd: U^H U - I", _h(u) @ u - _eye_like(u))
  j.small("svd: V^H V - I", vh @ _h(vh) - np.eye(vh.shape[-2]))


def _lu(j, inputs, want, got):
  a = _wide(inputs[0])
  lu, pivots, perm = got
  lu = _wide(lu)
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
  j.small("lu: L U - A[perm]", l @ u - a[perm])


def _tridiagonal(j, inputs, want, got):
  a = _wide(inputs[0])
  _, d, e, _ = got
  d, e = _wide(d), _wide(e)
  t = np.diag(d).astype(np.complex128) + np.diag(e, -1) + np.diag(np.conj(e), 1)
  j.small("tridiagonal: eigenvalues of T - eigenvalues of A",
          np.linalg.eigvalsh(t) - np.linalg.eigvalsh(a))
  j.close("tridiagonal: diagonal", want[1], got[1])
  j.close("tridiagonal: |off-diagonal|", np.abs(_wide(want[2])), np.abs(e))


def _hessenberg(j, inputs, want, got):
  a, (h, q) = _wide(inputs[0]), [_wide(x) for x in got]
  j.small("hessenberg: Q H Q^H - A", q @ h @ _h(q) - a)
  j.small("hessenberg: Q^H Q - I", _h(q) @ q - _eye_like(q))
  j.small("hessenberg: H below the first subdiagonal", np.tril(h, -2))


def _schur(j, inputs, want, got):
  a, (t, z) = _wide(inputs[0]), [_wide(x) for x in got]
  j.small("schur: Z T Z^H - A", z @ t @ _h(z) - a)
  j.small("schur: Z^H Z - I", _h(z) @ z - _eye_like(z))
  j.small("schur: T below the first subdiagonal", np.tril(t, -2))
  sub = np.abs(np.diagonal(t, -1))
  if np.iscomplexobj(got[0]):
    j.small("schur: complex T below the diagonal", sub)
  else:
    blocks = sub > j.residual_tol
    j.require("schur: real T has adjacent 2x2 blocks (two consecutive nonzero subdiagonal entries)",
              not bool(np.any(blocks[1:] & blocks[:-1])))
  _spectra_match(j, "schur", np.linalg.eigvals(_wide(want[0])), np.linalg.eigvals(t))


def _top_k(j, inputs, want, got):
  """Top-k along the last axis: ties may come back in another order, so compare sorted values."""
  a = _wide(inputs[0])
  values, indices = got
  idx = np.asarray(indices).astype(np.int64)
  j.require(f"top_k: indices outside 0..{a.shape[-1] - 1}",
            bool(np.all((idx >= 0) & (idx < a.shape[-1]))))
  if j.problems:
    return
  j.close("top_k: values - operand[indices]", np.take_along_axis(a, idx, axis=-1), values)
  j.close("top_k: sorted values", np.sort(_wide(want[0]), axis=-1), np.sort(_wide(values), axis=-1))


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
    (w0, _, vr0), (w, vl, vr) = [[_wide(np.asarray(x)[i]) for x in xs] for xs in (want, got)]
    a = vr0 @ np.diag(w0) @ np.linalg.inv(vr0)
    _eig(j, [a], [w0, vr0], [w, vr])
    j.small("eig: A^H VL - VL diag(conj w)", _h(a) @ vl - vl * np.conj(w))


def _jax_eigh(j, inputs, want, got):
  """``lax.linalg.eigh``: outputs (v, w)."""
  for i in _per_matrix(1, [want[1]]):
    (v0, w0), (v, w) = [[_wide(np.asarray(x)[i]) for x in xs] for xs in (want, got)]
    a = (v0 * w0) @ _h(v0)
    _eigh(j, [a], [np.asarray(want[1])[i], v0], [np.asarray(got[1])[i], v])


def _jax_qr(j, inputs, want, got):
  """``lax.linalg.qr`` of an operand built in the module: outputs (q, r)."""
  for i in _per_matrix(2, want):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    _qr(j, [_wide(w[0]) @ _wide(w[1])], w, g)


def _jax_lu(j, inputs, want, got):
  """``lax.linalg.lu`` of an operand built in the module: outputs (lu, pivots, permutation)."""
  for i in _per_matrix(2, want):
    w, g = [np.asarray(x)[i] for x in want], [np.asarray(x)[i] for x in got]
    lu0, perm0 = _wide(w[0]), np.asarray(w[2])
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
    d0, e0 = _wide(w[1]), _wide(w[2])
    t0 = np.diag(d0).astype(np.complex128) + np.diag(e0, -1) + np.diag(np.conj(e0), 1)
    _tridiagonal(j, [t0], w, g)


CHECKERS: dict[str, Callable] = {
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


# A project's checker: (inputs, expected, actual, rtol, atol) -> problems (empty when acceptable).
UserChecker = Callable[[Sequence[np.ndarray], Sequence[np.ndarray], Sequence[np.ndarray], float,
                        float], Sequence[str]]


def register_checker(name: str, checker: UserChecker) -> None:
  """Make ``checker`` available as ``Case(checker=name)``.

  ``checker(inputs, expected, actual, rtol, atol)`` returns one line per problem
  found (with numbers), or nothing when ``actual`` is acceptable. A name taken by
  a built-in checker, or by another function, is refused.
  """
  if not isinstance(name, str) or not name.isidentifier():
    raise ValueError(f"checker name {name!r}: use an identifier such as 'my_sorted_close'")
  existing = CHECKERS.get(name)
  if existing is not None and getattr(existing, "user_checker", None) is not checker:
    raise ValueError(f"checker {name!r} is already registered; pick another name")

  def run(j: _Judge, inputs, want, got) -> None:
    j.problems.extend(str(p) for p in checker(inputs, want, got, j.rtol, j.atol))

  run.user_checker = checker  # type: ignore[attr-defined]
  CHECKERS[name] = run


def _bitwise_equal(want: np.ndarray, got: np.ndarray) -> bool:
  return (want.shape == got.shape and want.dtype == got.dtype
          and want.tobytes() == got.tobytes())


def check(mode: str, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
          actual: Sequence[np.ndarray], *, rtol: float, atol: float) -> Verdict:
  """Judge ``actual`` against ``expected`` with the checker ``mode``."""
  if mode not in CHECKERS:
    return Verdict(False, False, 0.0,
                   (f"unknown checker {mode!r} in the manifest; known: {sorted(CHECKERS)}",))
  expected = [np.asarray(x) for x in expected]
  actual = [np.asarray(x) for x in actual]
  # Residuals scale with the operand; a module that builds its operand itself
  # (jax's corpus) leaves only the recorded outputs to measure it by.
  sized = [x for x in inputs if np.asarray(x).dtype.kind in "fc" and np.asarray(x).size] or [
      x for x in expected if x.dtype.kind in "fc" and x.size]
  scale = max((float(np.max(np.abs(_wide(np.asarray(x))))) for x in sized), default=1.0)
  size = max((max(np.shape(x)) for x in (inputs or expected) if np.ndim(x)), default=1)
  j = _Judge(rtol, atol, scale, size)
  if len(actual) != len(expected):
    j.problems.append(f"{len(actual)} outputs, recorded {len(expected)}")
  else:
    for i, (w, g) in enumerate(zip(expected, actual)):
      if w.shape != g.shape or w.dtype != g.dtype:
        j.problems.append(f"output {i}: {g.dtype}{list(g.shape)}, recorded {w.dtype}{list(w.shape)}")
  if not j.problems:
    CHECKERS[mode](j, inputs, expected, actual)
  exact = (len(actual) == len(expected)
           and all(_bitwise_equal(w, g) for w, g in zip(expected, actual)))
  return Verdict(not j.problems, exact, j.max_abs_err, tuple(j.problems))
