"""What a golden case is: a function to export, deterministic inputs, and how to judge results."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxport.harness._project import PLATFORMS

_RELEASE_RE = re.compile(r"\d+\.\d+\.\d+(?:\.\d+)?")


@dataclasses.dataclass(frozen=True)
class Case:
  """One exported function of the registry.

  ``make_inputs`` returns ``(args, kwargs)`` of numpy arrays and is
  deterministic, so recording twice gives the same entry. ``host_platform`` is
  the platform whose machines record and replay the entry; ``platforms`` are
  the platforms the function is exported for (for lowering-only cases, ones the
  host cannot run). ``checker`` names a checker of :mod:`jaxport.harness.checkers`
  (built in or added with ``register_checker``).

  ``enable_x64``: the case is exported, run and replayed with jax's 64-bit types
  on (``jax_enable_x64``); off by default, as in jax. The manifest records it and
  the replay applies it. ``disabled_checks``: the ``jaxport.DisabledSafetyCheck``
  values the case is exported with, such as ``custom_call("my_target")`` for a
  project's own FFI target.

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

  def __post_init__(self):
    if self.min_consumer is not None and not _RELEASE_RE.fullmatch(str(self.min_consumer)):
      raise ValueError(f"Case {self.case_id}: min_consumer={self.min_consumer!r} is not a jax "
                       "release such as '0.9.2'.")
    for p in (self.host_platform, *(self.platforms or ())):
      if p not in PLATFORMS:
        raise ValueError(f"Case {self.case_id}: unknown platform {p!r}; expected one of {PLATFORMS}.")
    if self.lowering_only == (self.host_platform in (self.platforms or (self.host_platform,))):
      raise ValueError(
          f"Case {self.case_id}: lowering_only={self.lowering_only} but it is exported for "
          f"{self.platforms} from host {self.host_platform}; lowering-only cases are exactly "
          "those exported only for platforms the host cannot run.")

  def export_platforms(self) -> tuple[str, ...]:
    return self.platforms or (self.host_platform,)


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
