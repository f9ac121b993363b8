"""Exporting for an older consumer: ``export(f, for_jax="0.9.2")`` and ``jaxport upgrade --for-jax``.

An artifact written by today's jax may not load on an older one: its module is
written for a StableHLO (VHLO) version newer than the older jaxlib reads, it
may call custom-call targets that release does not register, and its envelope
or calling convention may be newer than that release reads. For a named
consumer release this module chooses, from the release table
(``jaxport.releases``, measured per release; read through its
``_table`` and ``_dates`` modules, which import only the leaves):

- the StableHLO target version: the newest that release's jaxlib writes (and
  so reads), never newer than the installed jaxlib writes;
- the calling convention version: that release's default, or the newest that
  both it and jaxport support;
- the envelope layout: the installed jax's where that release reads it, else
  the other layout jaxport writes (header 3 or 12) if it reads that.

It refuses, naming the release and the feature, what that release cannot run:
a custom-call target it does not register (measured on cpu, its own stable
table elsewhere), an operation newer than its StableHLO (serializing for its
version fails), or an envelope it reads in no layout jaxport writes. The
installed jax is the default consumer (``for_jax=None``): nothing is
retargeted, and only an envelope it refuses is written anew
(``jaxport.upgrades.rewrite_envelope``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from jax.errors import JaxRuntimeError

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport import _versions
from jaxport._vocabulary import ANY_PLATFORM
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.custom_calls import _registry, _walk
from jaxport.errors import ExportError, ReleaseTableError
from jaxport.export import _checks, _mlir
from jaxport.releases._version_text import parse_version
from jaxport.releases import _table as release_table
from jaxport._platforms import is_host

logger = logging.getLogger(__name__)

# The envelope layouts jaxport writes, by the header number that tells them apart
# (the names of jaxport/harness/reader_policy.json and of the release table).
UNIQUE_TABLES = "unique-tables"    # header 3: unique_* tables and the legacy vectors
VERSION_12 = "version-12"          # header 12, jax_version always
LAYOUT_HEADERS = {UNIQUE_TABLES: jax_envelope.LEGACY_HEADER_VERSION,
                  VERSION_12: jax_envelope.REAL_HEADER_VERSION}

# jaxport's envelopes keep the device count in the 32-bit nr_devices and shardings as
# named shardings over an abstract mesh. A release whose reader takes the count only from the
# 16-bit nr_devices_short field (the release table's device_count_fields) reads 0 devices in
# them, so jaxport exports only for releases that read the 32-bit field: the oldest of those
# is oldest_consumer(). Named shardings read from 0.9.0 on (serialization version 6); before,
# an input or output sharding reads as unspecified, which is exact for one device.
OLDEST_SHARDED_CONSUMER = "0.9.0"

# The JSON views of a consumer and a retargeting are written for a reader, never read back.
_record = json_record(Strict.raising(ExportError))

_LEGALIZE = re.compile(r"failed to legalize operation '([A-Za-z0-9_.]+)'")
_MLIR_LOCATION = re.compile(r"Detailed error from MLIR: (.*?): error:")
_VHLO_SUFFIX = re.compile(r"_v[0-9]+$")
_FUNC_OPS = frozenset({"func", "return", "call"})


# Who a ConsumerTarget is for: a jax release, or a TensorFlow release's XlaCallModule.
JAX, TF = "jax", "tf"


@_record
@dataclasses.dataclass(frozen=True)
class ConsumerTarget:
  """What an artifact for one consumer release is written with, chosen from its facts.

  ``facts`` is the release table's record (None for the installed jax, which
  answers for itself: then what it registers is not checked and calling
  conventions are left as they are).
  """
  release: str
  stablehlo_version: str          # the VHLO version a module written anew is serialized for
  # The newest StableHLO that release's jaxlib reads (the JSON view leaves it out, and the
  # fields below it but the header version and layout).
  stablehlo_reads: str = key(skip=True)
  calling_convention_version: int
  calling_conventions: tuple[int, int] | None = key(skip=True)  # (min, max) it calls; None: not checked
  header_version: int             # 3 or 12
  layout: str                     # UNIQUE_TABLES or VERSION_12
  layouts_read: dict[str, str] = key(skip=True, compare=False, default_factory=dict)
  facts: Any = key(skip=True, repr=False, compare=False, default=None)
  # JAX, or TF: a TensorFlow release (``jaxport.export._for_tf``); not in the JSON view.
  consumer: str = key(skip=True, default=JAX)

  @property
  def name(self) -> str:
    """``jax 0.9.2`` or ``TensorFlow 2.21.0``."""
    return f"{'TensorFlow' if self.consumer == TF else 'jax'} {self.release}"

  @property
  def option(self) -> str:
    """The export option that names this consumer: ``for_jax`` or ``for_tf``."""
    return "for_tf" if self.consumer == TF else "for_jax"

  @property
  def reader(self) -> str:
    """What reads the module there: a jax release's jaxlib, or TensorFlow itself."""
    return "TensorFlow" if self.consumer == TF else "its jaxlib"

  def reads_layout(self, layout: str) -> bool:
    """Whether this release reads envelopes of ``layout`` (one of jaxport.upgrades.LAYOUTS)."""
    return self.layouts_read.get(layout) == "reads"


