"""jax's own description of how two pytree structures differ.

jax words a pytree mismatch at call time with ``equality_errors_pytreedef``
(private, present in every supported release). Where it exists jaxport uses it,
so its message starts with exactly jax's lines; where a newer jax drops it,
callers fall back to their own description.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jax._src import tree_util

_EQUALITY_ERRORS = getattr(tree_util, "equality_errors_pytreedef", None)


def equality_errors(got: Any, want: Any) -> Sequence[tuple[Any, str, str, str]] | None:
  """(key path, what ``got`` has, what ``want`` has, why) per difference, as jax words them; None if this jax has no such function."""
  if _EQUALITY_ERRORS is None:
    return None
  return list(_EQUALITY_ERRORS(got, want))
