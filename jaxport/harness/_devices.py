"""How many host devices an entry's replay needs, and the XLA flag that gives a worker that many.

Read from the entry's ``shardings.json`` without jax, so that the pytest side of
a run (which only routes entries to workers) never imports it.
"""

from __future__ import annotations

from typing import Any

from jaxport.errors import GoldenDataError

FORCE_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def devices_needed(recorded: dict[str, Any] | None) -> int:
  """The device count a ``shardings.json`` object asks for (1 without one)."""
  if recorded is None:
    return 1
  n = recorded.get("num_devices")
  if not isinstance(n, int) or isinstance(n, bool) or n < 1:
    raise GoldenDataError(f"shardings.json: num_devices must be a positive integer, got {n!r}; "
                          "restore the entry from version control or record a new one.")
  return n
