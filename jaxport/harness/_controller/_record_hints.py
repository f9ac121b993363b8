"""What to do about a recording failure whose cause is known: a line naming the fix, put
right after the failure's message and before jax's traceback."""

from __future__ import annotations

import re

# (pattern in the failure's text, the fix)
_HINTS = (
    (re.compile(r"exported for \d+ devices and is called in a context with \d+ devices|"
                r"\d+ devices and is called in a context with \d+ devices"),
     "fix: a case over several devices whose function uses shard_map (or any sharding) "
     "is exported with its shardings: give the Case jit_kwargs, a function returning "
     "{'in_shardings': ..., 'out_shardings': ...} over its num_devices devices "
     "(docs/downstream.md, section 4)"),
    (re.compile(r"not implemented for TPU and GPU"),
     "fix: jax lowers an FFT of symbolic length for the CPU only; give the FFT axis a fixed "
     "length in the case's polymorphic_shapes, or export the case for cpu alone "
     "(Case platforms=('cpu',)) with a jax that lowers it there (docs/downstream.md, "
     "section 4)"),
)


# jax's IndivisibleError of a symbolic dimension sharded over a mesh axis.
_INDIVISIBLE = re.compile(r"array axis (\d+) is partitioned (\d+) times, but the dimension size "
                          r"is ([^(]+?) \(full shape: \(([^)]*)\)")


def _indivisible_fix(m: re.Match) -> str:
  axis, times, dim, shape = int(m[1]), int(m[2]), m[3].strip(), m[4]
  dims = [d.strip() for d in shape.split(",") if d.strip()]
  if axis < len(dims):
    dims[axis] = f"{times}*{dim}" if re.fullmatch(r"\w+", dim) else f"{times}*k"
  example = ", ".join(dims)
  return (f"fix: dimension {axis} ({dim}) is sharded {times} ways (the size of the mesh axes "
          f"it is sharded over), and jax shards a symbolic size only when it is a multiple of "
          f"that: write it as a multiple of {times} in the case's polymorphic_shapes, e.g. "
          f"\"{example}\" (docs/downstream.md, section 4)")


def hint_for(text: str) -> str | None:
  """The fix for a recording failure whose ``text`` (message and traceback) shows a known
  cause; None for any other."""
  found = _INDIVISIBLE.search(text)
  if found:
    return _indivisible_fix(found)
  for pattern, fix in _HINTS:
    if pattern.search(text):
      return fix
  return None
