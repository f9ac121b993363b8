"""An artifact's own features, read from its blob (and its golden manifest, where it has one).

What :func:`jaxport.releases.runs_on` needs: the envelope layout, header
version and device-count fields it fills, the calling convention, the StableHLO
artifact version, VHLO operations and extra dialects (Shardy's ``sdy``) of its
bytecode, its platforms and its custom calls with their operand counts (of the
VJP's modules too, which a replay calls).
The module is parsed with the installed jaxlib; where that jaxlib cannot parse it
(a newer StableHLO), the custom calls come from the golden manifest, which
recorded them when the entry was written.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import DeserializationError, JaxportError
from jaxport.export import _mlir
from jaxport.export._checks import disabled_targets
from jaxport.golden import _signatures
from jaxport.releases._measured import MeasuredRun
from jaxport.releases._runs_on import ArtifactFeatures, CustomCall, lazy_lapack_caveat, runs_on
from jaxport.releases._table import releases as table_releases
from jaxport.serde import _read, _verify
from jaxport.upgrades import read_any_envelope
from jaxport.upgrades._envelope import layout_of_fields

logger = logging.getLogger(__name__)

_NO_NR_DEVICES = "short-device-count"
# VHLO operation names as the bytecode's string section holds them (without "vhlo.").
_VHLO_OP = re.compile(rb"[a-z][a-z0-9_]*_v[0-9]+")
_MAX_VJP_DEPTH = 8


@functools.lru_cache(maxsize=1)
def _known_ops() -> frozenset[str]:
  """Every VHLO operation some release of the table defines (the table is fixed data)."""
  out: set[str] = set()
  for f in table_releases():
    out |= f.vhlo_ops
  return frozenset(out)


def _vhlo_ops(module: bytes, known: frozenset[str]) -> frozenset[str]:
  """The VHLO operations a portable artifact uses: op names of its bytecode that some release's
  jaxlib defines (other strings of the same shape, such as function names, are not ops)."""
  return frozenset(m.decode("ascii") for m in set(_VHLO_OP.findall(bytes(module)))) & known


# Dialects besides VHLO whose attributes a portable artifact may carry as themselves (jax 0.7
# and newer keep Shardy's sdy attributes so); the bytecode lists each dialect name NUL-delimited.
_EXTRA_DIALECTS = ("sdy",)


def module_dialects(module: bytes) -> frozenset[str]:
  """The dialects of :data:`_EXTRA_DIALECTS` the bytecode's dialect list names."""
  data = bytes(module)
  return frozenset(d for d in _EXTRA_DIALECTS if b"\x00" + d.encode() + b"\x00" in data)


_SHAPE_OPERANDS = re.compile(r"dense<\[?([0-9, ]*)\]?>")


def _buffer_operands(sig: Any) -> int:
  """The operands a handler binds: a shape-polymorphic call's shape operands
  (``indices_of_shape_operands``) are dropped by shape refinement before it runs."""
  shape = (getattr(sig, "attributes", None) or {}).get("indices_of_shape_operands")
  m = _SHAPE_OPERANDS.search(shape or "")
  dropped = len([x for x in m.group(1).split(",") if x.strip()]) if m else 0
  return len(sig.operand_types) - dropped


def _calls(module: bytes) -> list[CustomCall]:
  return [CustomCall(s.target, _buffer_operands(s)) for s in _signatures.signatures(module)]


def _manifest_calls(manifest: Any) -> list[CustomCall]:
  return [CustomCall(s.target, _buffer_operands(s))
          for s in getattr(manifest, "custom_call_targets", ()) or ()]


def _modules(exp: Any) -> list[bytes]:
  """The module of ``exp`` and those of its nested VJPs."""
  out, depth = [], 0
  while exp is not None and depth < _MAX_VJP_DEPTH:
    out.append(bytes(exp.mlir_module_serialized))
    try:
      exp = exp.vjp() if exp.has_vjp() else None
    except JaxportError:
      exp = None
    depth += 1
  return out


