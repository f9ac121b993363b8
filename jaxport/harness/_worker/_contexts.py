"""Lower into reused MLIR contexts in a worker, one set per thread and per reader.

jax makes a fresh MLIR context, with every dialect it lowers to loaded, for each
lowering, and frees it with the module; for the small modules of golden entries
that costs about as much as the lowering itself. :func:`reuse_within_process`
puts a pool in front of jax's context factory: each thread keeps one context per
reader (:func:`lowering_for`: jaxport's reader, jax's reader, today's re-export),
so one reader's lowering never runs in IR another reader's lowering created
(from jax 0.11.1 jax's factory may give one thread's readers one context), and
replaces it after a fixed number of lowerings, since a context keeps every type
and attribute it interned until it is freed. Where Python has the GIL, the pool's
contexts do MLIR's work (verifying, passes) on the calling thread. Modules,
executables and verdicts are unaffected; only the arena the IR is built in is
kept.

This is the one module of the harness that reaches into jax's lowering.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from collections.abc import Iterator
from typing import Any

from jaxport._jaxcompat._lowering import mlir as _jax_mlir

from jaxport.export._mlir import SCRATCH_CONTEXT_USES
from jaxport.harness._worker._replacement import Replacement

_reader: contextvars.ContextVar[str] = contextvars.ContextVar("jaxport_lowering_reader",
                                                              default="")
_pools = threading.local()


def reuse_within_process() -> bool:
  """From now on, jax's lowerings in this process take a reused context (idempotent); False,
  with the reason in ``MAKE_CONTEXT.status``, where jax's context factory is not the one
  the pool was written for (each lowering then gets a fresh context, as jax gives it)."""
  return MAKE_CONTEXT.on()


def stop_reusing() -> None:
  """Give every lowering a fresh context again, as jax does."""
  MAKE_CONTEXT.off()
  _pools.__dict__.clear()


@contextlib.contextmanager
def lowering_for(reader: str) -> Iterator[None]:
  """Within the block, this thread's lowerings use ``reader``'s own contexts."""
  token = _reader.set(reader)
  try:
    yield
  finally:
    _reader.reset(token)


def _gil_enabled() -> bool:
  """Whether this Python runs one thread at a time. A module lowered on one thread can reach
  another through jax's lowering cache; with the GIL, calls into MLIR (which hold it) never
  overlap, so a context may then run single-threaded. Without the GIL, contexts stay as jax
  makes them."""
  is_enabled = getattr(sys, "_is_gil_enabled", None)
  return is_enabled is None or bool(is_enabled())


def _on_calling_thread(context: Any) -> Any:
  """``context`` with MLIR's multithreading off. jax's contexts hand the verifier's and
  passes' work to a thread pool shared by the process and wait for it while holding the
  GIL; on the small modules of golden entries the handing over costs more than the work,
  and far more while the worker's other thread and XLA keep the cores busy (in a warm
  replay of this project's store, py-spy found the worker holding the GIL in the verifier
  and the Shardy passes for 184 samples at 200 Hz, and for 38 on the calling thread). The
  IR built is the same either way."""
  enable = getattr(context, "enable_multithreading", None)
  if enable is not None and _gil_enabled():
    enable(False)
  return context


def _reused() -> Any:
  pool: dict[str, list] = _pools.__dict__.setdefault("by_reader", {})
  kept = pool.get(_reader.get())
  if kept is None or kept[1] >= SCRATCH_CONTEXT_USES:
    kept = pool[_reader.get()] = [_on_calling_thread(MAKE_CONTEXT.original()), 0]
  kept[1] += 1
  return kept[0]


# The signatures of jax's context factory the pool was written for: one, the same in each
# release from jax 0.9.2 to 0.12.0.1 (0.9.2, 0.10.0-0.10.2, 0.11.0-0.11.2, 0.12.0, 0.12.0.1).
# From 0.11.1 jax's factory itself hands a thread's last context out again, up to ten times
# (it keeps it in the thread-local setting ``mlir_thread_local_context``): there the pool's
# contexts of one thread may be one context, and a context it runs single-threaded is one
# only that thread's lowerings use.
MAKE_CONTEXT_SIGNATURES = ("()",)

# jax's context factory, with the pool in front while reuse is on.
MAKE_CONTEXT = Replacement(_jax_mlir, "make_ir_context", _reused,
                           written_for=MAKE_CONTEXT_SIGNATURES, what="reused MLIR contexts")
