"""The machine an entry was recorded or replayed on, and when two machines compute alike.

XLA's CPU code paths depend on the instruction sets the CPU offers, so a
function compiled on two CPUs can differ in its last bits while both are right.
A :class:`Host` holds what decides those paths: the CPU's vendor, model and the
instruction-set flags of :data:`CPU_FLAGS`, the jaxlib version and
``XLA_FLAGS``, and on an accelerator its device kind, driver, CUDA and plugin
versions. Two hosts are of one class when every field is known and equal; only
then is a bitwise difference news (``numerics_drift``).

This module reads ``/proc/cpuinfo``, the environment and package metadata; it
imports jax only to name an accelerator's device kind and runtime version (its
client's ``platform_version``), and reads the NVIDIA driver's version from
``/proc`` (or, without that file, from ``nvidia-smi``) only for a cuda host.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata as md
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from jaxport._platforms import HOST_PLATFORM, is_host, platform as platform_facts, runtime_version_text
from jaxport._jaxcompat._version import installed_jaxlib_version
from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import GoldenDataError

# The /proc/cpuinfo flags a host record keeps: exactly these names, and every flag that
# starts with one of the prefixes. Flags outside the list (bug workarounds, virtualisation
# features) do not change the code XLA generates, and would split classes for nothing.
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma")
CPU_FLAG_PREFIXES = ("avx512", "amx")

CPUINFO = Path("/proc/cpuinfo")
NVIDIA_DRIVER_FILE = Path("/proc/driver/nvidia/version")
_MAX_TEXT = 200
_MAX_FLAGS = 64
_FLAG_RE = re.compile(r"[a-z0-9_]{1,40}")
_DRIVER_RE = re.compile(r"Kernel Module\s+([0-9][0-9.]*)")


def keeps_flag(flag: str) -> bool:
  """Whether a /proc/cpuinfo flag is one a host record keeps."""
  return flag in CPU_FLAGS or flag.startswith(CPU_FLAG_PREFIXES)


def _text(s: Strict, value: Any, where: str) -> str | None:
  """A field of text: null, or printable text of at most ``_MAX_TEXT`` characters."""
  if value is not None and not (isinstance(value, str) and len(value) <= _MAX_TEXT
                                and value.isprintable()):
    raise s.fail(where, f"expected null or printable text of at most {_MAX_TEXT} characters, "
                        f"got {_short(value)}")
  return value


def _flags(s: Strict, value: Any, where: str) -> tuple[str, ...] | None:
  """The kept CPU flags: null, or at most ``_MAX_FLAGS`` of them, sorted, each once."""
  if value is None:
    return None
  if not isinstance(value, list) or len(value) > _MAX_FLAGS or not all(
      isinstance(f, str) and _FLAG_RE.fullmatch(f) and keeps_flag(f) for f in value):
    raise s.fail(where, f"expected null or a list of at most {_MAX_FLAGS} flags among "
                        f"{list(CPU_FLAGS)} and {[p + '*' for p in CPU_FLAG_PREFIXES]}, got "
                        f"{_short(value)}")
  if len(set(value)) != len(value) or list(value) != sorted(value):
    raise s.fail(where, f"expected sorted flags, each once, got {_short(value)}")
  return tuple(value)


# A host record's refusals name the record's key path; the reader says where the record is.
_STRICT = Strict(lambda at, what: GoldenDataError(
    f"{at}: {what}. A host record has the keys ['cpu_vendor', 'cpu_model', 'cpu_flags', "
    "'jaxlib', 'xla_flags'] (and 'accelerator' on an accelerator)."))


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class Accelerator:
  """The accelerator a non-CPU entry ran on; None in a field where it is unknown."""

  device_kind: str | None = key(read=_text)
  driver: str | None = key(read=_text)
  cuda: str | None = key(read=_text)
  plugin: str | None = key(read=_text)


@json_record(_STRICT)
@dataclasses.dataclass(frozen=True)
class Host:
  """What decides the bits a compiled function computes on one machine.

  ``None`` in a field means unknown; ``accelerator`` is None for a CPU entry.
  """

  cpu_vendor: str | None = key(read=_text)
  cpu_model: str | None = key(read=_text)
  cpu_flags: tuple[str, ...] | None = key(read=_flags)
  jaxlib: str | None = key(read=_text)
  xla_flags: str | None = key(read=_text)
  # Written on an accelerator only; an object where written (null does not read).
  accelerator: Accelerator | None = key(
      default=None, omit_default=True,
      read=lambda s, v, where: Accelerator.from_json(v, where, s))

  def __post_init__(self):
    if self.cpu_flags is not None:
      object.__setattr__(self, "cpu_flags", tuple(sorted(set(self.cpu_flags))))

  @property
  def fully_known(self) -> bool:
    """Whether every field is known (XLA_FLAGS may be empty, never unknown)."""
    fields = [self.cpu_vendor, self.cpu_model, self.cpu_flags, self.jaxlib, self.xla_flags]
    if self.accelerator is not None:
      fields += dataclasses.astuple(self.accelerator)
    return all(f is not None for f in fields)

  def same_class(self, other: Host | None) -> bool:
    """Whether ``other`` computes bit for bit as this host does: every field known, and equal."""
    return other is not None and self.fully_known and other.fully_known and self == other

  def same_machine(self, other: Host | None) -> bool:
    """Whether ``other`` is a machine of this one's class (CPU vendor, model and flags, and the
    accelerator's kind, all known and equal), whatever jaxlib and XLA_FLAGS each ran."""
    def machine(h: Host) -> tuple[Any, ...]:
      kind = h.accelerator.device_kind if h.accelerator is not None else ""
      return (h.cpu_vendor, h.cpu_model, h.cpu_flags, kind)
    return (other is not None and None not in machine(self)
            and machine(self) == machine(other))

  def differences(self, other: Host | None) -> tuple[str, ...]:
    """The fields that make ``other`` another class than this host, unknown ones included."""
    if other is None:
      return ("the other host is unknown",)
    mine, theirs = self.to_json(), other.to_json()
    out = []
    for field in sorted(set(mine) | set(theirs)):
      a, b = mine.get(field), theirs.get(field)
      if a is None or b is None:
        out.append(f"{field} unknown")
      elif a != b:
        out.append(f"{field} {_short(a)} vs {_short(b)}")
    return tuple(out)

  def describe(self) -> str:
    """One line for reports: CPU model, the widest vector flags, jaxlib, XLA_FLAGS."""
    cpu = " ".join(x for x in (self.cpu_vendor, self.cpu_model) if x) or "unknown CPU"
    if self.cpu_flags is None:
      flags = "flags unknown"
    else:
      widest = [f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in self.cpu_flags]
      flags = widest[0] if widest else "no vector flags"
    parts = [cpu, flags, f"jaxlib {self.jaxlib or 'unknown'}"]
    if self.xla_flags:
      parts.append(f"XLA_FLAGS={self.xla_flags}")
    if self.accelerator is not None:
      parts.append(self.accelerator.device_kind or "unknown accelerator")
    return ", ".join(parts)


