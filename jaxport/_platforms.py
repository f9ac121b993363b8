"""What jaxport knows of each platform, declared once: the rest of the package asks here.

A platform is a folder of the golden store, a value of ``--compat-platform`` and of an
envelope's ``platforms``. Each :class:`Platform` says how the harness treats it (the host's
own processor, or an accelerator whose entries a host run checks without running them;
whether one process at a time holds its device), how the wire and jax name it (the words of a
device kind that name it, jax's backend name), what a host record keeps of it (its GPU
runtime and how that runtime spells its version, its PJRT plugin's distribution, NVIDIA's
driver) and which custom-call targets are its own (by name prefix).

A leaf module: the standard library only, so the pytest plugin's entry point and the
vocabulary import it without jax. Adding a platform is a row of :data:`_TABLE`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable


def _cuda_version(v: int) -> str:
  """CUDART_VERSION: 13000 is 13.0."""
  return f"{v // 1000}.{v % 1000 // 10}"


def _rocm_version(v: int) -> str:
  """TF_ROCM_VERSION: 60300 is 6.3.0."""
  return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"


@dataclasses.dataclass(frozen=True)
class Platform:
  """One platform's facts (see the module's docstring)."""
  name: str
  # The machine's own processor: a run on it checks the accelerators' entries without running
  # them, its release environments hold its jaxlib, jax's own corpus names it without a prefix.
  host: bool = False
  # One process at a time can hold its device: its runs use one worker.
  single_holder: bool = False
  # Its runtime keeps memory resident in a worker once the device is open, beyond the
  # worker's own limit (``_limits.TPU_RUNTIME_RSS_BYTES``).
  resident_runtime: bool = False
  # Lower-case words of a device kind that name it (an envelope written before
  # AbstractDevice.platform), and the platform those words name on the wire.
  device_kind_words: tuple[str, ...] = ()
  wire_name: str | None = None
  # jax's backend name where it differs (CUDA and ROCm are both ``gpu``), and the words of the
  # backend's platform_version that tell this platform apart there.
  backend: str | None = None
  backend_version_words: tuple[str, ...] = ()
  # The GPU runtime a host record keeps (the ``runtime 12345`` spelling of a client's
  # platform_version), and how that runtime writes its version as one number.
  runtime: str | None = None
  runtime_version: Callable[[int], str] | None = None
  # Distributions whose version names the runtime where the client does not.
  runtime_wheels: re.Pattern[str] | None = None
  # Its PJRT plugin's distribution names; whether the host keeps NVIDIA's driver version.
  plugin: re.Pattern[str] | None = None
  nvidia_driver: bool = False
  # Custom-call target name prefixes of its own libraries (others belong to every platform).
  target_prefixes: tuple[str, ...] = ()

  @property
  def jax_backend(self) -> str:
    """jax's backend name of the platform."""
    return self.backend or self.name


_TABLE = (
    Platform("cpu", host=True, device_kind_words=("cpu",), wire_name="cpu",
             target_prefixes=("lapack_", "blas_", "ducc_", "dynamic_ducc_")),
    Platform("cuda", device_kind_words=("nvidia", "tesla"), wire_name="gpu", backend="gpu",
             backend_version_words=("cuda",), runtime="cuda", runtime_version=_cuda_version,
             runtime_wheels=re.compile(r"nvidia-cuda-runtime(-cu\d+)?"),
             plugin=re.compile(r"jax-cuda\d+-(plugin|pjrt)"), nvidia_driver=True,
             target_prefixes=("cu", "gpu_")),
    Platform("rocm", device_kind_words=("amd",), wire_name="gpu", backend="gpu",
             backend_version_words=("rocm", "hip"), runtime="rocm", runtime_version=_rocm_version,
             plugin=re.compile(r"jax-rocm\d*-(plugin|pjrt)"), target_prefixes=("hip",)),
    Platform("tpu", single_holder=True, resident_runtime=True, device_kind_words=("tpu",),
             wire_name="tpu", plugin=re.compile(r"libtpu(-nightly)?"), target_prefixes=("tpu_",)),
)
_BY_NAME = {p.name: p for p in _TABLE}

# The platforms a golden entry is recorded for, in the order reports list them.
PLATFORMS = tuple(p.name for p in _TABLE)
# The host's own platform: the default of a run, and the one release environments hold.
HOST_PLATFORM = next(p.name for p in _TABLE if p.host)
# Platforms whose entries need their own device to run.
ACCELERATORS = tuple(p.name for p in _TABLE if not p.host)


def platform(name: str) -> Platform:
  """The facts of platform ``name``; ValueError naming the platforms known for another."""
  try:
    return _BY_NAME[name]
  except (KeyError, TypeError):
    raise ValueError(f"{name!r} is not a platform jaxport knows; it knows "
                     f"{', '.join(PLATFORMS)}") from None


def is_host(name: str) -> bool:
  """Whether ``name`` is the host's own platform (False for any other text)."""
  return name in _BY_NAME and _BY_NAME[name].host


def single_holder(name: str) -> bool:
  """Whether one process at a time holds platform ``name``'s device."""
  return name in _BY_NAME and _BY_NAME[name].single_holder


def any_is_host(names) -> bool:
  """Whether any of ``names`` (an envelope's platforms) is the host's platform."""
  return any(is_host(n) for n in names)


def wire_platform_of_device_kind(device_kind: str) -> str | None:
  """The platform an older envelope's device kind names, as the wire spells it (CUDA and ROCm
  devices are both ``gpu``), or None when no platform's words are in it."""
  kind = device_kind.lower()
  for p in _TABLE:
    if any(word in kind for word in p.device_kind_words):
      return p.wire_name
  return None


def of_gpu_backend(platform_version: str) -> str | None:
  """The platform a jax ``gpu`` backend is, from its client's ``platform_version``; None when
  it names none."""
  version = platform_version.lower()
  for p in _TABLE:
    if p.backend is not None and any(word in version for word in p.backend_version_words):
      return p.name
  return None


# A client's platform_version naming a runtime and its version as one number.
_RUNTIME_VERSION_RE = re.compile(
    "(" + "|".join(p.runtime for p in _TABLE if p.runtime) + r")\s+(\d{4,6})")


def runtime_version_text(platform_version: str) -> str | None:
  """The runtime version a client's ``platform_version`` names (``cuda 13000`` is ``13.0``),
  or None when it is not that spelling."""
  hit = _RUNTIME_VERSION_RE.fullmatch(platform_version.strip().lower())
  if hit is None:
    return None
  (owner,) = [p for p in _TABLE if p.runtime == hit.group(1)]
  return owner.runtime_version(int(hit.group(2)))


def target_platform(target: str) -> str | None:
  """The platform a custom-call target belongs to by its name, or None for one of every
  platform."""
  for p in _TABLE:
    if target.startswith(p.target_prefixes):
      return p.name
  return None


def corpus_prefixes(name: str) -> tuple[str, ...]:
  """The prefixes of jax's corpus dataset names for platform ``name`` (the host's datasets
  also go without one)."""
  return (f"{name}_", "") if is_host(name) else (f"{name}_",)
