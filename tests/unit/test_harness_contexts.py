"""jax's lowerings in a worker reuse MLIR contexts: one per thread and reader, replaced after a
fixed number of uses, running MLIR's work on the calling thread (with the GIL), the modules
unchanged, and jax's own behaviour back when turned off."""

import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.interpreters import mlir as jax_mlir

from jaxport.harness._worker import _contexts

X = np.linspace(0, 1, 8, dtype=np.float32)


@pytest.fixture
def made(monkeypatch):
  """The contexts jax's own factory made while reuse is on (a list that grows)."""
  original = jax_mlir.make_ir_context
  contexts: list = []

  def counted():
    contexts.append(original())
    return contexts[-1]

  monkeypatch.setattr(jax_mlir, "make_ir_context", counted)
  _contexts.reuse_within_process()
  yield contexts
  _contexts.stop_reusing()
  assert jax_mlir.make_ir_context is counted


def _lower(scale: float) -> str:
  def scaled_sine(x):
    return jnp.sin(x) * scale
  return jax.jit(scaled_sine).lower(X).as_text()


def test_one_reader_reuses_its_context_and_each_reader_has_its_own(made):
  with _contexts.lowering_for("jaxport"):
    _lower(2.0), _lower(3.0)
  assert len(made) == 1
  with _contexts.lowering_for("jax"):
    _lower(4.0)
  assert len(made) == 2
  with _contexts.lowering_for("jaxport"):
    _lower(5.0)
  assert len(made) == 2


def test_each_thread_has_its_own_contexts(made):
  with _contexts.lowering_for("jaxport"):
    _lower(2.0)

  def lower_elsewhere():
    with _contexts.lowering_for("jaxport"):
      _lower(3.0)

  other = threading.Thread(target=lower_elsewhere)
  other.start()
  other.join()
  assert len(made) == 2


def test_a_context_is_replaced_after_its_uses(made, monkeypatch):
  monkeypatch.setattr(_contexts, "SCRATCH_CONTEXT_USES", 2)
  with _contexts.lowering_for("today"):
    for scale in (2.0, 3.0, 4.0):
      _lower(scale)
  assert len(made) == 2


def test_reused_contexts_lower_the_same_modules():
  fresh = [_lower(s) for s in (2.0, 3.0)]
  _contexts.reuse_within_process()
  try:
    with _contexts.lowering_for("jaxport"):
      reused = [_lower(s) for s in (2.0, 3.0)]
  finally:
    _contexts.stop_reusing()
  assert reused == fresh
  assert "_reused" not in getattr(jax_mlir.make_ir_context, "__name__", "")


@pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(),
                    reason="a free-threaded Python keeps jax's threaded contexts (tested below)")
def test_reused_contexts_verify_and_run_passes_on_the_calling_thread(made):
  with _contexts.lowering_for("jaxport"):
    _lower(2.0)
  assert [c.get_num_threads() for c in made] == [1]


def _in_a_new_thread(work):
  """What ``work`` returns, run on a thread of its own (where jax has handed out no context)."""
  out = []
  thread = threading.Thread(target=lambda: out.append(work()))
  thread.start()
  thread.join()
  return out[0]


def test_without_the_gil_reused_contexts_keep_jax_threads(monkeypatch):
  jax_threads = _in_a_new_thread(lambda: jax_mlir.make_ir_context().get_num_threads())
  monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)

  def lower_and_count():
    with _contexts.lowering_for("jaxport"):
      _lower(2.0)
      return jax_mlir.make_ir_context().get_num_threads()

  _contexts.reuse_within_process()
  try:
    assert _in_a_new_thread(lower_and_count) == jax_threads
  finally:
    _contexts.stop_reusing()
