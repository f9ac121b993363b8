"""The harness checkers accept every valid answer of non-unique factorizations and reject wrong ones."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sl

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.harness import checkers# noqa: E402

RTOL, ATOL = 1e-10, 1e-12


def _rng(seed):
  return np.random.RandomState(seed)


def _general(seed, n=4, complex_=False):
  r = _rng(seed)
  a = r.standard_normal((n, n))
  if complex_:
    a = a + 1j * r.standard_normal((n, n))
  return a


def _hermitian(seed, complex_=False):
  a = _general(seed, complex_=complex_)
  return (a + a.conj().T) / 2


def _phases(n, seed, complex_):
  r = _rng(seed)
  if complex_:
    return np.exp(1j * r.uniform(0, 2 * np.pi, n))
  return np.where(r.standard_normal(n) > 0, 1.0, -1.0)


def _check(mode, inputs, expected, actual):
  return checkers.check(mode, inputs, expected, actual, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("complex_", [False, True])
def test_eigh_accepts_eigenvectors_up_to_phase(complex_):
  a = _hermitian(1, complex_)
  w, v = np.linalg.eigh(a)
  v2 = v * _phases(4, 2, complex_)
  verdict = _check("eigh", [a], [w, v], [w, v2])
  assert verdict.ok, verdict.problems
  assert not verdict.exact


def test_eigh_rejects_changed_eigenvalues_with_numbers():
  a = _hermitian(3)
  w, v = np.linalg.eigh(a)
  w_bad = w.copy()
  w_bad[2] += 1e-3
  verdict = _check("eigh", [a], [w, v], [w_bad, v])
  assert not verdict.ok
  text = "\n".join(verdict.problems)
  assert "eigh: eigenvalues: 1 of 4 elements differ" in text
  assert "max abs err 0.001" in text and "mean abs err" in text and "max rel err" in text
  assert "A V - V diag(w)" in text  # the reconstruction with the wrong eigenvalue fails too


def test_eigh_rejects_unsorted_eigenvalues():
  a = _hermitian(4)
  w, v = np.linalg.eigh(a)
  verdict = _check("eigh", [a], [w, v], [w[::-1], v[:, ::-1]])
  assert not verdict.ok
  assert any("not sorted" in p for p in verdict.problems)


@pytest.mark.parametrize("complex_", [False, True])
def test_svd_accepts_sign_and_phase_flips(complex_):
  a = _general(5, complex_=complex_)
  u, s, vh = np.linalg.svd(a, full_matrices=False)
  d = _phases(4, 6, complex_)
  verdict = _check("svd", [a], [u, s, vh], [u * d, s, (vh.T * d.conj()).T])
  assert verdict.ok, verdict.problems


def test_svd_rejects_a_factor_that_does_not_reconstruct():
  a = _general(7)
  u, s, vh = np.linalg.svd(a, full_matrices=False)
  u2 = u.copy()
  u2[:, 0] *= -1  # flipped without flipping vh: U diag(s) V^H no longer equals A
  verdict = _check("svd", [a], [u, s, vh], [u2, s, vh])
  assert not verdict.ok
  assert any("U diag(s) V^H - A" in p for p in verdict.problems)


@pytest.mark.parametrize("complex_", [False, True])
def test_qr_accepts_signs(complex_):
  a = _general(8, complex_=complex_)
  q, r = np.linalg.qr(a)
  d = _phases(4, 9, complex_)
  verdict = _check("qr", [a], [q, r], [q * d, (r.T * d.conj()).T])
  assert verdict.ok, verdict.problems


def test_qr_rejects_non_orthogonal_q():
  a = _general(10)
  q, r = np.linalg.qr(a)
  q2, r2 = q * 2.0, r / 2.0  # still reconstructs A, but Q is not orthogonal
  verdict = _check("qr", [a], [q, r], [q2, r2])
  assert not verdict.ok
  assert any("Q^H Q - I" in p for p in verdict.problems)


@pytest.mark.parametrize("complex_", [False, True])
def test_eig_accepts_reordered_eigenvalues_and_scaled_vectors(complex_):
  a = _general(11, complex_=complex_)
  w, v = np.linalg.eig(a)
  perm = [2, 0, 3, 1]
  phases = np.exp(1j * np.arange(4))
  verdict = _check("eig", [a], [w, v], [w[perm], v[:, perm] * phases])
  assert verdict.ok, verdict.problems


def test_eig_rejects_a_changed_spectrum():
  a = _general(12)
  w, v = np.linalg.eig(a)
  b = a + 1e-3 * np.eye(4)
  w2, v2 = np.linalg.eig(b)
  verdict = _check("eig", [a], [w, v], [w2, v2])
  assert not verdict.ok


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_accepts_another_ordering_of_the_form(output):
  a = _general(13)
  t, z = sl.schur(a, output=output)
  t2, z2, _ = sl.schur(a, output=output, sort="lhp" if output == "real" else "iuc")
  verdict = _check("schur", [a], [t, z], [t2, z2])
  assert verdict.ok, verdict.problems


def test_schur_rejects_a_non_triangular_t():
  a = _general(14, complex_=True)
  t, z = sl.schur(a, output="complex")
  t2 = t.copy()
  t2[3, 0] = 0.5
  verdict = _check("schur", [a], [t, z], [t2, z])
  assert not verdict.ok


def _lu_outputs(a):
  """LU of ``a`` as lax.linalg.lu returns it: packed factors, LAPACK pivots, permutation."""
  p, l, u = sl.lu(a)
  perm = np.argmax(p, axis=0)
  lu = np.tril(l, -1) + u
  pivots, cur = [], list(range(4))
  for i in range(4):
    j = cur.index(perm[i])
    pivots.append(j)
    cur[i], cur[j] = cur[j], cur[i]
  return [lu, np.array(pivots, np.int32), perm.astype(np.int32)]


def test_lu_accepts_a_consistent_factorization_and_rejects_a_wrong_permutation():
  a = _general(15)
  out = _lu_outputs(a)
  assert _check("lu", [a], out, out).ok
  bad = [out[0], out[1], out[2][[1, 0, 2, 3]]]
  verdict = _check("lu", [a], out, bad)
  assert not verdict.ok
  assert any("pivots" in p for p in verdict.problems)


def test_allclose_counts_differing_elements():
  x = np.arange(10, dtype=np.float64)
  y = x.copy()
  y[[3, 7]] += 1.0
  verdict = _check("allclose", [x], [x], [y])
  assert not verdict.ok
  assert "output 0: 2 of 10 elements differ" in verdict.problems[0]
  assert verdict.max_abs_err == pytest.approx(1.0)


def test_shape_and_dtype_changes_are_reported_before_values():
  x = np.ones((2, 3), np.float32)
  verdict = _check("allclose", [x], [x], [x.astype(np.float64)])
  assert not verdict.ok and "float64[2, 3], recorded float32[2, 3]" in verdict.problems[0]
  verdict = _check("allclose", [x], [x, x], [x])
  assert not verdict.ok and "1 outputs, recorded 2" in verdict.problems[0]


def test_unknown_checker_is_a_failure_not_a_crash():
  verdict = _check("no_such_checker", [], [], [])
  assert not verdict.ok and "unknown checker 'no_such_checker'" in verdict.problems[0]


def test_bitwise_equal_results_are_exact():
  a = _hermitian(16)
  w, v = np.linalg.eigh(a)
  verdict = _check("eigh", [a], [w, v], [w.copy(), v.copy()])
  assert verdict.ok and verdict.exact and verdict.max_abs_err == 0.0


def test_svd_accepts_full_matrices_of_a_non_square_operand():
  a = _rng(7).standard_normal((5, 3))
  u, s, vh = np.linalg.svd(a, full_matrices=True)
  assert checkers.check("svd", [a], [u, s, vh], [-u, s, -vh], rtol=RTOL, atol=ATOL).ok


def test_near_zero_eigenvalues_of_a_singular_operand_are_judged_against_the_largest():
  a = np.arange(16.0).reshape(4, 4)
  a = (a + a.T) / 2
  w, v = np.linalg.eigh(a)
  rounding = np.array([1e-9, -1e-9, 0.0, 0.0])  # far beyond rtol * |w| for the zero eigenvalues
  assert checkers.check("eigh", [a], [w, v], [w + rounding, v], rtol=1e-8, atol=1e-12).ok
  assert not checkers.check("eigh", [a], [w, v], [w + 1e-3, v], rtol=1e-8, atol=1e-12).ok


def test_top_k_accepts_ties_in_another_order_and_rejects_wrong_indices():
  a = np.array([[3.0, 1.0, 3.0, 2.0]])
  want = [np.array([[3.0, 3.0]]), np.array([[0, 2]], np.int32)]
  assert checkers.check("top_k", [a], want, [want[0], np.array([[2, 0]], np.int32)],
                        rtol=RTOL, atol=ATOL).ok
  bad = checkers.check("top_k", [a], want, [want[0], np.array([[1, 2]], np.int32)], rtol=RTOL, atol=ATOL)
  assert not bad.ok and "operand[indices]" in bad.problems[0]


def test_top_k_without_an_input_compares_the_sorted_values_of_each_output_pair():
  # jax's approx_top_k datasets build their operand inside the module and return two pairs.
  want = [np.array([[3.0, 3.0]]), np.array([[0, 2]], np.int32),
          np.array([[5.0, 4.0]]), np.array([[1, 3]], np.int32)]
  ties = [want[0], np.array([[2, 0]], np.int32), np.array([[4.0, 5.0]]), want[3]]
  assert checkers.check("top_k", [], want, ties, rtol=RTOL, atol=ATOL).ok
  wrong = checkers.check("top_k", [], want, [want[0], want[1], np.array([[5.0, 3.0]]), want[3]],
                         rtol=RTOL, atol=ATOL)
  assert not wrong.ok and "sorted values of output 2" in wrong.problems[0]


@pytest.mark.parametrize("complex_", [False, True])
def test_jax_layout_checkers_recover_the_operand_from_the_recorded_results(complex_):
  a = _general(11, complex_=complex_)
  q, r = np.linalg.qr(a)
  signs = _phases(4, 12, complex_)
  assert checkers.check("jax_qr", [], [q, r], [q * signs, np.conj(signs)[:, None] * r],
                        rtol=RTOL, atol=ATOL).ok
  assert not checkers.check("jax_qr", [], [q, r], [q, 2 * r], rtol=RTOL, atol=ATOL).ok
  h = _hermitian(13, complex_=complex_)
  w, v = np.linalg.eigh(h)
  batch_v, batch_w = np.stack([v, v]), np.stack([w, w])
  flipped = np.stack([v, v * _phases(4, 14, complex_)])
  assert checkers.check("jax_eigh", [], [batch_v, batch_w], [flipped, batch_w], rtol=RTOL, atol=ATOL).ok
  assert not checkers.check("jax_eigh", [], [batch_v, batch_w], [flipped, batch_w[::-1] * 2],
                            rtol=RTOL, atol=ATOL).ok


@pytest.mark.parametrize("golden", [
    np.full(16, np.nan, np.float32),
    np.array([-np.inf, 0.5, np.inf, np.nan], np.float32),
    np.array([np.nan + 1j, complex(np.inf, 2.0), 1 + 1j], np.complex64),
], ids=["all_nan", "mixed", "complex"])
def test_allclose_matches_non_finite_values_as_values(golden):
  verdict = checkers.check("allclose", [], [golden], [golden.copy()], rtol=1e-6, atol=1e-6)
  assert verdict.ok, verdict.problems
  assert verdict.max_abs_err == 0.0


def test_allclose_names_non_finite_values_where_the_golden_differs():
  golden = np.array([1.0, 2.0, 3.0, 4.0, np.inf, np.nan, -np.inf], np.float32)
  replay = np.array([np.nan, np.nan, np.nan, np.inf, -np.inf, 6.0, -np.inf], np.float32)
  verdict = checkers.check("allclose", [], [golden], [replay], rtol=1e-6, atol=1e-6)
  assert not verdict.ok
  (line,) = verdict.problems
  assert "3 NaN where the golden is finite" in line
  assert "1 +inf where the golden is finite" in line
  assert "1 -inf where the golden is +inf" in line
  assert "1 finite where the golden is NaN" in line
  # The matched -inf and no finite pair differ: no error figures, and none of them infinite.
  assert "beyond rtol" not in line
  assert verdict.max_abs_err == 0.0


def test_allclose_figures_leave_matched_non_finite_elements_out():
  golden = np.array([np.nan, np.inf, 1.0, 2.0])
  replay = np.array([np.nan, np.inf, 1.5, 2.0])
  verdict = checkers.check("allclose", [], [golden], [replay], rtol=1e-6, atol=1e-6)
  (line,) = verdict.problems
  assert line.startswith("output 0: 1 of 4 elements differ beyond")
  assert "max abs err 0.5" in line and "nan" not in line.lower()
  assert verdict.max_abs_err == 0.5


def test_nonfinite_counts_name_each_class_present():
  assert checkers.nonfinite_counts(np.array([np.nan, np.nan, np.inf, -np.inf, 1.0])) == {
      "NaN": 2, "+inf": 1, "-inf": 1}
  assert checkers.nonfinite_counts(np.arange(3)) == {}


def _with_vjp(paths, *cotangents):
  """Each output's path and tolerances, the function's then its VJP's (as an entry names them)."""
  return [checkers.OutputTolerance(p, RTOL, ATOL) for p in paths] + [
      checkers.OutputTolerance(f"vjp1:args[{i}]", RTOL, ATOL) for i in range(len(cotangents))]