def _short(value: Any) -> str:
  text = repr(value)
  return text if len(text) <= 80 else text[:77] + "..."


def read_cpuinfo(text: str) -> tuple[str | None, str | None, tuple[str, ...] | None]:
  """The vendor, model name and kept flags of the first processor in ``/proc/cpuinfo`` text."""
  fields: dict[str, str] = {}
  for line in text.splitlines():
    if not line.strip():
      if fields:
        break
      continue
    key, _, value = line.partition(":")
    fields.setdefault(key.strip(), value.strip())
  flags = fields.get("flags")
  return (fields.get("vendor_id") or None, fields.get("model name") or None,
          None if flags is None else tuple(f for f in flags.split() if keeps_flag(f)))



# The PJRT plugin distributions of each accelerator platform (normalized names).
_NVIDIA_SMI_TIMEOUT_S = 10.0


def _device_facts(platform: str) -> tuple[str | None, str | None]:
  """The device kind of ``platform``'s first device and its client's ``platform_version``
  (None where there is no such device here)."""
  try:
    import jax
    device = jax.devices(platform)[0]
  except Exception:  # noqa: BLE001 - no such device here: unknown
    return None, None
  version = getattr(getattr(device, "client", None), "platform_version", None)
  kind = getattr(device, "device_kind", None)
  return (str(kind)[:_MAX_TEXT] if kind else None, str(version) if version else None)


