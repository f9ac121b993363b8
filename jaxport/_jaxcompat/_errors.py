"""Where the installed jax exposes ``InconclusiveDimensionOperation``.

jax 0.10.1 made it public in ``jax.errors``; 0.10.0 has it in
``jax.extend.core``, 0.9.x in ``jax.core``. It is the same class in all of
them, so jax's shape rules that catch it keep catching what jaxport raises.
"""

from __future__ import annotations

import importlib


def _find_inconclusive() -> type[Exception]:
  for owner in ("jax.errors", "jax.extend.core", "jax.core"):
    try:
      module = importlib.import_module(owner)
    except ImportError:
      continue
    found = getattr(module, "InconclusiveDimensionOperation", None)
    if isinstance(found, type):
      return found
  raise ImportError("This jax has no InconclusiveDimensionOperation in jax.errors, jax.extend.core "
                    "or jax.core; jaxport cannot raise the class jax's shape rules catch.")


InconclusiveDimensionOperation = _find_inconclusive()
