"""Configuration read in one place.

jaxport honours jax's own export flags so that a program that configures
``jax.export`` configures jaxport the same way.
"""

from __future__ import annotations

import jax

from jaxport import _versions
from jaxport.errors import ExportError


def calling_convention_version() -> int:
  """The calling convention version to export with, validated."""
  version = jax.config.jax_export_calling_convention_version
  lo = _versions.MIN_CALLING_CONVENTION_VERSION
  hi = _versions.MAX_CALLING_CONVENTION_VERSION
  if not lo <= version <= hi:
    raise ExportError(
        f"The requested export calling convention version {version} is "
        f"outside the range of supported versions [{lo}..{hi}]. Set "
        f"jax.config.update('jax_export_calling_convention_version', {hi}).")
  return version
