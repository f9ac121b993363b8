"""Where one entry's replay spends its time: stages timed in the worker, compilation timed by jax.

The worker adds ``timings`` (seconds per part) to each replay answer; the
session passes them to ``--compat-timings`` and ``benchmarks/bench_replay.py``
sums them. Timings never enter the report or a verdict. An entry's parts may run
on several threads at once (the readers side by side), so each thread keeps its own
stage and the parts of an entry can add up to more than its wall-clock seconds.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import jax.monitoring

# Stages timed around the engine's steps (wall clock, nested stages not subtracted).
VERIFY = "verify"
DESERIALIZE = "deserialize"
CALL = "call"              # tracing the call, lowering it, compiling (or loading) and executing
CHECK = "check"
CURRENT = "current"        # today's export of the case and, when its module differs, its run
# Parts of the readers' calls as jax reports them (today's export keeps its own inside CURRENT).
COMPILE = "compile"        # XLA compilation, or loading the executable from the compile cache
LOWER = "lower"            # jaxpr -> StableHLO of the calling wrapper
PARTS = (VERIFY, DESERIALIZE, CALL, CHECK, CURRENT, COMPILE, LOWER)

_JAX_EVENTS = {
    "/jax/core/compile/backend_compile_duration": COMPILE,
    "/jax/core/compile/jaxpr_to_mlir_module_duration": LOWER,
}


class Stopwatch:
  """Seconds per part of one replay."""

  def __init__(self) -> None:
    self.seconds = dict.fromkeys(PARTS, 0.0)
    self._lock = threading.Lock()
    self._stages = threading.local()

  @property
  def active(self) -> str | None:
    """The innermost stage the calling thread is in."""
    return getattr(self._stages, "name", None)

  def add(self, part: str, seconds: float) -> None:
    with self._lock:
      self.seconds[part] += seconds

  @contextlib.contextmanager
  def stage(self, name: str) -> Iterator[None]:
    start, outer, self._stages.name = time.perf_counter(), self.active, name
    try:
      yield
    finally:
      self.add(name, time.perf_counter() - start)
      self._stages.name = outer


_current: Stopwatch | None = None
_listening = False


def _on_duration(event: str, duration_secs: float, **_: object) -> None:
  part = _JAX_EVENTS.get(event)
  if part is not None and _current is not None and _current.active == CALL:
    _current.add(part, duration_secs)


@contextlib.contextmanager
def watching(watch: Stopwatch) -> Iterator[Stopwatch]:
  """Attribute jax's compile and lowering durations to ``watch`` while inside."""
  global _current, _listening
  if not _listening:
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    _listening = True
  previous, _current = _current, watch
  try:
    yield watch
  finally:
    _current = previous
