"""Which devices a run has and an entry needs: the platform of jax's backend, the platforms whose
entries a run checks, the host device count of an entry, and the XLA flag that gives it.

jax names a CUDA or ROCm backend ``gpu`` (``jax.default_backend()``,
``device.platform``) and tells the two apart only in its client's
``platform_version`` (``"cuda 13000"``, ``"rocm 60300"``); the harness names
platforms as golden entries do (``cuda``, ``rocm``). :func:`harness_platform` is
the one place that maps the one to the other. Everything but
:func:`backend_platform` works without jax, so that the pytest side of a run
(which only routes entries to workers) never imports it.
"""

from __future__ import annotations

from typing import Any

from jaxport._vocabulary import PLATFORMS
from jaxport.errors import GoldenDataError

FORCE_DEVICES_FLAG = "--xla_force_host_platform_device_count"

# Platforms whose entries need their own device to run; a CPU run checks their entries
# without running them (:func:`numerics_skip`).
ACCELERATORS = tuple(p for p in PLATFORMS if p != "cpu")
# jax's backend name for CUDA and ROCm devices alike.
JAX_GPU_BACKEND = "gpu"


def devices_needed(recorded: dict[str, Any] | None) -> int:
  """The device count a ``shardings.json`` object asks for (1 without one)."""
  if recorded is None:
    return 1
  n = recorded.get("num_devices")
  if not isinstance(n, int) or isinstance(n, bool) or n < 1:
    raise GoldenDataError(f"shardings.json: num_devices must be a positive integer, got {n!r}; "
                          "restore the entry from version control or record a new one.")
  return n


def harness_platform(backend: str, platform_version: str = "") -> str:
  """The harness's name (``cpu``, ``cuda``, ``rocm``, ``tpu``) of a jax backend: ``gpu`` is
  ``cuda`` or ``rocm`` as the client's ``platform_version`` names it (``gpu`` itself when it
  names neither); other names are kept."""
  name = backend.strip().lower()
  if name != JAX_GPU_BACKEND:
    return name
  version = platform_version.lower()
  if "rocm" in version or "hip" in version:
    return "rocm"
  if "cuda" in version:
    return "cuda"
  return name


def _jax_backend() -> tuple[str, str]:
  """jax's default backend as its first device reports it: (platform, platform_version)."""
  import jax
  device = jax.devices()[0]
  return device.platform, str(getattr(device.client, "platform_version", "") or "")


def backend_platform() -> str:
  """The harness platform of this process's jax backend (imports jax)."""
  return harness_platform(*_jax_backend())


def checked_platforms(platform: str) -> tuple[str, ...]:
  """The store's platform folders a run on ``platform`` checks: its own, and on a CPU run the
  accelerators' too, whose entries it checks without running them."""
  return (platform, *ACCELERATORS) if platform == "cpu" else (platform,)


def numerics_skip(run_platform: str, entry_platform: str) -> str | None:
  """Why a run on ``run_platform`` does not run an entry recorded on ``entry_platform`` (None
  when it runs it): the reason the skip ledger gives."""
  if entry_platform == run_platform:
    return None
  return (f"numerics not compared: numerics need a {entry_platform} device and this run is on "
          f"{run_platform}; the blob, both readers' envelopes, its custom-call targets and "
          f"signatures were checked (a run with --compat-platform={entry_platform} on a "
          f"{entry_platform} machine runs it)")
