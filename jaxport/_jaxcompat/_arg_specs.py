"""The shape and dtype ``symbolic_args_specs`` takes from an argument, across releases.

Up to jax 0.11.0 only a ``ShapeDtypeStruct`` gives its own dtype; any other
argument goes through ``core.typeof``, which canonicalizes it (a float64 numpy
array gives float32 without x64). From jax 0.11.1 anything with ``shape`` and
``dtype`` attributes gives them as they are. No attribute tells the two apart,
so this one behaviour is keyed on the release; a newer jax gets the newer one.
"""

from __future__ import annotations

from typing import Any

import jax
from jax._src import core

from jaxport._jaxcompat import _version

KEEPS_ARRAY_DTYPES = _version.release_tuple(jax.__version__) >= (0, 11, 1)


def shape_and_dtype(a: Any) -> tuple[Any, Any]:
  """``(shape, dtype)`` of one argument as this jax's ``symbolic_args_specs`` reads it."""
  if isinstance(a, jax.ShapeDtypeStruct) or (
      KEEPS_ARRAY_DTYPES and hasattr(a, "shape") and hasattr(a, "dtype")):
    return a.shape, a.dtype
  aval = core.typeof(a)
  return aval.shape, aval.dtype
