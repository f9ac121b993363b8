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

Built-in and project checkers are the same thing: a :class:`Checker`, called as
``checker(inputs, expected, actual, rtol=, atol=)`` and returning a
:class:`Verdict`. Most are written as a judging function over a :class:`Judge`
(its error figures, residuals and requirements are the public helpers) and wrapped
with :func:`judged`. A project's registry (:class:`CheckerRegistry`) holds the
built-in checkers (:data:`BUILTIN`), those added with :func:`register_checker`, and
those its case modules declare in a ``CHECKERS`` mapping; the case registry builds it.

The built-in checkers' judging functions live in ``_builtin_judges``; each judges the
function's outputs, and a VJP's outputs are compared by tolerance (:class:`Judged`).

This module and ``_builtin_judges`` import only numpy: the scripts that replay entries inside
an older jax release's virtual environment, where jaxport is not installed, load this one by
its path, and it loads its sibling the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import keyword
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np


def _sibling(name: str):
  """The numpy-only module ``name`` beside this file: imported from the package, or, where
  this file was loaded by its path (an older release's environment, without jaxport), loaded
  by its path as well."""
  if __package__:
    return importlib.import_module(f"{__package__}.{name}")
  qualified = f"{__name__}_{name}"
  if qualified not in sys.modules:
    spec = importlib.util.spec_from_file_location(
        qualified, os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
  return sys.modules[qualified]


_judges = _sibling("_builtin_judges")
wide = _judges.wide


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

  # Written by hand, not by jaxport._record_codec: this module loads by path with numpy alone
  # (the in-release replayer loads it without jaxport installed).
  def to_json(self) -> dict:
    return {"ok": self.ok, "exact": self.exact, "max_abs_err": self.max_abs_err,
            "problems": list(self.problems)}


class Checker(Protocol):
  """What judges one replay: the flat input, recorded and replayed arrays in, a Verdict out.

  ``inputs``, ``expected`` (recorded) and ``actual`` (replayed) are the leaves of the
  case's ``(args, kwargs)`` and of its results, in pytree order (a VJP's outputs after
  the results). The registry that calls it sets the verdict's ``exact`` from bitwise
  equality, whatever the checker says.
  """

  def __call__(self, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
               actual: Sequence[np.ndarray], *, rtol: float, atol: float) -> Verdict: ...


def _abs_errors(want: np.ndarray, got: np.ndarray) -> np.ndarray:
  """Elementwise ``|got - want|`` in wide precision; a NaN where both are NaN counts as 0."""
  w, g = wide(want), wide(got)
  err = np.abs(g - w)
  if not np.all(np.isfinite(err)):
    err = np.where(np.isnan(w) & np.isnan(g), 0.0, err)
  return err


def _finite(x: np.ndarray) -> np.ndarray:
  """Where ``x`` is finite (every element of an integer or boolean array is)."""
  return np.isfinite(x) if x.dtype.kind in "fc" else np.ones(x.shape, bool)


def _value_kind(x: np.ndarray) -> np.ndarray:
  """Each element of ``x`` named as a value class: finite, NaN, +inf, -inf (a complex element
  with an infinite part and no NaN is ``inf``)."""
  kinds = np.full(x.shape, "finite", dtype=object)
  if x.dtype.kind not in "fc":
    return kinds
  if x.dtype.kind == "c":
    kinds[np.isinf(x)] = "inf"
  else:
    kinds[np.isposinf(x)] = "+inf"
    kinds[np.isneginf(x)] = "-inf"
  kinds[np.isnan(x)] = "NaN"
  return kinds


def _nonfinite_differences(want: np.ndarray, got: np.ndarray, finite: np.ndarray) -> list[str]:
  """One phrase per kind of non-finite difference between ``got`` and the recorded ``want``
  (``3 NaN where the golden is finite``); non-finite elements that match (NaN and NaN, the
  same infinity, a complex element equal part by part) are no difference."""
  if np.all(finite):
    return []
  if want.dtype.kind == "c":
    same = _same_parts(want.real, got.real) & _same_parts(want.imag, got.imag)
  else:
    same = _same_parts(want, got)
  differ = ~finite & ~same
  if not np.any(differ):
    return []
  pairs: dict[tuple[str, str], int] = {}
  for k_got, k_want in zip(_value_kind(got)[differ], _value_kind(want)[differ]):
    pairs[(k_got, k_want)] = pairs.get((k_got, k_want), 0) + 1
  out = []
  for (k_got, k_want), n in sorted(pairs.items()):
    if k_got == k_want:  # complex: the same class, other values
      out.append(f"{n} {k_got} element(s) that differ from the golden's {k_want}")
    else:
      out.append(f"{n} {k_got} where the golden is {k_want}")
  return out


def _same_parts(want: np.ndarray, got: np.ndarray) -> np.ndarray:
  """Where two real arrays hold the same value, NaN counting as equal to NaN."""
  return (want == got) | (np.isnan(want) & np.isnan(got))


def nonfinite_counts(x) -> dict[str, int]:
  """How many NaN, +inf and -inf ``x`` holds, only the classes present (a complex element
  with a NaN part counts as NaN, else one with an infinite part as ``inf``)."""
  x = np.asarray(x)
  if x.dtype.kind not in "fc" or x.size == 0:
    return {}
  kinds = _value_kind(wide(x))
  out = {}
  for name in ("NaN", "+inf", "-inf", "inf"):
    n = int(np.sum(kinds == name))
    if n:
      out[name] = n
  return out


@dataclasses.dataclass(frozen=True)
class ErrorFigures:
  """How far one replayed array is from the recorded one: the largest and mean absolute
  error, and the largest error relative to the recorded element, over the elements recorded
  nonzero (None where every recorded element is zero: no error is relative to zero)."""

  max_abs: float
  mean_abs: float
  max_rel: float | None

  def text(self) -> str:
    """The figures as a problem line states them."""
    rel = ("max rel err not computed (every recorded element is zero)" if self.max_rel is None
           else f"max rel err {self.max_rel:.3g}")
    return f"max abs err {self.max_abs:.3g}, mean abs err {self.mean_abs:.3g}, {rel}"


def error_figures(expected, actual) -> ErrorFigures:
  """The error figures of ``actual`` against ``expected`` (arrays of one shape; NaN where
  both are NaN is no error)."""
  want, got = np.asarray(expected), np.asarray(actual)
  if want.shape != got.shape:
    raise ValueError(f"error_figures: shapes {want.shape} and {got.shape} differ; compare "
                     "arrays of one shape")
  if want.size == 0:
    return ErrorFigures(0.0, 0.0, 0.0)
  err = _abs_errors(want, got)
  magnitude = np.abs(wide(want))
  nonzero = magnitude != 0
  rel = (float(np.nanmax(err[nonzero] / magnitude[nonzero], initial=0.0))
         if np.any(nonzero) else None)
  return ErrorFigures(float(np.nanmax(err)), float(np.nanmean(err)), rel)


def bitwise_equal(expected: np.ndarray, actual: np.ndarray) -> bool:
  """Whether two arrays have the same shape, dtype and bytes."""
  want, got = np.asarray(expected), np.asarray(actual)
  return (want.shape == got.shape and want.dtype == got.dtype
          and want.tobytes() == got.tobytes())


def _all_bitwise_equal(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> bool:
  return len(actual) == len(expected) and all(
      bitwise_equal(w, g) for w, g in zip(expected, actual))


@dataclasses.dataclass(frozen=True)
class OutputTolerance:
  """One output's path (``output[0]``; ``vjp1:args[0]`` for the VJP's of order 1 for the
  input ``args[0]``) and the tolerances it is compared with."""

  path: str
  rtol: float
  atol: float


_VJP_PATH = re.compile(r"vjp([0-9]+):(.*)")


def output_label(path: str) -> str:
  """An output path as problems name it: a VJP's output says so, with its order."""
  vjp = _VJP_PATH.fullmatch(path)
  if vjp is None:
    return path
  return f"VJP output {vjp.group(2)} (order {vjp.group(1)})"


class Judge:
  """Collects problems and the largest direct difference while a checker runs.

  ``close`` compares a replayed array with the recorded one elementwise; ``residual``
  checks that an invariant's residual (``Q R - A``, ``Q^H Q - I``) is within the
  tolerance scaled by the operand's magnitude ``scale`` and size ``size``;
  ``same_spectrum`` compares eigenvalues as a multiset; ``require`` notes a failed
  condition. ``problems`` holds one line per failure, with numbers.
  """

  def __init__(self, rtol: float, atol: float, scale: float = 1.0, size: int = 1,
               outputs: Sequence[OutputTolerance] | None = None):
    self.rtol, self.atol = rtol, atol
    self.residual_tol = atol + rtol * max(1.0, scale) * max(1, size)
    self.problems: list[str] = []
    self.max_abs_err = 0.0
    # Each output's path and tolerances, where the entry records them (None: one for all).
    self.outputs = None if outputs is None else tuple(outputs)

  def name_of(self, i: int) -> str:
    """How problems name output ``i``: by its path where the entry records it."""
    if self.outputs is None or i >= len(self.outputs):
      return f"output {i}"
    return output_label(self.outputs[i].path)

  @contextlib.contextmanager
  def output(self, i: int) -> Iterator[str]:
    """Judge output ``i`` with its own tolerances (where the entry records them); its name."""
    saved = self.rtol, self.atol
    if self.outputs is not None and i < len(self.outputs):
      self.rtol, self.atol = self.outputs[i].rtol, self.outputs[i].atol
    try:
      yield self.name_of(i)
    finally:
      self.rtol, self.atol = saved

  def close(self, what: str, want, got, norm: float = 0.0) -> None:
    """``got`` equals ``want`` within rtol/atol, elementwise; report counts and errors otherwise.

    Non-finite values compare as values: NaN matches NaN and an infinity the same infinity.
    A non-finite element where the recorded one differs (NaN where it is finite, +inf where
    it is -inf...) is a difference named as such; the error figures cover only the elements
    finite on both sides.

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
    w, g = wide(want), wide(got)
    finite = _finite(w) & _finite(g)
    parts = _nonfinite_differences(w, g, finite)
    err = np.abs(g[finite] - w[finite])
    self.max_abs_err = max(self.max_abs_err, float(np.max(err, initial=0.0)))
    bad = ~(err <= self.atol + self.rtol * np.maximum(np.abs(w[finite]), norm))
    if np.any(bad):
      figures = error_figures(w[finite], g[finite])
      parts.insert(0, f"{int(bad.sum())} of {want.size} elements differ beyond rtol={self.rtol:g}, "
                      f"atol={self.atol:g}; {figures.text()}")
    if parts:
      self.problems.append(f"{what}: " + "; ".join(parts))

  def residual(self, what: str, residual) -> None:
    """An invariant's residual is within the scaled tolerance ``residual_tol``."""
    residual = np.abs(wide(np.asarray(residual)))
    worst = float(np.max(residual)) if residual.size else 0.0
    if not worst <= self.residual_tol:
      n_bad = int(np.sum(~(residual <= self.residual_tol)))
      self.problems.append(
          f"{what}: residual max {worst:.3g}, mean {float(np.mean(residual)):.3g} "
          f"({n_bad} of {residual.size} elements above the tolerance {self.residual_tol:.3g})")

  def same_spectrum(self, what: str, want, got) -> None:
    """Eigenvalues ``got`` match the recorded ``want`` as a multiset (any order)."""
    want, got = np.asarray(want).ravel(), np.asarray(got).ravel()
    if want.shape != got.shape:
      self.problems.append(f"{what}: {got.size} eigenvalues, recorded {want.size}")
      return
    dist = _matched_distance(want, got)
    tol = self.atol + self.rtol * max(1.0, float(np.max(np.abs(wide(want)), initial=0.0)))
    self.max_abs_err = max(self.max_abs_err, dist)
    if not dist <= tol * max(1, want.size):
      self.problems.append(f"{what}: eigenvalues differ as a multiset by up to {dist:.3g} "
                           f"(tolerance {tol * max(1, want.size):.3g})")

  def require(self, what: str, condition: bool) -> None:
    """Note the problem ``what`` unless ``condition`` holds."""
    if not condition:
      self.problems.append(what)

  def verdict(self, exact: bool) -> Verdict:
    """The verdict of what was judged: acceptable when no problem was noted."""
    return Verdict(not self.problems, exact, self.max_abs_err, tuple(self.problems))


# A judging function: notes on the Judge what is wrong with ``actual``.
JudgingFunction = Callable[[Judge, Sequence[np.ndarray], Sequence[np.ndarray],
                            Sequence[np.ndarray]], None]


@dataclasses.dataclass(frozen=True)
class Judged:
  """A :class:`Checker` made of a judging function ``judge(j, inputs, expected, actual)``.

  Before the function runs it checks that there are as many outputs as recorded, of the
  recorded shapes and dtypes (the function runs only if so), and sizes the residual
  tolerance from the inputs (or, without float inputs, the recorded outputs).

  ``vjp_by_tolerance`` (the built-in checkers): where the entry names its outputs and some
  are a VJP's (``vjp1:args[0]``), the function judges the function's outputs only and each
  VJP output is compared elementwise with its own tolerances; a checker of a routine's
  structure (eigenvalues, factors) has nothing to say of a cotangent. Otherwise the function
  gets every output, the VJP's after the function's.
  """

  judge: JudgingFunction
  vjp_by_tolerance: bool = False

  def __call__(self, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
               actual: Sequence[np.ndarray], *, rtol: float, atol: float,
               outputs: Sequence[OutputTolerance] | None = None) -> Verdict:
    expected = [np.asarray(x) for x in expected]
    actual = [np.asarray(x) for x in actual]
    # Residuals scale with the operand; a module that builds its operand itself
    # (jax's corpus) leaves only the recorded outputs to measure it by.
    sized = [x for x in inputs if np.asarray(x).dtype.kind in "fc" and np.asarray(x).size] or [
        x for x in expected if x.dtype.kind in "fc" and x.size]
    scale = max((float(np.max(np.abs(wide(np.asarray(x))))) for x in sized), default=1.0)
    size = max((max(np.shape(x)) for x in (inputs or expected) if np.ndim(x)), default=1)
    j = Judge(rtol, atol, scale, size, outputs)
    if len(actual) != len(expected):
      j.problems.append(f"{len(actual)} outputs, recorded {len(expected)}")
    else:
      for i, (w, g) in enumerate(zip(expected, actual)):
        if w.shape != g.shape or w.dtype != g.dtype:
          j.problems.append(f"{j.name_of(i)}: {g.dtype}{list(g.shape)}, recorded "
                            f"{w.dtype}{list(w.shape)}")
    if not j.problems:
      n = _primal_count(outputs, len(expected)) if self.vjp_by_tolerance else len(expected)
      self.judge(j, inputs, expected[:n], actual[:n])
      for i in range(n, len(expected)):
        with j.output(i) as what:
          j.close(what, expected[i], actual[i])
    return j.verdict(_all_bitwise_equal(expected, actual))


def _primal_count(outputs: Sequence[OutputTolerance] | None, count: int) -> int:
  """How many of ``count`` outputs are the function's: those before the first VJP output
  the entry names (all of them where it names none, or no outputs at all)."""
  if outputs is None or len(outputs) != count:
    return count
  return next((i for i, o in enumerate(outputs) if _VJP_PATH.fullmatch(o.path)), count)


def judged(judge: JudgingFunction) -> Judged:
  """The :class:`Checker` of the judging function ``judge`` (usable as a decorator)."""
  if not callable(judge):
    raise TypeError(f"judged() takes a function judge(j, inputs, expected, actual); got "
                    f"{type(judge).__name__}")
  return Judged(judge)


def _matched_distance(want: np.ndarray, got: np.ndarray) -> float:
  """Largest distance when each recorded eigenvalue is matched to its nearest unused replayed one."""
  remaining = list(wide(got).ravel())
  worst = 0.0
  for w in sorted(wide(want).ravel(), key=lambda z: (abs(z), np.real(z), np.imag(z))):
    dists = [abs(w - g) for g in remaining]
    i = int(np.argmin(dists))
    worst = max(worst, float(dists[i]))
    remaining.pop(i)
  return worst


# What a checker's name may be: it is written into manifests and reports, and typed in cases.
_CHECKER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class CheckerRegistry(Mapping[str, Checker]):
  """Checkers by name: this registry's own, then its parent's (a chain ending in
  :data:`BUILTIN`). A name is registered once along the chain; registering the same
  checker again under its name is a no-op, so a module imported twice is harmless."""

  def __init__(self, parent: CheckerRegistry | None = None,
               checkers: Mapping[str, Checker] | None = None, *, sealed: bool = False):
    self._own: dict[str, Checker] = {}
    self._parent = parent
    self._sealed = False
    for name, checker in (checkers or {}).items():
      self.register(name, checker)
    self._sealed = sealed

  def register(self, name: str, checker: Checker) -> None:
    """Make ``checker`` available as ``Case(checker=name)`` to the cases of this registry."""
    if self._sealed:
      raise ValueError(f"cannot add checker {name!r}: this registry holds the built-in "
                       "checkers only; declare it in a case module's CHECKERS, or add it "
                       "with register_checker")
    if not isinstance(name, str) or not _CHECKER_NAME.fullmatch(name) or keyword.iskeyword(name):
      raise ValueError(f"checker name {name!r}: use an ASCII identifier that is not a Python "
                       "keyword, such as 'my_sorted_close'")
    if not callable(checker):
      raise ValueError(f"checker {name!r} is a {type(checker).__name__}, not a Checker: give a "
                       "function (inputs, expected, actual, *, rtol, atol) -> Verdict, or "
                       "judged(fn) of a judging function")
    existing = self.get(name)
    if existing is not None and existing != checker:
      raise ValueError(f"checker {name!r} is already registered; pick another name")
    if existing is None:
      self._own[name] = checker

  def __getitem__(self, name: str) -> Checker:
    if name in self._own:
      return self._own[name]
    if self._parent is not None:
      return self._parent[name]
    raise KeyError(name)

  def __iter__(self) -> Iterator[str]:
    seen = dict.fromkeys(self._own)
    if self._parent is not None:
      seen.update(dict.fromkeys(self._parent))
    return iter(seen)

  def __len__(self) -> int:
    return sum(1 for _ in self)

  def check(self, name: str, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
            actual: Sequence[np.ndarray], *, rtol: float, atol: float,
            outputs: Sequence[OutputTolerance] | None = None) -> Verdict:
    """Judge ``actual`` against ``expected`` with the checker ``name``; a name this registry
    does not know, or a checker that returns no Verdict, is a failed verdict. ``outputs``:
    each output's path and tolerances, where the entry records them; a checker made with
    :func:`judged` compares each output with its own, any other gets ``rtol``/``atol``."""
    checker = self.get(name)
    if checker is None:
      return Verdict(False, False, 0.0,
                     (f"unknown checker {name!r} in the manifest; known: {sorted(self)}",))
    expected = [np.asarray(x) for x in expected]
    actual = [np.asarray(x) for x in actual]
    if outputs is not None and isinstance(checker, Judged):
      verdict = checker(inputs, expected, actual, rtol=rtol, atol=atol, outputs=outputs)
    else:
      verdict = checker(inputs, expected, actual, rtol=rtol, atol=atol)
    if not isinstance(verdict, Verdict):
      return Verdict(False, False, 0.0, (
          f"checker {name!r} returned {type(verdict).__name__}, not a "
          "jaxport.harness.Verdict; a checker returns Verdict(ok, exact, max_abs_err, problems)",))
    exact = _all_bitwise_equal(expected, actual)
    return verdict if verdict.exact == exact else dataclasses.replace(verdict, exact=exact)


# The built-in checkers; no checker can be added to it.
# Each judges the function's outputs; a VJP's are compared by tolerance ("none" judges nothing).
BUILTIN = CheckerRegistry(checkers={name: Judged(judge, vjp_by_tolerance=name != "none")
                                    for name, judge in _judges.JUDGES.items()},
                          sealed=True)


# A project's checker as register_checker takes it: (inputs, expected, actual, rtol, atol) ->
# problems (empty when acceptable).
UserChecker = Callable[[Sequence[np.ndarray], Sequence[np.ndarray], Sequence[np.ndarray], float,
                        float], Sequence[str]]


@dataclasses.dataclass(frozen=True)
class _ProblemLines:
  """The judging function of a ``register_checker`` function: its lines become problems."""

  checker: UserChecker

  def __call__(self, j: Judge, inputs, want, got) -> None:
    j.problems.extend(str(p) for p in self.checker(inputs, want, got, j.rtol, j.atol))


# What register_checker adds, for the processes that import the case modules calling it.
_REGISTERED = CheckerRegistry(BUILTIN)


def register_checker(name: str, checker: UserChecker) -> None:
  """Make ``checker`` available as ``Case(checker=name)``.

  ``checker(inputs, expected, actual, rtol, atol)`` returns one line per problem
  found (with numbers), or nothing when ``actual`` is acceptable. A name taken by
  a built-in checker, or by another function, is refused. Call it in a case
  module; a case module can instead declare ``CHECKERS = {name: checker}`` with
  :class:`Checker` values, which only its own project's registry holds.
  """
  if not callable(checker):
    raise ValueError(f"checker {name!r} is a {type(checker).__name__}, not a function "
                     "(inputs, expected, actual, rtol, atol) -> problems")
  _REGISTERED.register(name, Judged(_ProblemLines(checker)))


def project_registry() -> CheckerRegistry:
  """A new registry for one project: the built-in checkers and those added with
  :func:`register_checker`, to which the project's case modules add their ``CHECKERS``."""
  return CheckerRegistry(_REGISTERED)


def check(mode: str, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray],
          actual: Sequence[np.ndarray], *, rtol: float, atol: float) -> Verdict:
  """Judge ``actual`` against ``expected`` with the checker ``mode``: a built-in one or one
  added with :func:`register_checker` (a project's ``CHECKERS`` are its registry's)."""
  return _REGISTERED.check(mode, inputs, expected, actual, rtol=rtol, atol=atol)
