"""Lower into reused MLIR contexts in a worker, one set per thread and per reader.

jax makes a fresh MLIR context, with every dialect it lowers to loaded, for each
lowering, and frees it with the module; for the small modules of golden entries
that costs about as much as the lowering itself. :func:`reuse_within_process`
puts a pool in front of jax's context factory: each thread keeps one context per
reader (:func:`lowering_for`: jaxport's reader, jax's reader, today's re-export),
so one reader's lowering never runs in IR another reader's lowering created, and
replaces it after a fixed number of lowerings, since a context keeps every type
and attribute it interned until it is freed. Modules, executables and verdicts
are unaffected; only the arena the IR is built in is kept.

This is the one module of the harness that reaches into jax's lowering.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

from jaxport._jaxcompat._lowering import mlir as _jax_mlir

from jaxport.export._mlir import SCRATCH_CONTEXT_USES
from jaxport.harness._replacement import Replacement

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


def _reused() -> Any:
  pool: dict[str, list] = _pools.__dict__.setdefault("by_reader", {})
  kept = pool.get(_reader.get())
  if kept is None or kept[1] >= SCRATCH_CONTEXT_USES:
    kept = pool[_reader.get()] = [MAKE_CONTEXT.original(), 0]
  kept[1] += 1
  return kept[0]


# The signatures of jax's context factory the pool was written for: one, the same in each
# release from jax 0.9.2 to 0.12.0.1 (0.9.2, 0.10.0-0.10.2, 0.11.0-0.11.2, 0.12.0, 0.12.0.1).
# From 0.11.1 jax's factory may itself hand a thread's context out again when
# ``mlir_thread_local_context`` is set; it is unset by default, and the pool keeps only
# contexts jax's factory returned.
MAKE_CONTEXT_SIGNATURES = ("()",)

# jax's context factory, with the pool in front while reuse is on.
MAKE_CONTEXT = Replacement(_jax_mlir, "make_ir_context", _reused,
                           written_for=MAKE_CONTEXT_SIGNATURES, what="reused MLIR contexts")
