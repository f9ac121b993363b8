"""What a golden case is: a function to export, deterministic inputs, and how to judge results.

The one case type of the harness and of the release recorder. The recorder runs inside an
older jax release's virtual environment, where jaxport is not installed, and loads this file
by its path; so it imports only the standard library and numpy, never jaxport (the case
registry checks what needs jaxport's vocabulary, such as the platform names).
"""

from __future__ import annotations

import dataclasses
import re
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

_RELEASE_RE = re.compile(r"\d+\.\d+\.\d+(?:\.\d+)?")
_LEADING_DIGITS = re.compile(r"\d*")


def release_key(version: str | tuple[int, ...]) -> tuple[int, ...]:
  """A jax version (``"0.4.26"``, ``"0.4.26.dev20240501"`` or a tuple) as three integers, to
  compare releases; a part without leading digits counts as 0."""
  if isinstance(version, tuple):
    parts = [int(p) for p in version[:3]]
  else:
    parts = [int(_LEADING_DIGITS.match(p).group() or 0) for p in str(version).split(".")[:3]]
  return tuple(parts + [0] * (3 - len(parts)))


@dataclasses.dataclass(frozen=True)
class Case:
  """One exported function of the registry.

  ``make_inputs`` returns ``(args, kwargs)`` of numpy arrays and is
  deterministic, so recording twice gives the same entry. ``host_platform`` is
  the platform whose machines record and replay the entry; ``platforms`` are
  the platforms the function is exported for (for lowering-only cases, ones the
  host cannot run). ``checker`` names a checker of the project's checker registry: a
  built-in one of :mod:`jaxport.harness.checkers`, or one a case module declares in its
  ``checkers()`` (or adds with ``register_checker``).

  ``enable_x64``: the case is exported, run and replayed with jax's 64-bit types
  on (``jax_enable_x64``); off by default, as in jax. The manifest records it and
  the replay applies it. ``disabled_checks``: the ``DisabledSafetyCheck`` values the
  case is exported with, such as ``custom_call("my_target")`` for a project's own FFI
  target (``jaxport``'s or ``jax.export``'s; jaxport accepts both, and a case that an
  older release records uses that release's).

  Multi-device cases set ``num_devices`` (the harness records and replays them
  in a worker with that many host devices), ``jit_kwargs`` (called in that
  worker, it returns ``jax.jit`` keyword arguments such as ``in_shardings``,
  whose meshes need the worker's devices) and, to record GSPMD's custom calls,
  ``use_shardy=False`` (None keeps jax's default partitioner).

  ``vjp_order``: the order of the gradients (VJPs) recorded and compared with the function's
  outputs: 1 records the VJP of order 1 (for cotangents of ones), 0 none. Unset (None, the
  default), a case whose function holds a custom derivative rule (``jax.custom_vjp`` or
  ``jax.custom_jvp``, anywhere in its jaxpr) and takes a float input records its VJP of
  order 1, since a changed rule leaves the function's own module as it was; any other
  records none. Integer, bool and PRNG key inputs have no cotangent: none is stored for them.

  ``jax_flags``: ``(name, value)`` jax config flags set while the case is
  exported (a lowering some flag selects, e.g. the GPU threefry kernel).

  ``min_consumer``: the oldest jax release the case's entries must run on, such
  as ``"0.9.2"`` (a server that loads them runs that jax). The harness computes
  each entry's range from the release table (``jaxport.releases.runs_on``) and
  fails an entry whose range leaves out that release or a newer one up to the
  producer, naming the release and the limiting factor.

  ``for_jax``: the jax release the case's artifacts are written for, such as ``"0.9.2"``:
  jaxport exports it as ``jaxport.export(f, for_jax=...)`` does (that release's StableHLO
  version, calling convention and envelope), so that a consumer on that release reads it.
  With ``min_consumer`` it is how an entry reaches back to its oldest consumer. None (the
  default) writes for the installed jax.

  ``lowering_twin``: the id of a lowering-only case that exports the same function for the
  same platforms (an accelerator case's sibling a CPU host records under each jax release).
  Where no entry of this case was recorded by the replaying jax (an accelerator's entry
  replayed where no such machine runs that jax), the twin's entry recorded by it is the
  evidence that a lowering difference of this case's older entries is jax's change.

  ``record_range``: the jax releases that record the case themselves, with their own
  public export API, in a venv of that release: ``(oldest, newest)``, with ``newest``
  None for no upper bound. None (the default): only the harness records it, with
  jaxport under the installed jax. The release recorder and the tests of the recorded
  releases both ask :meth:`recordable_by`.

  Platforms are checked against the harness's platform names when the case registry
  loads the case; the rest here, when the case is made.
  """

  case_id: str
  family: str
  fun: Callable[..., Any]
  make_inputs: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
  targets: tuple[str, ...] = ()
  checker: str = "allclose"
  rtol: float | None = None
  atol: float | None = None
  host_platform: str = "cpu"
  platforms: tuple[str, ...] | None = None
  polymorphic_shapes: tuple[str | None, ...] | None = None
  constraints: tuple[str, ...] | None = None
  lowering_only: bool = False
  vjp_order: int | None = None
  num_devices: int = 1
  jit_kwargs: Callable[[], dict[str, Any]] | None = None
  use_shardy: bool | None = None
  jax_flags: tuple[tuple[str, Any], ...] = ()
  enable_x64: bool = False
  disabled_checks: tuple[Any, ...] = ()
  min_consumer: str | None = None
  record_range: tuple[str, str | None] | None = None
  for_jax: str | None = None
  tolerances: Mapping[str, tuple[float, float]] | None = None
  lowering_twin: str | None = None

  def __post_init__(self):
    self._check_tolerances()
    if self.vjp_order is not None and not (isinstance(self.vjp_order, int)
                                           and not isinstance(self.vjp_order, bool)
                                           and self.vjp_order >= 0):
      raise ValueError(f"Case {self.case_id}: vjp_order={self.vjp_order!r} is not an order of "
                       "gradients: give 0 (none), 1, or leave it unset (None: gradients where "
                       "the function holds a custom derivative rule).")
    if self.lowering_twin is not None and (not isinstance(self.lowering_twin, str)
                                           or self.lowering_twin == self.case_id):
      raise ValueError(f"Case {self.case_id}: lowering_twin={self.lowering_twin!r} is not the id "
                       "of another case (a lowering-only case exporting the same function)")
    for name in ("min_consumer", "for_jax"):
      value = getattr(self, name)
      if value is not None and not _RELEASE_RE.fullmatch(str(value)):
        raise ValueError(f"Case {self.case_id}: {name}={value!r} is not a jax release such as "
                         "'0.9.2'.")
    self._check_record_range()
    for p in (self.host_platform, *(self.platforms or ())):
      if not isinstance(p, str) or not p:
        raise ValueError(f"Case {self.case_id}: platform {p!r} is not a platform name such as "
                         "'cpu'.")
    if self.lowering_only == (self.host_platform in (self.platforms or (self.host_platform,))):
      raise ValueError(
          f"Case {self.case_id}: lowering_only={self.lowering_only} but it is exported for "
          f"{self.platforms} from host {self.host_platform}; lowering-only cases are exactly "
          "those exported only for platforms the host cannot run.")

  def _check_tolerances(self) -> None:
    if self.tolerances is None:
      return
    if not isinstance(self.tolerances, Mapping):
      raise ValueError(f"Case {self.case_id}: tolerances={self.tolerances!r} is not a mapping "
                       "of output path to (rtol, atol), such as {'output[0]': (1e-3, 1e-5)}.")
    for path, pair in self.tolerances.items():
      ok = (isinstance(path, str) and bool(path) and isinstance(pair, (tuple, list))
            and len(pair) == 2 and all(_is_tolerance(x) for x in pair))
      if not ok:
        raise ValueError(f"Case {self.case_id}: tolerances[{path!r}]={pair!r}: give an output "
                         "path such as 'output[0]' or 'vjp1:args[0]' and a pair (rtol, atol) "
                         "of finite numbers >= 0.")

  def _check_record_range(self) -> None:
    if self.record_range is None:
      return
    shape = (isinstance(self.record_range, tuple) and len(self.record_range) == 2
             and _RELEASE_RE.fullmatch(str(self.record_range[0])) is not None
             and (self.record_range[1] is None
                  or _RELEASE_RE.fullmatch(str(self.record_range[1])) is not None))
    if not shape:
      raise ValueError(f"Case {self.case_id}: record_range={self.record_range!r} is not a pair "
                       "(oldest, newest) of jax releases such as ('0.4.26', None) or "
                       "('0.4.26', '0.4.30'); None leaves recording to the harness.")
    oldest, newest = self.record_range
    if newest is not None and release_key(newest) < release_key(oldest):
      raise ValueError(f"Case {self.case_id}: record_range={self.record_range!r} ends before it "
                       "starts; give (oldest, newest) with oldest <= newest.")

  def export_platforms(self) -> tuple[str, ...]:
    """The platforms the case is exported for."""
    return self.platforms or (self.host_platform,)

  def recordable_by(self, jax_version: str | tuple[int, ...]) -> bool:
    """Whether jax release ``jax_version`` records the case with its own export API."""
    return self.why_not_recordable_by(jax_version) is None

  def why_not_recordable_by(self, jax_version: str | tuple[int, ...]) -> str | None:
    """Why jax release ``jax_version`` does not record the case itself (None: it does)."""
    if self.record_range is None:
      return "recorded only by the harness, with jaxport"
    oldest, newest = self.record_range
    version = release_key(jax_version)
    if version < release_key(oldest):
      return f"needs jax >= {oldest}"
    if newest is not None and version > release_key(newest):
      return f"recorded only by jax <= {newest}"
    return None


