"""Making jaxlib's LAPACK kernels available before a CPU module that calls them is compiled.

jaxlib registers them lazily, the first time jax lowers a linear-algebra op.
A process that only calls a deserialized module has lowered none, and XLA
then crashes on the unregistered target. jax 0.10 exposes
``lax.linalg.initialize_lapack``; 0.9.x only has the extension's own
``initialize``, which its lowering rules call.
"""

from __future__ import annotations

from jax._src.lax import linalg


def initialize_lapack() -> None:
  """Register the LAPACK custom-call kernels if this jax does that lazily."""
  initialize = getattr(linalg, "initialize_lapack", None)
  if initialize is None:
    extension = getattr(getattr(linalg, "lapack", None), "_lapack", None)
    initialize = getattr(extension, "initialize", None)
  if initialize is not None:
    initialize()