def runtime_version(platform_version: str | None) -> str | None:
  """The CUDA or ROCm runtime version a GPU client's ``platform_version`` names: ``"cuda
  13000"`` is ``13.0``, ``"rocm 60300"`` is ``6.3.0``; other text is kept as it is (None when
  there is none)."""
  if not platform_version or not platform_version.strip():
    return None
  known = runtime_version_text(platform_version)
  if known is None:  # another spelling: kept when it names a version at all ("<unknown>" does not)
    text = platform_version.strip()
    return text[:_MAX_TEXT] if text.isprintable() and any(c.isdigit() for c in text) else None
  return known


def _installed() -> dict[str, str]:
  """Installed distributions: normalized name -> version."""
  out: dict[str, str] = {}
  for dist in md.distributions():
    name = (dist.metadata.get("Name") or "").replace("_", "-").lower()
    if name:
      out.setdefault(name, dist.version)
  return out


def _nvidia_driver() -> str | None:
  """The NVIDIA kernel driver's version: from ``/proc``, else from ``nvidia-smi``."""
  try:
    hit = _DRIVER_RE.search(NVIDIA_DRIVER_FILE.read_text(errors="replace")[:4096])
    if hit:
      return hit.group(1)
  except OSError:
    pass
  try:
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT_S, check=False)
  except (OSError, subprocess.SubprocessError):
    return None
  lines = out.stdout.strip().splitlines() if out.returncode == 0 else []
  version = lines[0].strip() if lines else ""
  return version if re.fullmatch(r"[0-9][0-9.]*", version) else None


def _accelerator(platform: str) -> Accelerator:
  """The device kind, driver, CUDA (or ROCm) runtime and plugin versions of ``platform``'s
  first device; None in each field this machine does not tell."""
  kind, platform_version = _device_facts(platform)
  installed = _installed()
  facts = platform_facts(platform)
  plugins = sorted(f"{name} {version}" for name, version in installed.items()
                   if facts.plugin is not None and facts.plugin.fullmatch(name))
  runtime = runtime_version(platform_version)
  if facts.runtime_wheels is not None and runtime is None:
    wheels = sorted(v for name, v in installed.items() if facts.runtime_wheels.fullmatch(name))
    runtime = wheels[0] if wheels else None
  return Accelerator(device_kind=kind, driver=_nvidia_driver() if facts.nvidia_driver else None,
                     cuda=runtime if facts.runtime is not None else None,
                     plugin=", ".join(plugins)[:_MAX_TEXT] if plugins else None)


def current_host(platform: str = HOST_PLATFORM, jaxlib: str | None = None) -> Host:
  """The host this process runs on, for ``platform``; ``jaxlib`` names another jaxlib than
  the installed one (an entry recorded in another venv on this machine)."""
  try:
    vendor, model, flags = read_cpuinfo(CPUINFO.read_text(errors="replace")[:1 << 20])
  except OSError:
    vendor = model = flags = None
  return Host(cpu_vendor=vendor, cpu_model=model, cpu_flags=flags,
              jaxlib=jaxlib if jaxlib is not None else installed_jaxlib_version(),
              xla_flags=os.environ.get("XLA_FLAGS", "").strip(),
              accelerator=None if is_host(platform) else _accelerator(platform))