def features_of_blob(blob: bytes | bytearray | memoryview, manifest: Any = None) -> ArtifactFeatures:
  """The features of a serialized Exported (``manifest``: its golden entry's, if any)."""
  blob = bytes(blob)
  # The envelope decoded once: its layout, header, producer and device-count fields.
  fields = _verify.decode(blob)
  layout = layout_of_fields(fields)
  exp, _ = read_any_envelope(blob, layout=layout)
  return features_of_read(fields, layout, exp, manifest)


def features_of_read(fields: list[Any], layout: str, exp: Any, manifest: Any = None,
                     signatures: Callable[[bytes], Sequence[Any]] = _signatures.signatures,
                     main: Sequence[Any] | None = None) -> ArtifactFeatures:
  """The features of an Exported whose envelope was decoded already (``fields``, of
  ``layout``) and read (``exp``): nothing is decoded again. ``signatures`` parses a module
  (the caller's module parser), ``main``: the signatures of ``exp``'s own module where the
  caller parsed it already (it is not parsed again)."""
  known = _known_ops()
  modules = _modules(exp)
  ops: set[str] = set()
  calls: list[CustomCall] = []
  unreadable = False
  dialects: set[str] = set()
  for i, module in enumerate(modules):
    ops |= _vhlo_ops(module, known)
    dialects |= module_dialects(module)
    try:
      sigs = main if i == 0 and main is not None else signatures(module)
      calls += [CustomCall(s.target, _buffer_operands(s)) for s in sigs]
    except DeserializationError as e:
      logger.debug("custom calls from the manifest: %s", e)
      unreadable = True
  if unreadable:
    if manifest is None:
      raise DeserializationError(
          "The module's custom calls cannot be read with the installed jaxlib (its StableHLO "
          f"{_mlir.artifact_version(modules[0])} is newer than this jaxlib parses), so the "
          "releases it runs on cannot be computed: inspect it with a newer jax, or inspect its "
          "golden entry, whose manifest records the custom calls.") from None
    calls = _manifest_calls(manifest) + [c for m in modules[1:] for c in _safe_calls(m)]
  return ArtifactFeatures(
      has_nr_devices_short=bool(fields[_read._X.nr_devices_short]), nr_devices=exp.nr_devices,
      dialects=frozenset(dialects),
      platforms=tuple(exp.platforms), calling_convention=exp.calling_convention_version,
      envelope_layout=layout, serialization_version=fields[_read._X.serialization_version] or 0,
      has_nr_devices=layout != _NO_NR_DEVICES,
      stablehlo_version=_mlir.artifact_version(modules[0]), vhlo_ops=frozenset(ops),
      custom_calls=tuple(dict.fromkeys(calls)),
      allowed_targets=disabled_targets(exp.disabled_safety_checks),
      producer=(fields[_read._X.jax_version]
                or getattr(getattr(manifest, "producer", None), "jax", None)))


def _safe_calls(module: bytes) -> list[CustomCall]:
  try:
    return _calls(module)
  except DeserializationError:
    return []


# How each platform's "runs on" is known: what ``jaxport replay --with-jax`` measured of the
# entry (the rest of the range still from the table), or the release table's prediction alone.
MEASURED = "measured"
PREDICTED = "predicted"


def _one_shape(record: RunsOnRecord, d: Mapping[str, Any], strict: Strict, where: str) -> None:
  """A runs_on record holds its releases with their limits, summary and basis, or its error."""
  if record.runs_on is None:
    strict.obj(d, where, ("runs_on", "runs_on_error"), ())
    strict.of(d["runs_on_error"], str, f"{where}.runs_on_error")
    return
  strict.obj(d, where, ("runs_on", "runs_on_limits", "runs_on_summary", "runs_on_basis"), ())
  for part in ("runs_on_limits", "runs_on_summary", "runs_on_basis"):
    if set(d[part]) != set(record.runs_on):
      raise strict.fail(f"{where}.{part}", f"expected the platforms of runs_on "
                                           f"{sorted(record.runs_on)}, got {sorted(d[part])}")
  for platform, how in d["runs_on_basis"].items():
    if how not in (MEASURED, PREDICTED):
      raise strict.fail(f"{where}.runs_on_basis.{platform}",
                        f"expected {MEASURED!r} or {PREDICTED!r}, got {how!r}")


