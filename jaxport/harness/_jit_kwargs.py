"""A case's ``jit_kwargs`` from the ``jax.jit`` object a library ships.

A library of sharded models often hands out its functions already wrapped, as
``jax.jit(fun, in_shardings=..., out_shardings=...)`` over a mesh it builds. Its meshes need
the devices of the process that exports, so the object cannot be built when the case module
is imported: :func:`jit_kwargs_from` takes a function that builds it, and gives a case the
``jit_kwargs`` callable the worker calls when it exports the case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxport.errors import ExportError

# jax.jit settings a case's export cannot take from the object: arguments the case's inputs
# do not describe, and placement the worker decides.
_REFUSED = {
    "static_argnums": "a case's inputs are arrays only; close over static values in its fun",
    "device": "the worker places a case on its own devices; give shardings instead",
    "backend": "the worker places a case on its own devices; give shardings instead",
    "in_layouts": "layouts are not part of a case's export",
    "out_layouts": "layouts are not part of a case's export",
}


def jit_kwargs_from(factory: Callable[[], Any]) -> Callable[[], dict[str, Any]]:
  """``Case(jit_kwargs=...)`` from ``factory``, a function returning the library's own
  ``jax.jit`` object (``jax.jit(fun, in_shardings=..., out_shardings=...)``). The worker calls
  it when it exports the case, on its own devices; the object's shardings and donation
  become the case's ``jax.jit`` keyword arguments, so the entry is exported as the library's
  object would be. The case's ``fun`` is the function the object wraps.

  A factory that returns something else, or an object made with settings a case cannot
  take (static arguments, a device or backend, layouts), is an ``ExportError`` naming it."""
  def jit_kwargs() -> dict[str, Any]:
    from jaxport._jaxcompat import _jit_info  # local: a case module is imported without jax

    name = getattr(factory, "__qualname__", repr(factory))
    jitted = factory()
    if not _jit_info.is_jit_object(jitted):
      raise ExportError(f"jit_kwargs_from({name}): the factory returned a "
                        f"{type(jitted).__name__}, not a jax.jit object; return "
                        "jax.jit(fun, in_shardings=..., out_shardings=...).")
    try:
      settings = _jit_info.jit_settings(jitted)
    except LookupError as e:
      raise ExportError(f"jit_kwargs_from({name}): this jax's jax.jit object cannot be read "
                        f"({e}); give the case jit_kwargs returning the keyword arguments "
                        "instead.") from None
    refused = {k: why for k, why in _REFUSED.items() if k in settings}
    if refused:
      raise ExportError(f"jit_kwargs_from({name}): the jax.jit object sets "
                        + "; ".join(f"{k} ({why})" for k, why in refused.items()) + ".")
    return settings

  jit_kwargs.__qualname__ = f"jit_kwargs_from({getattr(factory, '__qualname__', 'factory')})"
  return jit_kwargs
