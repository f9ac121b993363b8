"""Making jaxlib's LAPACK kernels available before a CPU module that calls them is compiled.

jax 0.10 registers them lazily (``lax.linalg.initialize_lapack``); 0.9.x
registers them when jax is imported, so there is nothing to do.
"""

from __future__ import annotations

from jax._src.lax import linalg


def initialize_lapack() -> None:
  """Register the LAPACK custom-call kernels if this jax does that lazily."""
  initialize = getattr(linalg, "initialize_lapack", None)
  if initialize is not None:
    initialize()
