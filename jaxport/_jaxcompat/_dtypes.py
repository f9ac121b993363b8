"""Telling jax's value canonicalization to pass a Python scalar type through unchanged.

jax 0.10.2 has ``dtypes.register_canonicalize_value_handler`` (its canonicalizer
moved into C++); earlier releases keep a plain ``canonicalize_value_handlers``
dict.
"""

from __future__ import annotations

from jax._src import dtypes


def register_identity_canonicalizer(typ: type) -> None:
  """Make ``canonicalize_value`` return instances of ``typ`` as they are."""
  register = getattr(dtypes, "register_canonicalize_value_handler", None)
  if register is not None:
    register(typ, None)
  else:
    dtypes.canonicalize_value_handlers[typ] = lambda x: x