@_record
@dataclasses.dataclass(frozen=True)
class Retargeting:
  """What :func:`retarget` changed for the consumer: (from, to) pairs, None where nothing."""
  release: str
  stablehlo: tuple[str, str] | None
  calling_convention: tuple[int, int] | None

  @property
  def changed(self) -> bool:
    return self.stablehlo is not None or self.calling_convention is not None


def installed_layout() -> str:
  """The envelope layout the installed jax writes."""
  return VERSION_12 if jax_envelope.WRITES_VERSION_12 else UNIQUE_TABLES


def _facts(for_jax: str) -> Any:
  if not isinstance(for_jax, str) or not for_jax:
    raise ExportError(f"for_jax must name a jax release such as '0.9.2', got {for_jax!r}.")
  try:
    parse_version(for_jax)
  except ValueError as e:
    raise ReleaseTableError(f"for_jax={for_jax!r}: {e}") from None
  try:
    facts = release_table.release_facts(for_jax)
  except ReleaseTableError as e:
    raise ReleaseTableError(f"for_jax={for_jax!r}: {e}") from None
  if not facts.installable:
    raise ExportError(
        f"Cannot export for jax {for_jax}: the release table lists it as not installable "
        f"({facts.not_installable_reason}), so nothing about what it reads was measured. "
        "Name an installable release.")
  if facts.stablehlo_writes is None:
    raise ExportError(
        f"Cannot export for jax {for_jax}: the release table has no measured StableHLO version "
        "for it. Name a measured release (jaxport.releases.releases() lists them).")
  return facts


def _stablehlo_target(facts: Any) -> str:
  low, high = _mlir.stablehlo_version_range()
  theirs = facts.stablehlo_writes
  target = theirs
  if high is not None and _mlir.version_key(high) < _mlir.version_key(theirs):
    target = high  # a newer consumer reads what this jaxlib writes at most
  if low is not None and _mlir.version_key(target) < _mlir.version_key(low):
    raise ExportError(
        f"Cannot export for jax {facts.version}: its jaxlib reads StableHLO up to {theirs}, "
        f"older than the oldest version this jaxlib (jax {installed_jax_version()}) writes, {low}. "
        "Export with an older jax, or for a newer consumer.")
  return target