def rng(seed: int) -> np.random.RandomState:
  """The legacy numpy generator: its stream is frozen across numpy releases."""
  return np.random.RandomState(seed)


_REAL = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


def random_matrix(seed: int, shape: tuple[int, ...], dtype) -> np.ndarray:
  """A deterministic random array of ``dtype`` (complex gets an imaginary part)."""
  dtype = np.dtype(dtype)
  r = rng(seed)
  if dtype.kind == "c":
    real = _REAL[dtype]
    return (r.standard_normal(shape).astype(real) + 1j * r.standard_normal(shape).astype(real)).astype(dtype)
  return r.standard_normal(shape).astype(dtype)


def _is_tolerance(x: Any) -> bool:
  return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
          and x >= 0)


# (rtol, atol) by dtype name: a few hundred ulps of a small matrix computation for the wide
# types, a few ulps for the 16-bit ones (a few hundred would let any value pass).
_DEFAULTS = {
    "float64": (1e-10, 1e-12), "complex128": (1e-10, 1e-12),
    "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
}


def _dtype_name(dtype: Any) -> str:
  """The name of ``dtype`` (a numpy or ml_dtypes dtype, a scalar type or a dtype name)."""
  if isinstance(dtype, str):
    return dtype
  name = getattr(dtype, "name", None)
  if isinstance(name, str) and not isinstance(dtype, type):
    return name
  return np.dtype(dtype).name


