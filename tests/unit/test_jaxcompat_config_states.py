"""jax's configuration contexts as one thread holds them: every state a context sets is read,
and one entered and never left is put back to the thread's saved value, jax's C++ side told."""

import threading

import jax
import pytest
from jax._src import config as jax_config

from jaxport._jaxcompat import _config_states


def _on_a_thread(work):
  """``work()`` run on a thread of its own (its context values die with it)."""
  result = []
  thread = threading.Thread(target=lambda: result.append(work()))
  thread.start()
  thread.join()
  return result[0]


def test_every_flag_state_and_the_mesh_context_are_read():
  assert _config_states.SUPPORTED
  names = set(_config_states.state_names())
  assert set(jax_config.config_states) <= names
  assert "mesh_context_manager" in names


def test_a_context_entered_and_not_left_is_put_back_and_named():
  def leave_open():
    saved = _config_states.local_values()
    jax.numpy_rank_promotion("raise").__enter__()
    jax.debug_nans(True).__enter__()
    changes = _config_states.put_back(saved)
    return changes, jax.config.jax_numpy_rank_promotion, jax.config.jax_debug_nans

  changes, promotion, nans = _on_a_thread(leave_open)
  assert {c.name: c.now for c in changes} == {"jax_numpy_rank_promotion": "raise",
                                               "jax_debug_nans": True}
  assert all(c.then is _config_states.UNSET and c.error is None for c in changes)
  assert (promotion, nans) == ("allow", False)


def test_every_state_set_on_a_thread_is_put_back():
  def set_all():
    saved = _config_states.local_values()
    for state in jax_config.config_states.values():
      state.set_local(state.value)
    changed = {c.name for c in _config_states.put_back(saved)}
    return changed, _config_states.local_values()

  changed, after = _on_a_thread(set_all)
  assert set(jax_config.config_states) <= changed
  assert all(v is _config_states.UNSET for k, v in after.items() if k in changed)


def test_nothing_changed_is_nothing_put_back():
  assert _on_a_thread(lambda: _config_states.put_back(_config_states.local_values())) == []


@pytest.mark.parametrize("value, text", [(_config_states.UNSET, "unset"), ("raise", "'raise'")])
def test_a_value_reads_as_unset_where_the_thread_has_none(value, text):
  assert _config_states.value_text(value) == text
