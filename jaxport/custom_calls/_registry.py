"""The table of custom-call targets that are safe to serialize, loaded from data.

The table lives in ``stable_targets.json`` next to this module so that it can
be audited and extended without reading code. The export safety check allows
the union over all platforms, as jax does: a module lowered for one platform
never contains another platform's targets, and a multi-platform module may
legitimately contain several platforms' targets.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources

from jaxport.errors import ExportError

_DATA_FILE = "stable_targets.json"


@functools.cache
def _load() -> dict:
  text = resources.files(__package__).joinpath(_DATA_FILE).read_text(encoding="utf-8")
  return json.loads(text)


@functools.cache
def targets_by_platform() -> Mapping[str, frozenset[str]]:
  """Stable targets keyed by platform (``cpu``, ``cuda``, ``rocm``, ``tpu``, ``any``)."""
  table = _load()["platforms"]
  return {platform: frozenset(t for targets in by_op.values() for t in targets)
          for platform, by_op in table.items()}


@functools.cache
def targets_by_operation(platform: str) -> Mapping[str, tuple[str, ...]]:
  """The stable targets of ``platform`` grouped by the operation that emits them."""
  _check_platform(platform)
  return {op: tuple(targets) for op, targets in _load()["platforms"][platform].items()}


def stable_targets(platform: str | None = None) -> frozenset[str]:
  """Targets guaranteed stable on ``platform``, or on any platform when ``None``.

  A platform's set holds only its own targets; those listed under ``any`` are
  returned by ``stable_targets("any")`` and included when ``platform`` is None.
  """
  by_platform = targets_by_platform()
  if platform is None:
    return frozenset().union(*by_platform.values())
  _check_platform(platform)
  return by_platform[platform]


def deliberately_unstable() -> Mapping[str, str]:
  """Targets known to be unstable, with the reason they stay off the table."""
  return dict(_load()["deliberately_unstable"])


def _check_platform(platform: str) -> None:
  known = sorted(targets_by_platform())
  if platform not in known:
    raise ExportError(
        f"Unknown platform {platform!r} for the custom-call stability table; "
        f"expected one of {known}. Add a section for it to "
        f"jaxport/custom_calls/{_DATA_FILE} if it is a new platform.")
