"""How symbolic dimensions mix with values that are not dimensions (traced arrays): the jax
bridge installs the hooks that pick arrays out and evaluate ``max``/``min`` on them, so that
the expressions themselves import nothing from jax.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from jaxport.shapes._terms import Expression


class _ArrayHooks:
  """How non-dimension operands (traced arrays) are handled; set by the jax bridge."""

  is_array: Callable[[Any], bool] = staticmethod(lambda x: False)
  as_array: Callable[[Expression], Any] | None = None
  array_max: Callable[[Any, Any], Any] = staticmethod(max)
  array_min: Callable[[Any, Any], Any] = staticmethod(min)


hooks = _ArrayHooks()


def install_array_hooks(*, is_array: Callable[[Any], bool], as_array: Callable[[Expression], Any],
                        array_max: Callable[[Any, Any], Any],
                        array_min: Callable[[Any, Any], Any]) -> None:
  """Lets expressions mix with arrays: ``is_array(x)`` picks them out, ``as_array(e)``
  turns an expression into one, and ``array_max``/``array_min`` evaluate those factors."""
  hooks.is_array = is_array
  hooks.as_array = as_array
  hooks.array_max = array_max
  hooks.array_min = array_min


def is_int_like(x: Any) -> bool:
  """Whether ``x`` is an integer as ``operator.index`` takes one (a numpy integer too)."""
  try:
    operator.index(x)
    return True
  except Exception:
    return False
