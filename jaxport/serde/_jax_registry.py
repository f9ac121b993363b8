"""Registering a pytree node's serialization with ``jax.export`` as well, so that the blobs
jaxport writes are ones jax's ``deserialize`` reads in the same process.

jaxport never imports ``jax.export``, and needs not: jax's own package imports its export
module (``import jax`` loads ``jax.export`` in every supported release), so it is already
loaded when this module is. It is taken from ``sys.modules`` once, here, only to add
registrations to it; taken at import, so that a stand-in put in its place later (the
conformance runner routes ``jax.export`` to jaxport) is never mistaken for jax's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jax  # noqa: F401  (jax's package loads its export module, taken below)

from jaxport.errors import SerializationError, SerializationTypeError

_LOADED = sys.modules.get("jax.export")


def _registrar(jax_export: Any, function: str) -> Callable[..., Any]:
  """The registration ``function`` of ``jax_export`` (default: the loaded ``jax.export``)."""
  module = _LOADED if jax_export is None else jax_export
  register = getattr(module, function, None)
  if callable(register):
    return register
  if jax_export is None:
    raise SerializationError(
        "jaxport registers a serialization with jax.export too, but the installed jax did "
        "not load jax.export with `import jax`. Pass jax_export=jax.export (after import "
        "jax.export).")
  raise SerializationTypeError(
      f"jax_export must be the jax.export module, got {jax_export!r}. Pass "
      "jax_export=jax.export (after import jax.export), or leave it out: jaxport registers "
      "with the jax.export that `import jax` loaded.")


def _same_registration(message: str, nodetype: type, serialized_name: str) -> bool:
  """Whether jax's duplicate-type refusal ``message`` says ``nodetype`` is registered
  under ``serialized_name`` already (registered with jax.export before jaxport)."""
  return message == (f"Duplicate serialization registration for type `{nodetype}`. "
                     f"Previous registration was with serialized_name `{serialized_name}`.")


def register(jax_export: Any, function: str, nodetype: type, serialized_name: str,
             **kwargs: Any) -> Callable[[], None]:
  """A function registering ``nodetype`` under ``serialized_name`` with jax's export module
  by its ``function``; found (and checked) now, run when jaxport's own checks passed.

  The same type already registered with jax under the same name is accepted as it is; any
  other refusal by jax is raised with jax's message first, then the fix.
  """
  registrar = _registrar(jax_export, function)

  def run() -> None:
    try:
      registrar(nodetype, serialized_name=serialized_name, **kwargs)
    except ValueError as e:
      if _same_registration(str(e), nodetype, serialized_name):
        return
      raise SerializationError(
          f"{e}\njax.export refused the registration jaxport makes with it, so that jax's "
          "deserialize reads what jaxport writes; nothing was registered. Register the type "
          "under the serialized_name jax.export knows it by, or a name no other type has."
      ) from None
  return run