def _calling_convention(facts: Any) -> int:
  ours = range(_versions.MIN_CALLING_CONVENTION_VERSION, _versions.MAX_CALLING_CONVENTION_VERSION + 1)
  theirs = facts.calling_conventions_call
  if theirs is None:
    raise ExportError(
        f"Cannot export for jax {facts.version}: the release table has no measured calling "
        "conventions for it. Name a measured release (jaxport.releases.releases() lists them).")
  both = [v for v in ours if theirs[0] <= v <= theirs[1]]
  default = facts.calling_convention_default
  if default in both:
    return default
  if not both:
    raise ExportError(
        f"Cannot export for jax {facts.version}: it calls modules of calling conventions "
        f"{theirs[0]} to {theirs[1]}, and jaxport exports {ours.start} to {ours.stop - 1}; "
        "no version is in both. Export for a newer consumer.")
  return both[-1]


def oldest_consumer() -> str:
  """The oldest release jaxport exports for: from the release table, the oldest measured
  release from which on every measured reader takes the 32-bit device count."""
  oldest = None
  for facts in reversed(release_table.releases()):
    if not facts.measured:
      continue
    if not facts.reads_32_bit_device_count:
      break
    oldest = facts.version
  if oldest is None:
    raise ReleaseTableError("The release table measures no release that reads the 32-bit device "
                            "count jaxport writes; reinstall jaxport to restore its table.")
  return oldest


def _layout(facts: Any) -> str:
  if not facts.reads_32_bit_device_count:
    oldest = oldest_consumer()
    raise ExportError(
        f"Cannot export for jax {facts.version}: it reads the device count only from the "
        "legacy 16-bit field, and jaxport writes it in the 32-bit one, which jax reads from "
        f"{oldest} on (the release table's measurement). Export with that older jax itself, or "
        f"for jax {oldest} or newer.")
  mine = installed_layout()
  candidates = [mine] + [name for name in LAYOUT_HEADERS if name != mine]
  headers_read = set(facts.serialization_versions_read)
  for name in candidates:
    if (facts.envelope_layouts.get(name) == "reads"
        and (not headers_read or LAYOUT_HEADERS[name] in headers_read)):
      return name
  seen = ", ".join(f"{name}: {facts.envelope_layouts.get(name, 'not measured')}"
                   for name in candidates)
  raise ExportError(
      f"Cannot export for jax {facts.version}: it reads neither envelope layout jaxport writes "
      f"({seen}). Export for another release.")


def consumer_target(for_jax: str) -> ConsumerTarget:
  """The StableHLO version, calling convention and envelope layout an artifact for jax
  ``for_jax`` is written with; ``ReleaseTableError`` for a release the table lacks,
  ``ExportError`` for one jaxport cannot write for."""
  facts = _facts(for_jax)
  layout = _layout(facts)
  return ConsumerTarget(
      release=facts.version, stablehlo_version=_stablehlo_target(facts),
      stablehlo_reads=facts.stablehlo_writes,
      calling_convention_version=_calling_convention(facts),
      calling_conventions=facts.calling_conventions_call,
      header_version=LAYOUT_HEADERS[layout], layout=layout,
      layouts_read=dict(facts.envelope_layouts), facts=facts)


def installed_target(layouts_read: dict[str, str]) -> ConsumerTarget:
  """The installed jax as the consumer: its own layout and StableHLO, what it reads as
  ``layouts_read`` says; nothing else is checked (the default of ``jaxport upgrade``)."""
  high = _mlir.stablehlo_version_range()[1] or _mlir.default_target_version()
  layout = installed_layout()
  return ConsumerTarget(
      release=installed_jax_version(), stablehlo_version=_mlir.default_target_version(),
      stablehlo_reads=high, calling_convention_version=_versions.DEFAULT_CALLING_CONVENTION_VERSION,
      calling_conventions=None, header_version=LAYOUT_HEADERS[layout], layout=layout,
      layouts_read=dict(layouts_read))


def _platform_free() -> frozenset[str]:
  """Targets that no kernel registry holds (the compiler or jax handles them): judged by
  the release's stable table, never by its measured cpu registrations."""
  return _registry.stable_targets(ANY_PLATFORM)


