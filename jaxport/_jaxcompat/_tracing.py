"""jax's tracing internals jaxport builds on, imported in one place: abstract values and
dimensions (``core``), dtypes, effects, source locations, configuration and primitive
dispatch.

A module that moves between jax releases is handled here, in one file; jaxport's tests probe
every attribute the package reads from these modules in the installed jax, so a release that
drops one fails by name.
"""

from __future__ import annotations

from jax._src import config, core, dispatch, dtypes, effects, source_info_util

__all__ = ["config", "core", "dispatch", "dtypes", "effects", "source_info_util"]
