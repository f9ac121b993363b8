"""The machine an entry was recorded or replayed on, and when two machines compute alike.

XLA's CPU code paths depend on the instruction sets the CPU offers, so a
function compiled on two CPUs can differ in its last bits while both are right.
A :class:`Host` holds what decides those paths: the CPU's vendor, model and the
instruction-set flags of :data:`CPU_FLAGS`, the jaxlib version and
``XLA_FLAGS``, and on an accelerator its device kind, driver, CUDA and plugin
versions. Two hosts are of one class when every field is known and equal; only
then is a bitwise difference news (``numerics_drift``).

This module reads ``/proc/cpuinfo``, the environment and package metadata; it
imports jax only to name an accelerator's device kind.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata as md
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


@dataclasses.dataclass(frozen=True)
class Accelerator:
  """The accelerator a non-CPU entry ran on; None in a field where it is unknown."""

  device_kind: str | None
  driver: str | None
  cuda: str | None
  plugin: str | None


@dataclasses.dataclass(frozen=True)
class Host:
  """What decides the bits a compiled function computes on one machine.

  ``None`` in a field means unknown; ``accelerator`` is None for a CPU entry.
  """

  cpu_vendor: str | None
  cpu_model: str | None
  cpu_flags: tuple[str, ...] | None
  jaxlib: str | None
  xla_flags: str | None
  accelerator: Accelerator | None = None

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

  def differences(self, other: Host | None) -> tuple[str, ...]:
    """The fields that make ``other`` another class than this host, unknown ones included."""
    if other is None:
      return ("the other host is unknown",)
    mine, theirs = self.to_json(), other.to_json()
    out = []
    for key in sorted(set(mine) | set(theirs)):
      a, b = mine.get(key), theirs.get(key)
      if a is None or b is None:
        out.append(f"{key} unknown")
      elif a != b:
        out.append(f"{key} {_short(a)} vs {_short(b)}")
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

  def to_json(self) -> dict[str, Any]:
    """The record as a manifest or a report stores it (flat, JSON scalars and lists)."""
    d: dict[str, Any] = {"cpu_vendor": self.cpu_vendor, "cpu_model": self.cpu_model,
                         "cpu_flags": None if self.cpu_flags is None else list(self.cpu_flags),
                         "jaxlib": self.jaxlib, "xla_flags": self.xla_flags}
    if self.accelerator is not None:
      d["accelerator"] = dataclasses.asdict(self.accelerator)
    return d

  @classmethod
  def from_json(cls, d: Any, where: str) -> Host:
    """Read a host record; anything malformed is a :class:`GoldenDataError` naming the field."""
    keys = ("cpu_vendor", "cpu_model", "cpu_flags", "jaxlib", "xla_flags")
    if not isinstance(d, Mapping):
      raise GoldenDataError(f"{where}: host: expected an object with keys {list(keys)}, "
                            f"got {type(d).__name__}.")
    missing = [k for k in keys if k not in d]
    unknown = sorted(set(d) - set(keys) - {"accelerator"})
    if missing or unknown:
      raise GoldenDataError(f"{where}: host: expected keys {list(keys)} (and 'accelerator' on "
                            f"an accelerator); missing {missing}, unknown {unknown}.")
    for k in ("cpu_vendor", "cpu_model", "jaxlib", "xla_flags"):
      _text(d[k], where, f"host.{k}")
    flags = d["cpu_flags"]
    if flags is not None:
      if not isinstance(flags, list) or len(flags) > _MAX_FLAGS or not all(
          isinstance(f, str) and _FLAG_RE.fullmatch(f) and keeps_flag(f) for f in flags):
        raise GoldenDataError(
            f"{where}: host.cpu_flags: expected null or a list of at most {_MAX_FLAGS} flags "
            f"among {list(CPU_FLAGS)} and {[p + '*' for p in CPU_FLAG_PREFIXES]}, got "
            f"{_short(flags)}.")
      if len(set(flags)) != len(flags) or list(flags) != sorted(flags):
        raise GoldenDataError(f"{where}: host.cpu_flags: expected sorted flags, each once, got "
                              f"{_short(flags)}.")
    acc = None
    if "accelerator" in d:
      a = d["accelerator"]
      akeys = tuple(f.name for f in dataclasses.fields(Accelerator))
      if not isinstance(a, Mapping) or set(a) != set(akeys):
        raise GoldenDataError(f"{where}: host.accelerator: expected an object with keys "
                              f"{list(akeys)}, got {_short(a)}.")
      for k in akeys:
        _text(a[k], where, f"host.accelerator.{k}")
      acc = Accelerator(**{k: a[k] for k in akeys})
    return cls(cpu_vendor=d["cpu_vendor"], cpu_model=d["cpu_model"],
               cpu_flags=None if flags is None else tuple(flags), jaxlib=d["jaxlib"],
               xla_flags=d["xla_flags"], accelerator=acc)


def _text(value: Any, where: str, field: str) -> None:
  if value is not None and not (isinstance(value, str) and len(value) <= _MAX_TEXT
                                and value.isprintable()):
    raise GoldenDataError(f"{where}: {field}: expected null or printable text of at most "
                          f"{_MAX_TEXT} characters, got {_short(value)}.")


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


def _version(dist: str) -> str | None:
  try:
    return md.version(dist)
  except md.PackageNotFoundError:
    return None


def _accelerator(platform: str) -> Accelerator:
  """The device kind, driver, CUDA and plugin versions of ``platform``'s first device."""
  kind = None
  try:
    import jax
    kind = jax.devices(platform)[0].device_kind
  except Exception:  # noqa: BLE001 - no such device here: unknown
    pass
  driver = None
  try:
    hit = _DRIVER_RE.search(NVIDIA_DRIVER_FILE.read_text(errors="replace")[:4096])
    driver = hit.group(1) if hit else None
  except OSError:
    pass
  plugin = cuda = None
  for dist in md.distributions():
    name = (dist.metadata.get("Name") or "").replace("_", "-").lower()
    hit = re.fullmatch(r"jax-(cuda\d+|rocm\d*)-plugin", name)
    if hit:
      plugin, cuda = f"{name} {dist.version}", hit.group(1)
      break
  return Accelerator(device_kind=kind, driver=driver, cuda=cuda, plugin=plugin)


def current_host(platform: str = "cpu", jaxlib: str | None = None) -> Host:
  """The host this process runs on, for ``platform``; ``jaxlib`` names another jaxlib than
  the installed one (an entry recorded in another venv on this machine)."""
  try:
    vendor, model, flags = read_cpuinfo(CPUINFO.read_text(errors="replace")[:1 << 20])
  except OSError:
    vendor = model = flags = None
  return Host(cpu_vendor=vendor, cpu_model=model, cpu_flags=flags,
              jaxlib=jaxlib if jaxlib is not None else _version("jaxlib"),
              xla_flags=os.environ.get("XLA_FLAGS", "").strip(),
              accelerator=None if platform == "cpu" else _accelerator(platform))
