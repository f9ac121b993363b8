"""Which jax releases can load and run an artifact, from its own features and the release table.

Pure: an :class:`ArtifactFeatures` (what the blob itself says) and the table's
:class:`ReleaseFacts` in, a :class:`RunsOn` out. Nothing here reads a measured
producer x consumer matrix; the matrix is what the model is checked against.

A release runs the artifact on a platform when, in this order (the first that
fails is the limiting factor named):

1. it was installed and measured;
2. its reader reads the artifact's envelope layout (not refused, not expired) and
   finds its device count (a reader that takes it only from the older
   ``nr_devices_short`` field reads 0 devices in a blob without it);
3. it calls the artifact's calling-convention version (the bound it exports limits
   only where its reader was measured to refuse a newer version: none does yet);
4. the artifact's StableHLO is not newer than the release writes where its jaxlib
   reads no newer one (measured), its jaxlib knows the dialects besides VHLO the
   bytecode uses (Shardy's sdy, measured), defines every VHLO operation the
   bytecode uses, and the artifact is not older than the oldest StableHLO it reads;
5. the artifact was lowered for the platform;
6. every custom-call target of the platform is there: on cpu registered as
   measured (a typed FFI target also with the operand count its handler binds),
   or handled by XLA/jax itself; elsewhere listed in that release's own stable
   table (not measured). A target no measured release of jax knows, which the
   project declares (its stable targets) or which the artifact was allowed to call
   (a disabled custom-call check), is registered by the project wherever it runs,
   and limits nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.errors import ReleaseTableError
from jaxport._vocabulary import ALL_TARGETS
from jaxport.releases._version_text import parse_version
from jaxport.releases._measured import MeasuredRun
from jaxport._vocabulary import PLATFORMS
from jaxport.releases._table import ReleaseFacts, releases as table_releases
from jaxport._platforms import is_host, target_platform

_NO_NR_DEVICES = "short-device-count"


@dataclasses.dataclass(frozen=True)
class CustomCall:
  """One custom call of the module: its target and how many operands it passes."""
  target: str
  operands: int


@dataclasses.dataclass(frozen=True)
class ArtifactFeatures:
  """What an artifact itself says about what it needs from a consumer."""
  platforms: tuple[str, ...]
  calling_convention: int | None
  envelope_layout: str
  serialization_version: int | None
  has_nr_devices: bool
  stablehlo_version: str | None            # the artifact version its bytecode declares
  vhlo_ops: frozenset[str]                 # VHLO operations of the bytecode, e.g. "custom_call_v2"
  custom_calls: tuple[CustomCall, ...]
  producer: str | None = None              # the jax release that wrote it, where recorded
  has_nr_devices_short: bool | None = None  # whether the blob fills the older nr_devices_short
  nr_devices: int | None = None            # the device count it was exported for
  dialects: frozenset[str] = frozenset()   # dialects besides VHLO its bytecode uses, e.g. "sdy"
  # Targets its disabled safety checks allow (ALL_TARGETS: every one): off jax's stable list.
  allowed_targets: frozenset[str] = frozenset()

  def targets(self, platform: str) -> tuple[str, ...]:
    """The custom-call targets a consumer on ``platform`` must have: those tied to it by name
    and those tied to no platform."""
    out = []
    for call in self.custom_calls:
      owner = target_platform(call.target)
      if (owner is None or owner == platform) and call.target not in out:
        out.append(call.target)
    return tuple(out)

  def to_dict(self) -> dict[str, Any]:
    """The features as JSON values."""
    return {"platforms": list(self.platforms), "calling_convention": self.calling_convention,
            "envelope_layout": self.envelope_layout,
            "serialization_version": self.serialization_version,
            "has_nr_devices": self.has_nr_devices, "stablehlo_version": self.stablehlo_version,
            "vhlo_ops": sorted(self.vhlo_ops),
            "custom_calls": sorted({(c.target, c.operands) for c in self.custom_calls}),
            "producer": self.producer, "has_nr_devices_short": self.has_nr_devices_short,
            "nr_devices": self.nr_devices, "dialects": sorted(self.dialects),
            "allowed_targets": sorted(self.allowed_targets)}

  @classmethod
  def from_dict(cls, data: dict[str, Any]) -> ArtifactFeatures:
    """The features :meth:`to_dict` wrote (a worker's answer); a missing or mistyped field is a
    ValueError naming it, never a default."""
    def field(name: str, kind: type | tuple[type, ...]) -> Any:
      if name not in data:
        raise ValueError(f"artifact features: field {name!r} is missing")
      value = data[name]
      if not isinstance(value, kind) or isinstance(value, bool) and bool not in (
          kind if isinstance(kind, tuple) else (kind,)):
        raise ValueError(f"artifact features: field {name!r} is {value!r}")
      return value
    none = type(None)
    calls = field("custom_calls", list)
    if not all(isinstance(c, list) and len(c) == 2 and isinstance(c[0], str)
               and isinstance(c[1], int) for c in calls):
      raise ValueError(f"artifact features: field 'custom_calls' is {calls!r}")
    return cls(platforms=tuple(field("platforms", list)),
               calling_convention=field("calling_convention", (int, none)),
               envelope_layout=field("envelope_layout", str),
               serialization_version=field("serialization_version", (int, none)),
               has_nr_devices=field("has_nr_devices", bool),
               stablehlo_version=field("stablehlo_version", (str, none)),
               vhlo_ops=frozenset(field("vhlo_ops", list)),
               custom_calls=tuple(CustomCall(t, n) for t, n in calls),
               producer=field("producer", (str, none)),
               has_nr_devices_short=field("has_nr_devices_short", (bool, none)),
               nr_devices=field("nr_devices", (int, none)),
               dialects=frozenset(field("dialects", list)),
               allowed_targets=frozenset(field("allowed_targets", list)))


@dataclasses.dataclass(frozen=True)
class Limit:
  """Why one release does not run the artifact on one platform."""
  release: str
  platform: str
  reason: str

  def __str__(self) -> str:
    return f"{self.release}: {self.reason}"


@json_record(Strict.raising(ReleaseTableError))
@dataclasses.dataclass(frozen=True)
class PlatformLimits:
  """What limits the range on one platform, as ``inspect --json`` and ``audit --json`` show it:
  the release below and above the range that does not run the artifact (None: none), and each
  refusing release's reason."""
  lower: str | None
  upper: str | None
  refused: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class RunsOn:
  """The releases, per platform, that can load and run an artifact, and what limits the range."""
  releases: dict[str, tuple[str, ...]]             # platform -> releases, oldest first
  limits: dict[str, tuple[Limit, ...]]             # platform -> every measured release that does not
  lower: dict[str, Limit | None]                   # platform -> the newest refusing release below
  upper: dict[str, Limit | None]                   # platform -> the oldest refusing release above
  not_measured: tuple[str, ...]                    # releases the table lists without measurements
  # platform -> the artifact's targets the project registers itself (judged by no release)
  project_targets: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
  # platform -> the replays of the entry under other releases, which override the prediction
  measured: dict[str, tuple[MeasuredRun, ...]] = dataclasses.field(default_factory=dict)

  def with_measured(self, platform: str, runs: Sequence[MeasuredRun]) -> RunsOn:
    """This range on ``platform`` with what replays measured taking precedence: a release
    measured to run is in it, one measured not to run is out, its limit the measurement."""
    if not runs:
      return self
    by_release = {r.release: r for r in runs}
    kept = [v for v in self.releases.get(platform, ()) if by_release.get(v, None) is None
            or by_release[v].runs]
    kept += [r.release for r in runs if r.runs and r.release not in kept]
    limits = tuple(x for x in self.limits.get(platform, ()) if x.release not in by_release)
    limits += tuple(Limit(r.release, platform, f"measured: {r.detail}") for r in runs if not r.runs)
    limits = tuple(sorted(limits, key=lambda x: parse_version(x.release)))
    releases = tuple(sorted(kept, key=parse_version))
    lower = upper = None
    if releases:
      lo, hi = parse_version(releases[0]), parse_version(releases[-1])
      below = [x for x in limits if parse_version(x.release) < lo]
      above = [x for x in limits if parse_version(x.release) > hi]
      lower, upper = (below[-1] if below else None), (above[0] if above else None)
    return dataclasses.replace(
        self, releases={**self.releases, platform: releases},
        limits={**self.limits, platform: limits}, lower={**self.lower, platform: lower},
        upper={**self.upper, platform: upper},
        measured={**self.measured, platform: tuple(runs)})

  def covers(self, platform: str, release: str) -> bool:
    return release in self.releases.get(platform, ())

  def why_not(self, platform: str, release: str) -> str | None:
    """The limiting factor for ``release`` on ``platform``, None when it runs."""
    if self.covers(platform, release):
      return None
    for limit in self.limits.get(platform, ()):
      if limit.release == release:
        return limit.reason
    if release in self.not_measured:
      return "not measured (the release table lists it as not installable)"
    return None

  def limits_of(self, platform: str) -> PlatformLimits:
    """What limits the range on ``platform``."""
    lower, upper = self.lower[platform], self.upper[platform]
    return PlatformLimits(None if lower is None else str(lower),
                          None if upper is None else str(upper),
                          {x.release: x.reason for x in self.limits[platform]})

  def summary(self, platform: str) -> str:
    """One line: the range and the limiting factor at each end."""
    got = self.releases.get(platform, ())
    if not got:
      first = self.limits.get(platform, ())
      return "no release" + (f" (e.g. {first[-1]})" if first else "")
    span = got[0] if len(got) == 1 else f"{got[0]} to {got[-1]}"
    gaps = [x for x in self.limits.get(platform, ())
            if parse_version(got[0]) < parse_version(x.release) < parse_version(got[-1])]
    parts = [f"{span} ({len(got)} releases)"]
    if gaps:
      parts.append(f"except {', '.join(g.release for g in gaps)}")
    for side, limit in (("below", self.lower.get(platform)), ("above", self.upper.get(platform))):
      if limit is not None:
        parts.append(f"{side}: {limit}")
    own = self.project_targets.get(platform, ())
    if own:
      parts.append(f"registered by the project: {', '.join(own)}")
    runs = self.measured.get(platform, ())
    if runs:
      parts.append("measured, taking precedence over the table: "
                   + ", ".join(f"{r.release} {r.verdict}" for r in runs))
    return "; ".join(parts)


def _version_key(version: str) -> tuple[int, ...]:
  return tuple(int(x) for x in version.split("."))


def _envelope_reason(layout: str, status: str) -> str:
  if layout == _NO_NR_DEVICES:
    what = "envelope without nr_devices"
  else:
    what = f"envelope layout {layout}"
  return f"{what} refused as expired" if status == "refuses_expired" else f"{what} refused"


def _has_target(facts: ReleaseFacts, platform: str, target: str) -> bool:
  if is_host(platform) and facts.cpu_targets is not None:
    if target in facts.cpu_targets or target in facts.cpu_xla_builtin_targets:
      return True
    # Probed without shape refinement (shape_assertion) or without operands: a target of the
    # release's own stable table tied to no platform is jax's or XLA's own.
    return target_platform(target) is None and all(
        target in facts.stable_targets.get(p, ()) for p in PLATFORMS)
  return target in facts.stable_targets.get(platform, ())


def devices_seen(facts: ReleaseFacts, features: ArtifactFeatures) -> int | None:
  """The device count ``facts``'s reader finds in the artifact: 0 where it takes the count only
  from ``nr_devices_short`` and the blob does not fill that field; else the artifact's own."""
  if facts.needs_nr_devices_short and features.has_nr_devices_short is False:
    return 0
  return features.nr_devices


def blocker(facts: ReleaseFacts, features: ArtifactFeatures, platform: str,
            project_targets: frozenset[str] = frozenset()) -> str | None:
  """The first reason ``facts``'s release cannot load and run the artifact on ``platform``;
  ``project_targets``, those the project registers itself, are no reason."""
  if not facts.installable:
    return f"not installable ({facts.not_installable_reason})"
  if not facts.measured:
    return "not measured"
  status = facts.envelope_layouts.get(features.envelope_layout)
  if status is None:
    return f"its reader was not measured on envelope layout {features.envelope_layout}"
  if status != "reads":
    return _envelope_reason(features.envelope_layout, status)
  if devices_seen(facts, features) == 0:
    return ("envelope without nr_devices_short read as 0 devices (its reader takes the device "
            "count only from that older field), refused at call")
  cc, call = features.calling_convention, facts.calling_conventions_call
  if cc is not None and call is not None:
    # Measured: no reader yet refuses a version above the maximum it exports, so that bound
    # limits only where the table says the reader enforces it (or did not measure it).
    above = cc > call[1] and facts.refuses_calling_convention_above_max is not False
    if cc < call[0] or above:
      return f"calling convention {cc} outside the {call[0]} to {call[1]} it calls"
  if (facts.reads_newer_stablehlo is False and features.stablehlo_version is not None
      and facts.stablehlo_writes is not None
      and _version_key(features.stablehlo_version) > _version_key(facts.stablehlo_writes)):
    return (f"StableHLO {features.stablehlo_version} newer than the {facts.stablehlo_writes} its "
            "jaxlib writes (it reads no newer StableHLO)")
  if "sdy" in features.dialects and facts.reads_sdy_dialect is False:
    return "the module's Shardy (sdy) attributes: its jaxlib does not know the sdy dialect"
  if facts.vhlo_ops:
    unknown = sorted(features.vhlo_ops - facts.vhlo_ops)
    if unknown:
      return (f"StableHLO operation vhlo.{unknown[0]} unknown to its jaxlib (StableHLO "
              f"{facts.stablehlo_writes}; the artifact declares {features.stablehlo_version})")
  if (features.stablehlo_version is not None and facts.stablehlo_reads_min is not None
      and _version_key(features.stablehlo_version) < _version_key(facts.stablehlo_reads_min)):
    return (f"StableHLO {features.stablehlo_version} older than the oldest it reads "
            f"({facts.stablehlo_reads_min})")
  if platform not in features.platforms:
    return f"not lowered for {platform}"
  for call_ in features.custom_calls:
    target = call_.target
    if target not in features.targets(platform) or target in project_targets:
      continue
    if not _has_target(facts, platform, target):
      if is_host(platform):
        return f"target {target} not registered"
      return f"target {target} not in its stable table for {platform} (stable table only, not measured)"
    want = facts.cpu_target_operands.get(target) if is_host(platform) else None
    if want is not None and want != call_.operands:
      return f"target {target} binds {want} operands, the artifact passes {call_.operands}"
  return None


def _jax_knows(target: str, table: Iterable[ReleaseFacts]) -> bool:
  """Whether some release of the table registers or lists ``target``: jax's own, not a project's."""
  return any(target in (f.cpu_targets or ()) or target in f.cpu_xla_builtin_targets
             or any(target in listed for listed in f.stable_targets.values()) for f in table)


def jax_knows(target: str) -> bool:
  """Whether some release of the release table registers or lists ``target`` (else it is a
  project's own, which the project registers itself)."""
  return _jax_knows(target, table_releases())


def _registered_by_project(features: ArtifactFeatures, declared: frozenset[str],
                           table: tuple[ReleaseFacts, ...]) -> frozenset[str]:
  """The artifact's targets that no release of jax knows and that the project declares or the
  artifact was allowed to call: the project registers them itself."""
  everything = ALL_TARGETS in features.allowed_targets
  return frozenset(
      c.target for c in features.custom_calls
      if (c.target in declared or c.target in features.allowed_targets or everything)
      and not _jax_knows(c.target, table))


def runs_on(features: ArtifactFeatures, facts: Iterable[ReleaseFacts] | None = None,
            platforms: Iterable[str] | None = None,
            project_targets: Iterable[str] = ()) -> RunsOn:
  """Per platform (the artifact's own by default), the releases that load and run it;
  ``project_targets``: the project's declared stable targets; those of them no release of jax
  knows, and the targets the artifact was allowed to call that none knows, are registered by the
  project, and the release table does not judge them."""
  table = tuple(table_releases() if facts is None else facts)
  own = _registered_by_project(features, frozenset(project_targets), table)
  wanted = tuple(platforms) if platforms is not None else tuple(
      p for p in features.platforms if p in PLATFORMS) or features.platforms
  measured = [f for f in table if f.measured]
  runs: dict[str, tuple[str, ...]] = {}
  limits: dict[str, tuple[Limit, ...]] = {}
  lower: dict[str, Limit | None] = {}
  upper: dict[str, Limit | None] = {}
  for platform in wanted:
    ok, refused = [], []
    for f in measured:
      why = blocker(f, features, platform, own)
      (ok.append(f.version) if why is None else refused.append(Limit(f.version, platform, why)))
    runs[platform], limits[platform] = tuple(ok), tuple(refused)
    if ok:
      lo, hi = parse_version(ok[0]), parse_version(ok[-1])
      below = [x for x in refused if parse_version(x.release) < lo]
      above = [x for x in refused if parse_version(x.release) > hi]
      lower[platform] = below[-1] if below else None
      upper[platform] = above[0] if above else None
    else:
      lower[platform] = upper[platform] = None
  return RunsOn(releases=runs, limits=limits, lower=lower, upper=upper,
                not_measured=tuple(f.version for f in table if not f.measured),
                project_targets={p: tuple(t for t in features.targets(p) if t in own)
                                 for p in wanted})


# The first jax release whose process registers jaxlib's LAPACK kernels without having lowered
# a linear-algebra op itself; before it, a process that only calls deserialized LAPACK modules
# must lower one first (docs/export.md).
EAGER_LAPACK_FROM = "0.10.0"
_LAPACK_PREFIX = "lapack_"


def lazy_lapack_caveat(features: ArtifactFeatures, platform: str,
                       releases: tuple[str, ...]) -> str | None:
  """The caveat a range of ``releases`` that names one before :data:`EAGER_LAPACK_FROM` needs
  when the artifact calls LAPACK on the CPU; None when it does not apply."""
  if (not is_host(platform) or not releases
      or parse_version(releases[0]) >= parse_version(EAGER_LAPACK_FROM)
      or not any(c.target.startswith(_LAPACK_PREFIX) for c in features.custom_calls)):
    return None
  return (f"before {EAGER_LAPACK_FROM} jax registers its LAPACK kernels on a process's first "
          "linear-algebra lowering, so a process that only calls this artifact must lower one "
          "linear-algebra op first")
