"""jax's sharding internals jaxport builds on, imported in one place: meshes (``mesh_lib``)
and sharding implementations (``sharding_impls``). Differences in what they hold across
releases are ``_mesh``'s."""

from __future__ import annotations

from jax._src import mesh as mesh_lib
from jax._src import sharding_impls

__all__ = ["mesh_lib", "sharding_impls"]