@json_record(Strict.raising(ValueError), check=_one_shape)
@dataclasses.dataclass(frozen=True)
class RunsOnRecord:
  """What ``inspect --json`` and ``audit --json`` carry of the releases an artifact runs on:
  ``runs_on`` (platform -> releases), ``limits`` (the limiting factor at each end and of every
  refusing release), ``summary`` (one line per platform) and ``basis`` (per platform,
  :data:`MEASURED` where a ``--with-jax`` replay ran the entry, else :data:`PREDICTED`); or
  ``error``, why the blob's features could not be read. It crosses from the module parser
  child as JSON, read back strictly (:meth:`from_json`)."""
  runs_on: Mapping[str, tuple[str, ...]] | None
  limits: Mapping[str, Any] | None = key(name="runs_on_limits", default=None, omit_default=True)
  summary: Mapping[str, str] | None = key(name="runs_on_summary", default=None,
                                          omit_default=True)
  error: str | None = key(name="runs_on_error", default=None, omit_default=True)
  basis: Mapping[str, str] | None = key(name="runs_on_basis", default=None, omit_default=True)

  def __post_init__(self) -> None:
    # Releases come with their limits, summary and basis (a platform's basis PREDICTED unless
    # measured); an error alone, without them.
    if self.runs_on is not None:
      object.__setattr__(self, "limits", dict(self.limits or {}))
      object.__setattr__(self, "summary", dict(self.summary or {}))
      object.__setattr__(self, "basis", {p: (self.basis or {}).get(p, PREDICTED)
                                         for p in self.runs_on})


def runs_on_record(blob: bytes | bytearray | memoryview, manifest: Any = None,
                   project_targets: Iterable[str] = (),
                   measured: Sequence[MeasuredRun] = ()) -> RunsOnRecord:
  """The releases the blob (and its entry's manifest) runs on, for ``inspect`` and ``audit``;
  ``project_targets``: those the project registers itself; ``measured``: replays of the entry
  under other releases, which take precedence on the entry's platform."""
  try:
    features = features_of_blob(blob, manifest)
  except JaxportError as e:
    return RunsOnRecord(None, error=f"{type(e).__name__}: {e}")
  return runs_on_of(features, manifest, project_targets, measured)


def runs_on_of(features: ArtifactFeatures, manifest: Any = None,
               project_targets: Iterable[str] = (),
               measured: Sequence[MeasuredRun] = ()) -> RunsOnRecord:
  """:func:`runs_on_record` of features read already."""
  try:
    got = runs_on(features, project_targets=project_targets)
    if manifest is not None:
      got = got.with_measured(manifest.platform, measured)
  except JaxportError as e:
    return RunsOnRecord(None, error=f"{type(e).__name__}: {e}")
  limits = {p: got.limits_of(p).to_json() for p in got.releases}
  summary = {}
  for platform, releases in got.releases.items():
    caveat = lazy_lapack_caveat(features, platform, releases)
    summary[platform] = got.summary(platform) + (f"; {caveat}" if caveat else "")
  basis = {p: MEASURED if got.measured.get(p) else PREDICTED for p in got.releases}
  return RunsOnRecord(dict(got.releases), limits, summary, basis=basis)


def runs_on_lines(record: dict[str, Any]) -> list[str]:
  """The text lines of :func:`runs_on_record` for ``inspect`` and ``audit``: each platform's
  range, marked measured (a ``--with-jax`` replay ran the entry) or predicted (the release
  table's prediction alone)."""
  if record.get("runs_on") is None:
    return [f"  runs on: unknown ({record.get('runs_on_error')})"]
  basis = record.get("runs_on_basis") or {}
  return [f"  runs on {platform} ({_BASIS_TEXT[basis.get(platform, PREDICTED)]}): {line}"
          for platform, line in record["runs_on_summary"].items()]


_BASIS_TEXT = {MEASURED: "measured by --with-jax replays; other releases predicted",
               PREDICTED: "predicted from the release table, not run"}
