"""The one switch between the exporter/reader under test and the reference reader.

The harness records with jaxport (``export`` + ``Exported.serialize``) and
replays every entry twice: with jaxport's reader and with ``jax.export``'s, an
independent implementation of the same wire format. Everything else in the
worker goes through this module; who produces the golden data and who reads it
are named in ``jaxport.harness._protocol._readers``, which the session asks with.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from jaxport.harness._protocol._readers import PRIMARY, REFERENCE, readers

__all__ = ["PRIMARY", "REFERENCE", "readers", "export", "deserialize", "symbolic_args_specs"]

# Each reader's module, imported when first used.
_MODULES = {"jaxport": "jaxport", "jax": "jax.export"}


def _module(reader: str):
  try:
    name = _MODULES[reader]
  except KeyError:
    raise ValueError(f"Unknown reader {reader!r}; expected one of {sorted(_MODULES)}.") from None
  return importlib.import_module(name)


def export(fun_jit: Callable, *, platforms=None, disabled_checks=(), producer: str = PRIMARY,
           for_jax: str | None = None):
  """``export`` of the producer (jaxport unless told otherwise); ``for_jax``: the consumer
  release to write for, which only jaxport's export takes."""
  extra = {} if for_jax is None else {"for_jax": for_jax}
  if extra and producer != PRIMARY:
    raise ValueError(f"for_jax={for_jax!r}: only the {PRIMARY} producer writes for another jax "
                     "release")
  return _module(producer).export(fun_jit, platforms=platforms, disabled_checks=disabled_checks,
                                  **extra)


def deserialize(blob: bytes | bytearray, *, reader: str = PRIMARY) -> Any:
  """An Exported read back from ``blob`` by ``reader``."""
  return _module(reader).deserialize(bytearray(blob))


def symbolic_args_specs(args, polymorphic_shapes, constraints=(), *, producer: str = PRIMARY):
  """Argument specs with symbolic dimensions, built by the producer's shape parser."""
  return _module(producer).symbolic_args_specs(args, polymorphic_shapes, constraints=constraints)