def _runs_target(facts: Any, platform: str, target: str) -> bool | None:
  """Whether ``facts``' release runs ``target`` on ``platform`` (None: the table cannot say)."""
  if facts is None:
    return None
  if is_host(platform) and facts.cpu_targets is not None and target not in _platform_free():
    return target in facts.cpu_targets
  tables = [facts.stable_targets.get(p) for p in (platform, ANY_PLATFORM)]
  known = [t for t in tables if t is not None]
  if not known:
    return None
  return any(target in t for t in known)


def _how_known(facts: Any, platform: str, target: str) -> str:
  if is_host(platform) and facts.cpu_targets is not None and target not in _platform_free():
    return "does not register it (measured)"
  return "does not list it in its stable table"


def check_custom_calls(sites: Iterable[_walk.CustomCallSite], target: ConsumerTarget,
                       platforms: Sequence[str], disabled_checks: Sequence[Any],
                       fun_name: str) -> None:
  """Refuse a module calling a custom-call target the consumer release cannot run on any
  of ``platforms``; targets the caller allowed through ``disabled_checks`` are theirs to
  vouch for."""
  allowed = _checks.disabled_targets(disabled_checks)
  if _checks.ALL_TARGETS in allowed:
    return
  missing: dict[str, tuple[_walk.CustomCallSite, list[str]]] = {}
  for site in sites:
    if site.target in allowed or site.target in missing:
      continue
    answers = {p: _runs_target(target.facts, p, site.target) for p in platforms}
    if any(a is not False for a in answers.values()):
      if all(a is None for a in answers.values()):
        logger.info("jax %s: the release table cannot say whether %s runs on %s",
                    target.release, site.target, ", ".join(platforms))
      continue
    missing[site.target] = (site, [_how_known(target.facts, p, site.target) for p in platforms])
  if not missing:
    return
  lines = "\n".join(f"  - '{t}' (first at {site.location}): jax {target.release} "
                    + "; ".join(f"on {p}: {why}" for p, why in zip(platforms, whys))
                    for t, (site, whys) in missing.items())
  allow = ", ".join(f"DisabledSafetyCheck.custom_call({t!r})" for t in missing)
  raise ExportError(
      f"Cannot export '{fun_name}' for jax {target.release}: it calls custom-call target(s) "
      f"that release cannot run:\n{lines}\nExport for a newer consumer (for_jax=...), or, if "
      f"that release gets the target some other way, pass disabled_checks=[{allow}].")


def check_record(exported: Any, target: ConsumerTarget) -> None:
  """Refuse a record the consumer would read wrongly: shardings over several devices for a
  release that reads named shardings as unspecified."""
  if target.facts is None or exported.nr_devices <= 1:
    return
  if parse_version(target.release) < parse_version(OLDEST_SHARDED_CONSUMER):
    raise ExportError(
        f"Cannot export '{exported.fun_name}' for jax {target.release}: it runs on "
        f"{exported.nr_devices} devices, and that release reads shardings only as HloSharding "
        f"protos, which jaxport does not write (jax reads named shardings from "
        f"{OLDEST_SHARDED_CONSUMER} on). Export for one device, or for jax "
        f"{OLDEST_SHARDED_CONSUMER} or newer.")


def _op_name(vhlo: str) -> str:
  base = _VHLO_SUFFIX.sub("", vhlo.removeprefix("vhlo."))
  return f"func.{base}" if base in _FUNC_OPS else f"stablehlo.{base}"


def _unsupported(e: Exception, target: ConsumerTarget, fun_name: str) -> ExportError:
  text = str(e)
  first = text.strip().splitlines()[0].rstrip(";.") if text.strip() else type(e).__name__
  op = _LEGALIZE.search(text)
  where = _MLIR_LOCATION.search(text)
  what = "uses an operation or attribute"
  if op is not None:
    what = f"uses {_op_name(op.group(1))} ({op.group(1)})"
    if where is not None:
      what += f" at {where.group(1)}"
    what += " in a form"
  return ExportError(
      f"Cannot export '{fun_name}' for {target.name}: {target.reader} reads StableHLO up to "
      f"VHLO version {target.stablehlo_reads}, and the module {what} that version does not "
      f"have. jaxlib said: {first}. Export for a newer consumer ({target.option}=...), or "
      "write the function without that operation or option.")


