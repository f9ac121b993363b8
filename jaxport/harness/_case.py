"""What a golden case is: a function to export, deterministic inputs, and how to judge results.

The one case type of the harness and of the release recorder. The recorder runs inside an
older jax release's virtual environment, where jaxport is not installed, and loads this file
by its path; so it imports only the standard library and numpy, never jaxport (the case
registry checks what needs jaxport's vocabulary, such as the platform names).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
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
  vjp_order: int = 0
  num_devices: int = 1
  jit_kwargs: Callable[[], dict[str, Any]] | None = None
  use_shardy: bool | None = None
  jax_flags: tuple[tuple[str, Any], ...] = ()
  enable_x64: bool = False
  disabled_checks: tuple[Any, ...] = ()
  min_consumer: str | None = None
  record_range: tuple[str, str | None] | None = None
  for_jax: str | None = None

  def __post_init__(self):
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


def default_tolerance(dtype) -> tuple[float, float]:
  """(rtol, atol) for results of ``dtype``: a few hundred ulps of a small matrix computation."""
  dtype = np.dtype(dtype)
  if dtype in (np.dtype(np.float64), np.dtype(np.complex128)):
    return 1e-10, 1e-12
  if dtype in (np.dtype(np.float32), np.dtype(np.complex64)):
    return 1e-4, 1e-5
  return 0.0, 0.0


def comparison_of(case: Case, inputs: Sequence[np.ndarray]) -> tuple[str, float, float]:
  """``(checker, rtol, atol)`` a recording of ``case`` on ``inputs`` writes into its manifest:
  the case's own tolerances, else :func:`default_tolerance` of its first input's dtype."""
  rtol, atol = case.rtol, case.atol
  if rtol is None or atol is None:
    rtol, atol = default_tolerance(inputs[0].dtype if len(inputs) else np.float32)
  return case.checker, rtol, atol
