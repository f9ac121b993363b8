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


def ignore_forward_compatibility() -> bool:
  """Whether lowering may use custom calls and ops newer than the 4-week window."""
  return bool(jax.config.jax_export_ignore_forward_compatibility)


def use_shardy_partitioner() -> bool:
  """Whether shardings are lowered for the Shardy partitioner."""
  return bool(jax.config.jax_use_shardy_partitioner)
