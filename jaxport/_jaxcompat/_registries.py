"""Writing jaxport's dimension type and its effect into jax's private registries, each
checked before it is written.

Symbolic dimensions reach jax's tracing as a Python scalar type of jaxport's own; jax learns
about it from a handful of module-level registries (the aval of a Python value, the weak
scalar types, the scalar dtypes, the einsum path handlers, the effect sets a primitive may
carry). Each is private to jax and may change shape in a release: every write here checks
that the registry is still the kind of object it was written for and, where it is not,
stops the import with :class:`~jaxport.errors.JaxVersionError` naming the registry, rather
than leaving jax half-taught.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, MutableSet
from typing import Any

from jax._src import core, dtypes, effects
from jax._src.numpy import einsum as jnp_einsum

from jaxport._jaxcompat import _dtypes as jax_dtypes
from jaxport._jaxcompat import _version
from jaxport.errors import JaxVersionError


def _use_supported() -> str:
  return (f"use a supported jax release ({_version.MIN_JAX} to {_version.MAX_TESTED_JAX}) or a "
          f"jaxport release that supports jax {_version.installed_jax_version()}")


def _registry(owner: Any, name: str, kind: type) -> Any:
  """``owner.name``, checked to be a ``kind``."""
  found = getattr(owner, name, None)
  if not isinstance(found, kind):
    where = f"{getattr(owner, '__name__', owner)}.{name}"
    raise JaxVersionError(
        f"jax {_version.installed_jax_version()} has no {kind.__name__} {where} (found "
        f"{type(found).__name__}); jaxport registers its symbolic dimension type there. This "
        f"jax release changed a registry jaxport writes to: {_use_supported()}.")
  return found


def _callable(owner: Any, name: str) -> Callable[..., Any]:
  found = getattr(owner, name, None)
  if not callable(found):
    raise JaxVersionError(
        f"jax {_version.installed_jax_version()} has no function "
        f"{getattr(owner, '__name__', owner)}.{name}; jaxport registers its symbolic dimension "
        f"type with it: {_use_supported()}.")
  return found


def register_dimension_type(typ: type, einsum_contract_path: Callable[..., Any]) -> None:
  """Teach jax's tracing that instances of ``typ`` are integer dimensions: their aval, a weak
  Python scalar of int's dtype, passed through value canonicalization unchanged, and
  contracted by ``einsum_contract_path`` in ``jnp.einsum``."""
  avals = _registry(core, "pytype_aval_mappings", MutableMapping)
  dim_value_aval = _callable(core, "dim_value_aval")
  register_weak = _callable(dtypes, "register_weak_scalar_type")
  scalar_types = _registry(dtypes, "python_scalar_types", MutableSet)
  scalar_dtypes = _registry(dtypes, "python_scalar_types_to_dtypes", MutableMapping)
  einsum_handlers = _registry(jnp_einsum, "_poly_einsum_handlers", MutableMapping)
  avals[typ] = lambda _: dim_value_aval()
  register_weak(typ)
  scalar_types.add(typ)
  scalar_dtypes[typ] = scalar_dtypes[int]
  jax_dtypes.register_identity_canonicalizer(typ)
  einsum_handlers[typ] = einsum_contract_path


# The effect sets an effect must join to be lowered, and to pass through control flow,
# rematerialization and custom derivatives.
_EFFECT_SETS = ("lowerable_effects", "control_flow_allowed_effects", "remat_allowed_effects",
                "custom_derivatives_allowed_effects")


def allow_effect_type(effect_type: type) -> None:
  """Let primitives carrying an ``effect_type`` effect be lowered and appear under control
  flow, rematerialization and custom derivatives."""
  sets = [getattr(effects, name, None) for name in _EFFECT_SETS]
  for name, effect_set in zip(_EFFECT_SETS, sets):
    if not callable(getattr(effect_set, "add_type", None)):
      raise JaxVersionError(
          f"jax {_version.installed_jax_version()} has no effect set effects.{name} with "
          f"add_type; jaxport's shape assertions are an effect that must join it: "
          f"{_use_supported()}.")
  for effect_set in sets:
    effect_set.add_type(effect_type)
