"""Which devices a run has and an entry needs: the platform of jax's backend, the platforms whose
entries a run checks, the host device count of an entry, and the XLA flag that gives it.

jax names a CUDA or ROCm backend ``gpu`` (``jax.default_backend()``,
``device.platform``) and tells the two apart only in its client's
``platform_version`` (``"cuda 13000"``, ``"rocm 60300"``); the harness names
platforms as golden entries do (``cuda``, ``rocm``). :func:`harness_platform` is
the one place that maps the one to the other. Nothing here imports jax: the
pytest side of a run only routes entries to workers, and on a machine whose
accelerator one process at a time can hold (a TPU chip) it must leave the device
to them. A worker answers what its backend is (``_device_probe``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from typing import Any

from jaxport._platforms import ACCELERATORS as ACCELERATORS, HOST_PLATFORM, is_host, of_gpu_backend
from jaxport._platforms import single_holder as single_holder  # noqa: F401  (the harness asks here)
from jaxport.errors import GoldenDataError

FORCE_DEVICES_FLAG = "--xla_force_host_platform_device_count"

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
  return of_gpu_backend(platform_version) or name


# The environment variable that names the platforms jax may use, first the default.
JAX_PLATFORMS_ENV = "JAX_PLATFORMS"


def only_cpu_possible() -> bool:
  """Whether jax's default backend can only be the CPU, decided without importing jax.

  jax picks an accelerator only through a PJRT plugin (a module under the
  ``jax_plugins`` namespace package or a ``jax_plugins`` entry point) or libtpu,
  unless ``JAX_PLATFORMS`` names the platforms itself.
  """
  platforms = os.environ.get(JAX_PLATFORMS_ENV, "").strip()
  if platforms:
    return is_host(platforms.split(",")[0].strip())
  if importlib.util.find_spec("jax_plugins") is not None or importlib.util.find_spec("libtpu"):
    return False
  return not importlib.metadata.entry_points(group="jax_plugins")


def worker_environment(run_platform: str, env: dict[str, str]) -> dict[str, str]:
  """``env`` as a worker of a run on ``run_platform`` gets it: a CPU run's workers are held
  to the CPU (``JAX_PLATFORMS=cpu``), so that a CPU run on an accelerator machine never
  opens the accelerator; other runs' workers keep the caller's setting."""
  if is_host(run_platform):
    return {**env, JAX_PLATFORMS_ENV: HOST_PLATFORM}
  return env


def platform_mismatch(asked: str, backend: str) -> str | None:
  """Why a run asked for ``asked`` cannot run where the worker's backend is ``backend`` (None
  when they agree)."""
  if backend == asked:
    return None
  return (f"--compat-platform={asked} replays entries that run on {asked}, but this machine's "
          f"jax backend is {backend} (as the harness's worker found it). Run on a {asked} "
          f"machine or pass --compat-platform={backend}.")


def device_shortfall(needed: int, available: int, platform: str) -> str | None:
  """Why an entry needing ``needed`` devices is not run on a machine with ``available``
  ``platform`` devices (None when it has enough): the reason the skip ledger gives."""
  if needed <= available:
    return None
  return (f"numerics not compared: the entry needs {needed} {platform} devices and this "
          f"machine has {available}; the blob, both readers' envelopes, its custom-call "
          f"targets and signatures were checked (a machine with {needed} {platform} devices "
          "runs it)")


def checked_platforms(platform: str) -> tuple[str, ...]:
  """The store's platform folders a run on ``platform`` checks: its own, and on a CPU run the
  accelerators' too, whose entries it checks without running them."""
  return (platform, *ACCELERATORS) if is_host(platform) else (platform,)


def numerics_skip(run_platform: str, entry_platform: str) -> str | None:
  """Why a run on ``run_platform`` does not run an entry recorded on ``entry_platform`` (None
  when it runs it): the reason the skip ledger gives."""
  if entry_platform == run_platform:
    return None
  return (f"numerics not compared: numerics need a {entry_platform} device and this run is on "
          f"{run_platform}; the blob, both readers' envelopes, its custom-call targets and "
          f"signatures were checked (a run with --compat-platform={entry_platform} on a "
          f"{entry_platform} machine runs it)")
