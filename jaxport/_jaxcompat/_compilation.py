"""jax's compilation internals jaxport builds on, imported in one place: the backends
(``xla_bridge``), the compile step (``compiler``) and its persistent-cache key
(``cache_key``)."""

from __future__ import annotations

from jax._src import cache_key, compiler, xla_bridge

__all__ = ["cache_key", "compiler", "xla_bridge"]
