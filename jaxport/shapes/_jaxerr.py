"""The one exception class the symbolic-shape core shares with jax.

jax's shape rules catch ``InconclusiveDimensionOperation`` by its own class, so
jaxport raises exactly that class. Keeping the import here lets every other
core module stay free of jax.
"""

from __future__ import annotations

from jaxport._jaxcompat import _messages as jax_messages
from jaxport._jaxcompat._errors import InconclusiveDimensionOperation as InconclusiveDimensionOperation

_HELP = f"""
This error arises for comparison operations with shapes that
are non-constant, and the result of the operation cannot be represented as
a boolean value for all values of the symbolic dimensions involved.

Please see {jax_messages.SHAPE_POLY_PAGE}#comparison-of-symbolic-dimensions-is-partially-supported
for more details.
"""


def inconclusive(message: str) -> InconclusiveDimensionOperation:
  """An ``InconclusiveDimensionOperation`` with jax's explanatory trailer."""
  return InconclusiveDimensionOperation(message + _HELP)