@pytest.mark.parametrize("mode", ["eigh", "cholesky"])
def test_structured_checkers_judge_the_function_outputs_and_a_vjp_by_tolerance(mode):
  a = _hermitian(5) + 8 * np.eye(4)
  primal = list(np.linalg.eigh(a)) if mode == "eigh" else [np.linalg.cholesky(a)]
  paths = ["output[0]", "output[1]"][:len(primal)]
  ct = _rng(6).standard_normal((4, 4))
  outputs = _with_vjp(paths, ct)
  same = checkers.BUILTIN.check(mode, [a], [*primal, ct], [*primal, ct.copy()], rtol=RTOL,
                                atol=ATOL, outputs=outputs)
  assert same.ok and same.exact, same.problems
  off = checkers.BUILTIN.check(mode, [a], [*primal, ct], [*primal, ct + 1e-3], rtol=RTOL,
                               atol=ATOL, outputs=outputs)
  assert not off.ok
  assert [p.split(":")[0] for p in off.problems] == ["VJP output args[0] (order 1)"]
  # The structure of the function's outputs is still judged beside the VJP's.
  bad = [p.copy() for p in primal]
  bad[-1][0, 0] += 1.0
  broken = checkers.BUILTIN.check(mode, [a], [*primal, ct], [*bad, ct], rtol=RTOL, atol=ATOL,
                                  outputs=outputs)
  assert not broken.ok
  assert all(not p.startswith("VJP output") for p in broken.problems), broken.problems
