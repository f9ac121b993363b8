"""Built-in and project checkers share one protocol, and a project's registry holds its own.

A checker is called as ``checker(inputs, expected, actual, rtol=, atol=)`` and returns a
``Verdict``; the judging helpers (``Judge``, ``error_figures``) are what the built-in
ones are written with. A case module declares its checkers in ``CHECKERS``; only its
project's registry holds them.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from jaxport.errors import GoldenDataError
from jaxport.harness import Case, CaseRegistry, Judge, Verdict, checkers, judged, register_checker

A = np.arange(1.0, 10.0).reshape(3, 3)


def test_a_builtin_checker_is_called_as_every_checker_is():
  qr = checkers.BUILTIN["qr"]
  q, r = np.linalg.qr(A)
  verdict = qr([A], [q, r], [-q, -r], rtol=1e-10, atol=1e-10)
  assert isinstance(verdict, Verdict) and verdict.ok and not verdict.exact
  assert verdict == checkers.check("qr", [A], [q, r], [-q, -r], rtol=1e-10, atol=1e-10)
  assert not qr([A], [q, r], [q, 2 * r], rtol=1e-10, atol=1e-10).ok


def test_a_project_checker_returning_a_verdict_is_judged_by_its_registry():
  def sums_match(inputs, expected, actual, *, rtol, atol):
    diff = abs(float(np.sum(actual[0]) - np.sum(expected[0])))
    return Verdict(diff <= atol, True, diff, () if diff <= atol else (f"sums differ by {diff:g}",))

  registry = checkers.project_registry()
  registry.register("sums_match", sums_match)
  shuffled = registry.check("sums_match", [], [A], [A[::-1]], rtol=0.0, atol=1e-9)
  # Acceptable, but not bitwise equal: the registry sets exact, whatever the checker claims.
  assert shuffled.ok and not shuffled.exact
  off = registry.check("sums_match", [], [A], [A + 1], rtol=0.0, atol=1e-9)
  assert off.problems == ("sums differ by 9",) and not off.ok
  assert "sums_match" not in checkers.project_registry(), "another project does not see it"


def test_a_checker_that_returns_no_verdict_fails_and_says_so():
  registry = checkers.project_registry()
  registry.register("forgetful", lambda inputs, expected, actual, *, rtol, atol: None)
  verdict = registry.check("forgetful", [], [A], [A], rtol=0.0, atol=0.0)
  assert not verdict.ok
  assert "checker 'forgetful' returned NoneType, not a jaxport.harness.Verdict" in verdict.problems[0]


def test_an_unknown_checker_name_is_a_failed_verdict_listing_the_known_ones():
  verdict = checkers.project_registry().check("allclos", [], [A], [A], rtol=0.0, atol=0.0)
  assert not verdict.ok and "unknown checker 'allclos'" in verdict.problems[0]
  assert "'allclose'" in verdict.problems[0]


def test_judged_gives_a_judging_function_the_shape_checks_and_the_scaled_residual():
  @judged
  def symmetric(j: Judge, inputs, expected, actual):
    j.close("values", expected[0], actual[0])
    j.residual("symmetry", actual[0] - actual[0].T)

  s = A + A.T
  assert symmetric([s], [s], [s], rtol=1e-12, atol=1e-12).exact
  skewed = s.copy()
  skewed[0, 1] += 1.0
  verdict = symmetric([s], [s], [skewed], rtol=1e-12, atol=1e-12)
  assert verdict.max_abs_err == 1.0
  assert verdict.problems[0].startswith("values: 1 of 9 elements differ beyond rtol=1e-12")
  assert verdict.problems[1].startswith("symmetry: residual max 1")
  wrong_shape = symmetric([s], [s], [s[:2]], rtol=1e-12, atol=1e-12)
  assert wrong_shape.problems == ("output 0: float64[2, 3], recorded float64[3, 3]",)


def test_error_figures_measure_one_array_against_the_recorded_one():
  figures = checkers.error_figures(np.array([1.0, 2.0, np.nan]), np.array([1.5, 2.0, np.nan]))
  # NaN against NaN is no error: it counts as 0 in the mean.
  assert (figures.max_abs, figures.max_rel) == (0.5, 0.5)
  assert figures.mean_abs == pytest.approx(0.5 / 3)
  with pytest.raises(ValueError, match=r"shapes \(2,\) and \(3,\) differ"):
    checkers.error_figures(np.zeros(2), np.zeros(3))


def test_relative_error_leaves_out_elements_recorded_as_zero():
  import ml_dtypes
  some_zero = checkers.error_figures(np.array([0.0, 4.0]), np.array([1.0, 5.0]))
  assert (some_zero.max_abs, some_zero.max_rel) == (1.0, 0.25)
  zeros = np.zeros(4, ml_dtypes.bfloat16)
  all_zero = checkers.error_figures(zeros, np.full(4, 0.5, ml_dtypes.bfloat16))
  assert all_zero.max_rel is None and all_zero.max_abs == 0.5
  assert "max rel err not computed (every recorded element is zero)" in all_zero.text()
  verdict = checkers.BUILTIN["allclose"]([zeros], [zeros], [zeros + 1], rtol=1e-3, atol=1e-3)
  assert "not computed" in verdict.problems[0] and "e+307" not in verdict.problems[0]


def test_a_registry_refuses_a_taken_name_but_takes_the_same_checker_twice():
  registry = checkers.project_registry()

  def mine(inputs, expected, actual, *, rtol, atol):
    return Verdict(True, False, 0.0)

  registry.register("mine", mine)
  registry.register("mine", mine)
  with pytest.raises(ValueError, match="checker 'mine' is already registered"):
    registry.register("mine", lambda *a, **k: None)
  with pytest.raises(ValueError, match="checker 'allclose' is already registered"):
    registry.register("allclose", mine)
  for bad in ("not a name", "class", "\u00ff", "a" * 65, "x\x1b[31m"):
    with pytest.raises(ValueError, match="use an ASCII identifier"):
      registry.register(bad, mine)
  with pytest.raises(ValueError, match="holds the built-in checkers only"):
    checkers.BUILTIN.register("extra", mine)


def test_register_checker_still_adds_a_problem_lines_checker_everywhere():
  def within_one(inputs, expected, actual, rtol, atol):
    return [f"off by {np.max(np.abs(actual[0] - expected[0])):g}"] if np.any(
        np.abs(actual[0] - expected[0]) > 1) else []

  register_checker("legacy_within_one", within_one)
  register_checker("legacy_within_one", within_one)  # a case module imported twice
  assert checkers.check("legacy_within_one", [], [A], [A + 0.5], rtol=0, atol=0).ok
  assert checkers.project_registry().check(
      "legacy_within_one", [], [A], [A + 2], rtol=0, atol=0).problems == ("off by 2",)
  with pytest.raises(ValueError, match="already registered"):
    register_checker("legacy_within_one", lambda *a: [])


def _case_module(tmp_path, monkeypatch, name: str, body: str) -> str:
  (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
  monkeypatch.syspath_prepend(str(tmp_path))
  return name


def test_a_case_modules_checkers_are_its_projects(tmp_path, monkeypatch):
  name = _case_module(tmp_path, monkeypatch, "own_checker_cases", """
      from jaxport.harness import Case, Verdict

      def never_negative(inputs, expected, actual, *, rtol, atol):
        low = float(actual[0].min())
        return Verdict(low >= 0, False, 0.0, () if low >= 0 else (f"minimum {low:g}",))

      CHECKERS = {"never_negative": never_negative}

      def cases():
        return [Case("abs", "f", abs, lambda: ((), {}), checker="never_negative")]
  """)
  registry = CaseRegistry((name,))
  assert registry.case("abs").checker in registry.checkers
  assert registry.checkers.check("never_negative", [], [A], [-A], rtol=0, atol=0).problems == (
      "minimum -9",)
  assert "never_negative" not in checkers.project_registry()


def test_a_case_modules_checkers_must_be_a_mapping_of_checkers(tmp_path, monkeypatch):
  name = _case_module(tmp_path, monkeypatch, "bad_checker_cases", """
      CHECKERS = ["never_negative"]

      def cases():
        return []
  """)
  with pytest.raises(GoldenDataError, match="CHECKERS is a list; make it a dict"):
    CaseRegistry((name,)).checkers


def test_the_case_registry_refuses_an_unknown_platform_naming_the_case(tmp_path, monkeypatch):
  name = _case_module(tmp_path, monkeypatch, "gpu_cases", """
      from jaxport.harness import Case

      def cases():
        return [Case("on_gpu", "f", abs, lambda: ((), {}), host_platform="gpu", platforms=("gpu",))]
  """)
  with pytest.raises(GoldenDataError, match=r"case on_gpu of gpu_cases: unknown platform 'gpu'"):
    CaseRegistry((name,)).by_id
  assert isinstance(Case("x", "f", abs, lambda: ((), {})), Case)
