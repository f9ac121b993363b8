"""The manifest's ``no_cotangent`` field (format 4): the inputs of an entry with a VJP that
have no cotangent (integers, bools, PRNG keys; jax gives them ``float0``, which holds
nothing), so the entry stores no VJP output for them. Checked here, for ``_manifest``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxport.errors import GoldenDataError

# The prefix of the output paths of the VJP of order 1 in ``tolerances`` (``vjp1:args[0]``).
VJP_PREFIX = "vjp1:"


def check(d: dict[str, Any], where: str,
          bad: Callable[[str, str, str, Any], GoldenDataError]) -> None:
  """``no_cotangent``: a list of distinct, non-empty input paths, none of which has a VJP
  output among the manifest's ``tolerances``; ``bad(where, field, expected, got)`` makes the
  error."""
  paths = d["no_cotangent"]
  if not isinstance(paths, (list, tuple)):
    raise bad(where, "no_cotangent", "a list of input paths such as 'args[1]'", paths)
  for i, p in enumerate(paths):
    if not isinstance(p, str) or not p:
      raise bad(where, f"no_cotangent[{i}]", "a non-empty input path such as 'args[1]'", p)
  if len(set(paths)) != len(paths):
    raise bad(where, "no_cotangent", "distinct input paths", list(paths))
  tolerances = d.get("tolerances")
  if isinstance(tolerances, (list, tuple)):
    stored = {t.get("path") if isinstance(t, dict) else getattr(t, "path", None)
              for t in tolerances}
    both = sorted(p for p in paths if VJP_PREFIX + p in stored)
    if both:
      raise bad(where, "no_cotangent", "inputs without a stored VJP output, but "
                f"tolerances hold {[VJP_PREFIX + p for p in both]}", list(paths))
