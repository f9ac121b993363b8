"""The values jax's configuration contexts set on one thread: read, compared and put back.

A context such as ``jax.numpy_rank_promotion("raise")`` or ``jax.debug_nans(True)`` sets a
value of its own on the thread that enters it, over the process-wide one that
``jax.config.update`` sets; one entered and never left stays for everything that thread
computes later. jax keeps each such value in a state object of ``jax._src.config``: one per
flag (``config_states``) and a few contexts of their own (the mesh, the default device,
``compute_on``, the XLA metadata). Each reads and sets the calling thread's value
(``get_local``, ``set_local``); a flag may also have a hook that tells jax's C++ side of
the thread's new value, which is called again when a value is put back.

Where this jax keeps no such objects, :data:`SUPPORTED` is False and there is nothing to
read or put back.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

from jax._src import config as _config

_CONFIG_EXT = getattr(_config, "config_ext", None)
# What a state's get_local gives on a thread that has no value of its own.
UNSET: Any = getattr(_CONFIG_EXT, "unset", None)
_STATE_BASE = getattr(_CONFIG_EXT, "Config", None)
# The modules that hold context states other than the flags' (the mesh's moved to
# jax._src.mesh in later releases).
_CONTEXT_MODULES = ("jax._src.config", "jax._src.mesh")


def _thread_local(state: Any) -> bool:
  return callable(getattr(state, "get_local", None)) and callable(
      getattr(state, "set_local", None))


def _find_states() -> dict[str, Any]:
  """Every state object of this jax whose value a context sets per thread, by name: the
  flags' first, then the other context states of jax's configuration and mesh modules."""
  found: dict[str, Any] = {}
  flags = getattr(_config, "config_states", None)
  if isinstance(flags, Mapping):
    found.update((name, s) for name, s in flags.items() if _thread_local(s))
  if _STATE_BASE is None or UNSET is None:
    return found if UNSET is not None else {}
  seen = {id(s) for s in found.values()}
  for module_name in _CONTEXT_MODULES:
    try:
      module = importlib.import_module(module_name)
    except ImportError:
      continue
    for attr, value in sorted(vars(module).items()):
      if isinstance(value, _STATE_BASE) and id(value) not in seen and _thread_local(value):
        seen.add(id(value))
        found[getattr(value, "name", None) or attr] = value
  return found


# Read once: jax creates its states when its modules are imported.
_STATES: dict[str, Any] = _find_states()
SUPPORTED = bool(_STATES)


def state_names() -> tuple[str, ...]:
  """The names of the states whose per-thread values :func:`local_values` reads."""
  return tuple(_STATES)


def local_values() -> dict[str, Any]:
  """The calling thread's own value of every state (:data:`UNSET` where it has none)."""
  return {name: state.get_local() for name, state in _STATES.items()}


@dataclasses.dataclass(frozen=True)
class LocalChange:
  """One state whose value on the calling thread was no longer the saved one: its name, the
  saved value, the value found, and why it could not be put back (None when it was)."""

  name: str
  then: Any
  now: Any
  error: str | None = None


def put_back(saved: Mapping[str, Any]) -> list[LocalChange]:
  """Set the calling thread's value of every state that differs from ``saved`` (as
  :func:`local_values` read it; a state missing there had no value of its own) back to the
  saved one, telling jax's C++ side as leaving the context would; the changes found."""
  changes = []
  for name, state in _STATES.items():
    then = saved.get(name, UNSET)
    now = state.get_local()
    if now is then or _same(now, then):
      continue
    error = None
    try:
      state.set_local(then)
      hook = getattr(state, "_update_thread_local_hook", None)
      if hook is not None:
        hook(None if then is UNSET else then)
    except Exception as e:  # noqa: BLE001  (a value jax refuses to set back)
      error = f"{type(e).__name__}: {e}"
    changes.append(LocalChange(name, then, now, error))
  return changes


def value_text(value: Any) -> str:
  """A state's per-thread value as a message shows it: ``unset`` where the thread had none."""
  return "unset" if value is UNSET else repr(value)


def _same(a: Any, b: Any) -> bool:
  if a is UNSET or b is UNSET:
    return False
  try:
    return bool(a == b)
  except Exception:  # noqa: BLE001  (a value without a plain equality)
    return False
