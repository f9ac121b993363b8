"""The settings a ``jax.jit`` object was made with, read back.

jax keeps what ``jax.jit(fun, in_shardings=..., ...)`` was given on the object it returns
(``_jit_info``, a ``PjitInfo``: each sharding tree as its leaves and treedef, an argument
given none holding jax's "unspecified" marker). jax has no public reader of them; this
module is the one place that reads them, by field name, so a jax that renames one fails
here with the field named.
"""

from __future__ import annotations

from typing import Any

import jax

# Fields of ``PjitInfo`` read, and the default each has when ``jax.jit`` was not given it.
# jax resolves argument names and numbers into each other and keeps both; the numbers
# alone say the same for a function of positional arguments.
_PLAIN = {"donate_argnums": (), "static_argnums": (), "keep_unused": False, "device": None,
          "backend": None}
_TREES = ("in_shardings", "out_shardings", "in_layouts", "out_layouts")


def is_jit_object(obj: Any) -> bool:
  """Whether ``obj`` is what ``jax.jit`` returns."""
  return callable(obj) and hasattr(obj, "_jit_info") and hasattr(obj, "lower")


def jit_settings(jitted: Any) -> dict[str, Any]:
  """``jax.jit`` keyword arguments ``jitted`` was made with that differ from jax's defaults:
  a sharding or layout tree (its unspecified leaves as None) and the plain settings.
  ``LookupError`` naming the field when this jax keeps one elsewhere."""
  info = jitted._jit_info
  out: dict[str, Any] = {}
  for name in _TREES:
    try:
      leaves, treedef = getattr(info, f"{name}_leaves"), getattr(info, f"{name}_treedef")
    except AttributeError:
      raise LookupError(f"jax.jit objects of this jax keep no {name}_leaves") from None
    leaves = [None if _unspecified(x) else x for x in leaves]
    if any(x is not None for x in leaves):
      out[name] = jax.tree_util.tree_unflatten(treedef, leaves)
  for name, default in _PLAIN.items():
    if not hasattr(info, name):
      raise LookupError(f"jax.jit objects of this jax keep no {name}")
    value = getattr(info, name)
    if value != default:
      out[name] = value
  return out


def _unspecified(x: Any) -> bool:
  return x is None or type(x).__name__ == "UnspecifiedValue"