def serialize_module(module: Any, target: ConsumerTarget, fun_name: str) -> bytes:
  """``module`` as a portable artifact the consumer's jaxlib reads, or an ``ExportError``
  naming the release, its VHLO version and the operation it lacks."""
  try:
    return _mlir.module_to_portable_artifact(module, target.stablehlo_version)
  except JaxRuntimeError as e:
    raise _unsupported(e, target, fun_name) from None


def needs_new_module(serialized: bytes, target: ConsumerTarget) -> bool:
  """Whether a serialized module is written for a StableHLO newer than the consumer reads."""
  written = _mlir.artifact_version(serialized)
  if written is None:
    return False  # plain bytecode, as jax.export never writes: left as it is
  return _mlir.version_key(written) > _mlir.version_key(target.stablehlo_reads)


def retarget_module(serialized: bytes, target: ConsumerTarget, fun_name: str) -> bytes:
  """A serialized module for the consumer: the same bytes where it reads them already."""
  if not needs_new_module(serialized, target):
    return serialized
  with _mlir.scratch_context():
    module = _mlir.module_from_bytes(serialized, fun_name)
    return serialize_module(module, target, fun_name)


def attach(exported: Any, target: ConsumerTarget | None) -> Any:
  """``exported`` marked as written for ``target`` (its ``serialize`` writes that layout)."""
  object.__setattr__(exported, "_consumer", target)
  return exported


def retarget(exported: Any, target: ConsumerTarget) -> tuple[Any, Retargeting]:
  """A record (with its nested VJPs) that the consumer of ``target`` loads and runs, and
  what changed.

  The module is serialized again for the consumer's StableHLO only where it is written
  for a newer one, the calling convention moved into the consumer's range where the
  module text allows it (9 and 10 share it), and the custom calls checked against what
  the consumer registers. The record is marked with ``target``, so that ``serialize``
  writes the consumer's envelope layout.
  """
  fun_name = exported.fun_name
  check_record(exported, target)
  version = new_version = exported.calling_convention_version
  if target.calling_conventions is not None:
    lo, hi = target.calling_conventions
    if not lo <= version <= hi:
      if version in (9, 10) and target.calling_convention_version in (9, 10):
        new_version = target.calling_convention_version
      else:
        raise ExportError(
            f"Cannot retarget '{fun_name}' for jax {target.release}: the module has calling "
            f"convention {version} and that release calls {lo} to {hi}. Export the function "
            "again for that release (jaxport.export(..., for_jax=...)).")
  original = bytes(exported.mlir_module_serialized)
  serialized = retarget_module(original, target, fun_name)
  if target.facts is not None:
    with _mlir.scratch_context():
      sites = _walk.custom_call_sites(_mlir.module_from_bytes(serialized, fun_name))
    check_custom_calls(sites, target, exported.platforms, exported.disabled_safety_checks,
                       fun_name)
  get_vjp = exported._get_vjp
  new_vjp = None
  if get_vjp is not None:
    def new_vjp(_: Any, primal: Any = exported) -> Any:
      return retarget(get_vjp(primal), target)[0]
  done = Retargeting(
      release=target.release,
      stablehlo=(None if serialized == original
                 else (_mlir.artifact_version(original) or "unknown", target.stablehlo_version)),
      calling_convention=None if new_version == version else (version, new_version))
  record = dataclasses.replace(exported, mlir_module_serialized=serialized,
                               calling_convention_version=new_version, _get_vjp=new_vjp)
  return attach(record, target), done
