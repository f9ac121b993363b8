"""A jax release's version text as numbers: the one reading of ``MAJOR.MINOR.PATCH`` (and
jax's optional fourth number) that the release table, its dates and the measured runs share.
"""

from __future__ import annotations

import re

# MAJOR.MINOR.PATCH and jax's optional fourth number (0.12.0.1).
VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(version: str) -> tuple[int, ...]:
  """``"0.9.2"`` -> ``(0, 9, 2)``; a ValueError naming the format otherwise."""
  m = VERSION_RE.fullmatch(str(version))
  if m is None:
    raise ValueError(f"jax version {version!r} is not of the form MAJOR.MINOR.PATCH (e.g. 0.9.2).")
  return tuple(int(g) for g in m.groups() if g is not None)
