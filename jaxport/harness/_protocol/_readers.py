"""Who records golden entries and which readers replay each: named on both sides of the pipe
(the session asks for the readers, the worker's reference switch imports them), so changing who
produces the golden data is a one-line edit here."""

from __future__ import annotations

# Who records golden entries and who is the primary reader.
PRIMARY = "jaxport"
# The independent second reader every entry is also replayed with.
REFERENCE = "jax"


def readers() -> tuple[str, ...]:
  """The readers every entry is replayed with, primary first."""
  return (PRIMARY, REFERENCE)