_NARROW_FLOAT = re.compile(r"float[0-9]+_e[0-9]+m([1-9][0-9]*).*")


def _narrow_float_tolerance(name: str) -> tuple[float, float] | None:
  """(rtol, atol) of an 8-, 6- or 4-bit float type (``float8_e4m3fn``...): four of its ulps
  relative and one absolute (its epsilon, from the mantissa bits its name gives); None for
  a name of no such type."""
  narrow = _NARROW_FLOAT.fullmatch(name)
  if narrow is None:
    return None
  eps = 2.0 ** -int(narrow.group(1))
  return 4 * eps, eps


def default_tolerance(dtype) -> tuple[float, float]:
  """(rtol, atol) for results of ``dtype``: each float and complex dtype its own (bfloat16
  and float16 included); integer, bool and PRNG key outputs (stored as their integer key
  data) are compared exactly."""
  name = _dtype_name(dtype)
  if name in _DEFAULTS:
    return _DEFAULTS[name]
  return _narrow_float_tolerance(name) or (0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class OutputComparison:
  """How one output is compared: its path (``output[0]``, ``output['loss']``, or
  ``vjp1:args[0]`` for the VJP's output of order 1 for the input ``args[0]``), the dtype it
  was recorded with, and its tolerances."""

  path: str
  dtype: str
  rtol: float
  atol: float


@dataclasses.dataclass(frozen=True)
class CaseComparison:
  """What a recording of a case writes into its manifest: the checker, the tolerances of
  checkers that judge the outputs together (the case's own, else the loosest default among
  its outputs), and each output's (:class:`OutputComparison`)."""

  checker: str
  rtol: float
  atol: float
  outputs: tuple[OutputComparison, ...] = ()


def comparison_of(case: Case, outputs: Sequence[tuple[str, Any]]) -> CaseComparison:
  """How a recording of ``case`` with ``outputs`` (``(path, dtype)`` of each recorded output,
  the VJP's after the function's) compares them: each output by the case's tolerance of its
  path, else the case's own ``rtol``/``atol``, else :func:`default_tolerance` of its own
  dtype. A path of ``case.tolerances`` that names no output is refused, naming the paths."""
  given = dict(case.tolerances or {})
  paths = [p for p, _ in outputs]
  unknown = sorted(set(given) - set(paths))
  if unknown:
    raise ValueError(f"case {case.case_id}: tolerances for {unknown}, which are no outputs of "
                     f"the case; its outputs are {paths}. Nothing was recorded.")
  own = None if case.rtol is None or case.atol is None else (float(case.rtol), float(case.atol))
  per_output = []
  for path, dtype in outputs:
    name = _dtype_name(dtype)
    rtol, atol = given.get(path) or own or default_tolerance(name)
    per_output.append(OutputComparison(path, name, float(rtol), float(atol)))
  if own is None:
    own = (max((o.rtol for o in per_output), default=0.0),
           max((o.atol for o in per_output), default=0.0))
  return CaseComparison(case.checker, own[0], own[1], tuple(per_output))
