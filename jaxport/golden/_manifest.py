"""The manifest of a golden entry: what was recorded, by whom, and how to compare.

A manifest is plain JSON (never code). :meth:`Manifest.from_json` checks every
field (type, range, allowed names) and a ``digest`` over all other fields, so an
entry whose manifest was edited by hand after recording is refused instead of
being replayed with silently changed tolerances. Golden entries are immutable:
to change one, record a new entry.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from jaxport._jaxcompat._version import (distribution_version, installed_jax_version,
                                         installed_jaxlib_version)
from jaxport import _json
from jaxport._records import Strict, quote
from jaxport._vocabulary import PLATFORMS
from jaxport.errors import GoldenDataError
from jaxport.golden import _no_cotangent
from jaxport.golden._entry_id import EntryId
from jaxport.golden._host import Host

# Bump when the layout of an entry or of this manifest changes incompatibly,
# and keep reading every older version.
#   1 (2026-11) first format.
#   2 (2026-12) optional ``host`` (the recording machine, ``_host.Host``) and
#     ``min_consumer`` (the oldest jax release the entry must run on); later optional
#     fields join this version, each absent from the entries that do not have it.
#   3 (2026-12) optional ``tolerances``: each recorded output's path, dtype and tolerances
#     (the VJP's outputs after the function's). An entry with them compares each output with
#     its own; one without them (every entry of formats 1 and 2) compares all outputs with
#     ``comparison``'s one rtol and atol.
#   4 (2026-12) optional ``no_cotangent``, present where the entry carries a VJP: the inputs
#     (by path) with no cotangent (integers, bools, PRNG keys), whose VJP outputs are not stored.
FORMAT_VERSION = 4
# The first format version that may hold each optional field.
_OPTIONAL_SINCE = {"jax_config": 1, "revision": 1, "host": 2, "min_consumer": 2,
                   "tolerances": 3, "no_cotangent": 4}

MANIFEST_FILE = "manifest.json"
BLOB_FILE = "exported.bin"
INPUTS_FILE = "inputs.npz"
EXPECTED_FILE = "expected.npz"
MODULE_FILE = "module.mlir"
# Optional: the output shardings of a multi-device entry (JSON), checked on replay.
SHARDINGS_FILE = "shardings.json"
OPTIONAL_FILES = (SHARDINGS_FILE,)
DATA_FILES = (BLOB_FILE, INPUTS_FILE, EXPECTED_FILE, MODULE_FILE, *OPTIONAL_FILES)
# The files whose bytes carry source locations (compared without them: ``_locations.py``).
LOCATED_FILES = (BLOB_FILE, MODULE_FILE)

# The first entry of a case on a day has no revision; a later one of the same day is 2, 3, ...
FIRST_REVISION = 2
MAX_REVISION = 999

# Path components: case ids, families and versions become directory names.
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def is_safe_name(name: str) -> bool:
  """Whether ``name`` can be used as one directory name inside compat_data."""
  return isinstance(name, str) and bool(_NAME_RE.fullmatch(name)) and ".." not in name


@dataclasses.dataclass(frozen=True)
class Producer:
  """Versions of the software that recorded an entry; None where unknown."""

  jax: str | None
  jaxlib: str | None
  jaxport: str | None
  numpy: str | None
  scipy: str | None
  python: str | None

  @classmethod
  def current(cls) -> "Producer":
    """The versions installed in this process."""
    version = distribution_version
    return cls(jax=installed_jax_version(), jaxlib=installed_jaxlib_version(),
               jaxport=version("jaxport"), numpy=version("numpy"), scipy=version("scipy"),
               python=".".join(map(str, sys.version_info[:3])))


@dataclasses.dataclass(frozen=True)
class CustomCallSignature:
  """One custom-call target as used in the module, with its MLIR types and attributes."""

  target: str
  operand_types: tuple[str, ...] = ()
  result_types: tuple[str, ...] = ()
  attributes: Mapping[str, str] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    object.__setattr__(self, "operand_types", tuple(self.operand_types))
    object.__setattr__(self, "result_types", tuple(self.result_types))
    object.__setattr__(self, "attributes", MappingProxyType(dict(sorted(self.attributes.items()))))

  def __hash__(self):
    return hash((self.target, self.operand_types, self.result_types,
                 tuple(self.attributes.items())))

  def to_dict(self) -> dict[str, Any]:
    return {"target": self.target, "operand_types": list(self.operand_types),
            "result_types": list(self.result_types), "attributes": dict(self.attributes)}


@dataclasses.dataclass(frozen=True)
class Comparison:
  """How replayed outputs are compared with the expected ones: checker name and tolerances."""

  mode: str
  rtol: float = 0.0
  atol: float = 0.0


@dataclasses.dataclass(frozen=True)
class OutputTolerance:
  """How one recorded output is compared: its path (``output[0]``; ``vjp1:args[0]`` for the
  output of the VJP of order 1 for the input ``args[0]``), its dtype and its tolerances."""

  path: str
  dtype: str
  rtol: float
  atol: float

  def to_dict(self) -> dict[str, Any]:
    return {"path": self.path, "dtype": self.dtype, "rtol": self.rtol, "atol": self.atol}


@dataclasses.dataclass(frozen=True)
class ArraySpec:
  """Shape and dtype name of one array stored in an npz file."""

  dtype: str
  shape: tuple[int, ...]

  def __post_init__(self):
    object.__setattr__(self, "shape", tuple(self.shape))


@dataclasses.dataclass(frozen=True)
class ImportSource:
  """Where an entry imported from another format came from (None for entries jaxport recorded).

  ``details`` keeps what the source states (its own version fields, device
  count...), as JSON scalars.
  """

  source: str
  details: Mapping[str, str | int | float | bool | None] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    object.__setattr__(self, "details", MappingProxyType(dict(sorted(self.details.items()))))

  def __hash__(self):
    return hash((self.source, tuple(self.details.items())))


# What ``imported_from.source`` of a shipped artifact (``jaxport import-artifacts``) starts with.
ARTIFACT_SOURCE = "artifact:"


def is_imported_artifact(m: Manifest) -> bool:
  """Whether an entry is a shipped artifact, imported with no case by design."""
  return m.imported_from is not None and m.imported_from.source.startswith(ARTIFACT_SOURCE)


@dataclasses.dataclass(frozen=True)
class Manifest:
  """Everything known about one golden entry except its payload.

  ``files`` (name -> sha256) and ``arrays`` are filled in by the store when it
  writes the entry; callers building a manifest to record leave them empty.
  """

  case_id: str
  family: str
  platform: str
  record_date: datetime.date
  producer: Producer
  calling_convention_version: int
  serialization_version: int
  custom_call_targets: tuple[CustomCallSignature, ...]
  polymorphic_shapes: tuple[str | None, ...] | None
  constraints: tuple[str, ...] | None
  lowering_only: bool
  comparison: Comparison
  files: Mapping[str, str] = dataclasses.field(default_factory=dict)
  arrays: Mapping[str, tuple[ArraySpec, ...]] = dataclasses.field(default_factory=dict)
  imported_from: ImportSource | None = None
  format_version: int = FORMAT_VERSION
  # The jax configuration the entry was recorded under and is replayed under
  # (``{"jax_enable_x64": bool}``); None for entries recorded before it was kept.
  jax_config: Mapping[str, bool] | None = None
  # The entry's number among those of its case recorded the same day by the same jax
  # (``--compat-update`` after a change): None for the first, 2, 3, ... after it.
  revision: int | None = None
  # The machine that recorded the entry (None: unknown, as for every entry recorded before
  # format 2 and every imported one); replay compares it with its own host.
  host: Host | None = None
  # The oldest jax release the entry must run on (a case's ``min_consumer``), or None.
  min_consumer: str | None = None
  # Each recorded output's comparison (format 3), in the order of the expected outputs; None:
  # one comparison for all outputs (``comparison``), as every entry of formats 1 and 2.
  tolerances: tuple[OutputTolerance, ...] | None = None
  # Where the entry carries a VJP (format 4): the inputs without a cotangent, by path, whose
  # VJP outputs are not stored (``_no_cotangent``); None: no VJP, or an entry of formats 1-3.
  no_cotangent: tuple[str, ...] | None = None

  def __post_init__(self):
    if isinstance(self.record_date, str):
      try:
        object.__setattr__(self, "record_date", datetime.date.fromisoformat(self.record_date))
      except ValueError:
        raise _bad("a Manifest under construction", "record_date", "an ISO date 'YYYY-MM-DD'",
                   self.record_date) from None
    object.__setattr__(self, "custom_call_targets", tuple(self.custom_call_targets))
    if self.polymorphic_shapes is not None:
      object.__setattr__(self, "polymorphic_shapes", tuple(self.polymorphic_shapes))
    if self.constraints is not None:
      object.__setattr__(self, "constraints", tuple(self.constraints))
    if self.tolerances is not None:
      object.__setattr__(self, "tolerances", tuple(self.tolerances))
    if self.no_cotangent is not None:
      object.__setattr__(self, "no_cotangent", tuple(self.no_cotangent))
    if self.jax_config is not None:
      object.__setattr__(self, "jax_config", MappingProxyType(dict(sorted(self.jax_config.items()))))
    object.__setattr__(self, "files", MappingProxyType(dict(sorted(self.files.items()))))
    object.__setattr__(self, "arrays", MappingProxyType(
        {k: tuple(v) for k, v in sorted(self.arrays.items())}))
    _validate(_to_dict(self), "a Manifest under construction")

  def __hash__(self):
    return hash(self.to_json())

  @property
  def dir_name(self) -> str:
    """The entry's directory name: ``<record_date>[.<revision>]_jax-<producer jax version or
    'unknown'>``."""
    revision = "" if self.revision is None else f".{self.revision}"
    return f"{self.record_date.isoformat()}{revision}_jax-{self.producer.jax or 'unknown'}"

  @property
  def relative_dir(self) -> str:
    """``<platform>/<family>/<case_id>/<dir_name>``, the stable id of the entry, as text."""
    return str(self.entry_id)

  @property
  def entry_id(self) -> EntryId:
    """The id of the entry the manifest describes."""
    return EntryId(self.platform, self.family, self.case_id, self.dir_name)

  # Written by hand, not by jaxport._record_codec: a manifest is text (sorted keys, lists of
  # scalars on one line) carrying a digest over its other fields, each field checked against
  # its format version, so that an entry edited after recording is refused.
  def to_json(self) -> str:
    """Stable, human-diffable JSON (sorted keys) with the ``digest`` field added."""
    d = _to_dict(self)
    d["digest"] = _digest(d)
    return _pretty(d, "") + "\n"

  @classmethod
  def from_json(cls, text: str | bytes, where: str) -> "Manifest":
    """Parse and validate a manifest; ``where`` names the file in error messages."""
    d = _parse_json(text, where)
    if not isinstance(d, dict):
      raise _bad(where, "the top level", "a JSON object", type(d).__name__)
    recorded = d.pop("digest", None)
    if recorded is None:
      raise GoldenDataError(
          f"{where}: field 'digest' is missing. Every manifest written by jaxport carries "
          "a digest of its other fields; this file was not written by jaxport or was edited. "
          "Re-record the entry (pytest --compat-record).")
    _validate(d, where)
    computed = _digest(d)
    if recorded != computed:
      raise GoldenDataError(
          f"{where}: digest mismatch: the manifest records {recorded!r} but its fields hash "
          f"to {computed!r}, so a field was edited after recording. Golden entries are "
          "immutable: restore the file from version control or record a new entry "
          "(pytest --compat-record).")
    return _from_dict(d)


def _to_dict(m: Manifest) -> dict[str, Any]:
  optional: dict[str, Any] = {}
  if m.jax_config is not None:
    optional["jax_config"] = dict(m.jax_config)
  if m.revision is not None:
    optional["revision"] = m.revision
  if m.host is not None:
    optional["host"] = m.host.to_json() if isinstance(m.host, Host) else m.host
  if m.min_consumer is not None:
    optional["min_consumer"] = m.min_consumer
  if m.tolerances is not None:
    optional["tolerances"] = [t.to_dict() if isinstance(t, OutputTolerance) else t
                              for t in m.tolerances]
  if m.no_cotangent is not None:
    optional["no_cotangent"] = list(m.no_cotangent)
  return {
      **optional,
      "format_version": m.format_version,
      "case_id": m.case_id,
      "family": m.family,
      "platform": m.platform,
      "record_date": m.record_date.isoformat() if isinstance(m.record_date, datetime.date)
                     else m.record_date,
      "producer": dataclasses.asdict(m.producer) if isinstance(m.producer, Producer) else m.producer,
      "calling_convention_version": m.calling_convention_version,
      "serialization_version": m.serialization_version,
      "custom_call_targets": [s.to_dict() if isinstance(s, CustomCallSignature) else s
                              for s in m.custom_call_targets],
      "polymorphic_shapes": None if m.polymorphic_shapes is None else list(m.polymorphic_shapes),
      "constraints": None if m.constraints is None else list(m.constraints),
      "lowering_only": m.lowering_only,
      "comparison": dataclasses.asdict(m.comparison) if isinstance(m.comparison, Comparison)
                    else m.comparison,
      "files": dict(m.files),
      "arrays": {k: [{"dtype": a.dtype, "shape": list(a.shape)} if isinstance(a, ArraySpec) else a
                     for a in v] for k, v in m.arrays.items()},
      "imported_from": None if m.imported_from is None else (
          {"source": m.imported_from.source, "details": dict(m.imported_from.details)}
          if isinstance(m.imported_from, ImportSource) else m.imported_from),
  }


def _from_dict(d: dict[str, Any]) -> Manifest:
  imp = d["imported_from"]
  return Manifest(
      format_version=d["format_version"],
      case_id=d["case_id"],
      family=d["family"],
      platform=d["platform"],
      record_date=datetime.date.fromisoformat(d["record_date"]),
      producer=Producer(**d["producer"]),
      calling_convention_version=d["calling_convention_version"],
      serialization_version=d["serialization_version"],
      custom_call_targets=tuple(CustomCallSignature(
          target=s["target"], operand_types=tuple(s["operand_types"]),
          result_types=tuple(s["result_types"]), attributes=s["attributes"])
          for s in d["custom_call_targets"]),
      polymorphic_shapes=d["polymorphic_shapes"],
      constraints=d["constraints"],
      lowering_only=d["lowering_only"],
      comparison=Comparison(**d["comparison"]),
      files=d["files"],
      arrays={k: tuple(ArraySpec(a["dtype"], tuple(a["shape"])) for a in v)
              for k, v in d["arrays"].items()},
      imported_from=None if imp is None else ImportSource(imp["source"], imp["details"]),
      jax_config=d.get("jax_config"),
      revision=d.get("revision"),
      host=None if d.get("host") is None else Host.from_json(d["host"], "manifest: host"),
      min_consumer=d.get("min_consumer"),
      tolerances=None if d.get("tolerances") is None else tuple(
          OutputTolerance(t["path"], t["dtype"], t["rtol"], t["atol"]) for t in d["tolerances"]),
      no_cotangent=None if d.get("no_cotangent") is None else tuple(d["no_cotangent"]),
  )


def _pretty(obj: Any, indent: str) -> str:
  """JSON with sorted keys, one field per line, and lists of scalars kept on one line."""
  inner = indent + "  "
  if isinstance(obj, dict):
    if not obj:
      return "{}"
    items = [f"{inner}{json.dumps(k)}: {_pretty(obj[k], inner)}" for k in sorted(obj)]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"
  if isinstance(obj, (list, tuple)) and any(isinstance(x, (dict, list, tuple)) for x in obj):
    return "[\n" + ",\n".join(inner + _pretty(x, inner) for x in obj) + "\n" + indent + "]"
  return json.dumps(obj, allow_nan=False)


def _digest(d: Mapping[str, Any]) -> str:
  canonical = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                         allow_nan=False)
  return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _parse_json(text: str | bytes, where: str) -> Any:
  return _json.load(text, where, GoldenDataError,
                    "Restore the file from version control or record the entry again.")


def _strict(where: str) -> Strict:
  """The field reader of the manifest ``where``."""
  return Strict(lambda field, what: GoldenDataError(f"{where}: {field}: {what}."))


def _bad(where: str, field: str, expected: str, got: Any) -> GoldenDataError:
  return _strict(where).fail(field, f"expected {expected}, got {quote(got)}")


def _check_keys(obj: Any, where: str, field: str, keys: Sequence[str]) -> None:
  _strict(where).obj(obj, field, keys, ())


def _is_int(x: Any) -> bool:
  return isinstance(x, int) and not isinstance(x, bool)


def _check_str_list(x: Any, where: str, field: str) -> None:
  strict = _strict(where)
  for i, s in enumerate(strict.of(x, (list, tuple), field)):
    strict.of(s, str, f"{field}[{i}]")


def _check_shape_strs(x: Any, where: str, field: str) -> None:
  """A list of polymorphic shapes: each a string, or null for an input of fixed shape."""
  strict = _strict(where)
  for i, s in enumerate(strict.of(x, (list, tuple), field)):
    strict.of(s, str, f"{field}[{i}]", nullable=True)


_TOP_KEYS = ("format_version", "case_id", "family", "platform", "record_date", "producer",
             "calling_convention_version", "serialization_version", "custom_call_targets",
             "polymorphic_shapes", "constraints", "lowering_only", "comparison", "files",
             "arrays", "imported_from")
_OPTIONAL_TOP_KEYS = tuple(_OPTIONAL_SINCE)
_VERSION_RE = re.compile(r"[0-9]{1,4}(\.[0-9]{1,4}){1,3}")
# The jax options a manifest's jax_config may set.
JAX_CONFIG_KEYS = ("jax_enable_x64", "jax_use_shardy_partitioner")
_PRODUCER_KEYS = tuple(f.name for f in dataclasses.fields(Producer))


def _is_tolerance(v: Any) -> bool:
  return not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v < float("inf")


def _check_tolerances(d: dict[str, Any], where: str) -> None:
  """``tolerances``: one object of path, dtype, rtol and atol per expected output, with
  distinct paths."""
  tols = d["tolerances"]
  if not isinstance(tols, (list, tuple)):
    raise _bad(where, "tolerances", "a list of {path, dtype, rtol, atol}", tols)
  paths = []
  for i, t in enumerate(tols):
    f = f"tolerances[{i}]"
    _check_keys(t, where, f, ("path", "dtype", "rtol", "atol"))
    for k in ("path", "dtype"):
      if not isinstance(t[k], str) or not t[k]:
        raise _bad(where, f"{f}.{k}", "a non-empty string", t[k])
    for k in ("rtol", "atol"):
      if not _is_tolerance(t[k]):
        raise _bad(where, f"{f}.{k}", "a finite number >= 0", t[k])
    paths.append(t["path"])
  if len(set(paths)) != len(paths):
    raise _bad(where, "tolerances", "one entry per output path", paths)
  expected = d.get("arrays", {}).get("expected") if isinstance(d.get("arrays"), dict) else None
  if isinstance(expected, (list, tuple)) and expected and len(expected) != len(tols):
    raise _bad(where, "tolerances", f"one entry per expected output ({len(expected)})",
               f"{len(tols)} entries")


def _validate(d: dict[str, Any], where: str) -> None:
  """Check every field of a manifest dict; raise GoldenDataError on the first problem."""
  _check_keys({k: v for k, v in d.items() if k not in _OPTIONAL_TOP_KEYS}, where, "manifest",
              _TOP_KEYS)
  if "jax_config" in d:
    cfg = d["jax_config"]
    if not isinstance(cfg, dict) or set(cfg) - set(JAX_CONFIG_KEYS) or not all(
        isinstance(v, bool) for v in cfg.values()):
      raise _bad(where, "jax_config", f"an object of true/false values for {list(JAX_CONFIG_KEYS)}",
                 cfg)
  if "revision" in d and not (_is_int(d["revision"])
                              and FIRST_REVISION <= d["revision"] <= MAX_REVISION):
    raise _bad(where, "revision", f"an integer from {FIRST_REVISION} to {MAX_REVISION} (absent "
               "for the first entry of a case on a day)", d["revision"])
  fv = d["format_version"]
  if not _is_int(fv) or fv < 1:
    raise _bad(where, "format_version", "a positive integer", fv)
  if fv > FORMAT_VERSION:
    raise GoldenDataError(
        f"{where}: format_version {fv} is newer than this jaxport reads ({FORMAT_VERSION}). "
        "Upgrade jaxport to read this entry.")
  for key, since in _OPTIONAL_SINCE.items():
    if key in d and fv < since:
      raise GoldenDataError(
          f"{where}: field {key!r} needs format_version {since} or newer, but the manifest "
          f"says {fv}; an entry of format {fv} never held it, so the file was edited. Restore "
          "it from version control or record a new entry.")
  if "host" in d and not isinstance(d["host"], Host):
    Host.from_json(d["host"], f"{where}: host")
  if "min_consumer" in d and not (isinstance(d["min_consumer"], str)
                                  and _VERSION_RE.fullmatch(d["min_consumer"])):
    raise _bad(where, "min_consumer", "a jax release such as '0.9.2'", d["min_consumer"])
  if "tolerances" in d:
    _check_tolerances(d, where)
  if "no_cotangent" in d:
    _no_cotangent.check(d, where, _bad)
  for field in ("case_id", "family"):
    if not is_safe_name(d[field]):
      raise _bad(where, field, "a name of letters, digits, '_', '.', '+', '-' (a directory name)",
                 d[field])
  if d["platform"] not in PLATFORMS:
    raise _bad(where, "platform", f"one of {list(PLATFORMS)}", d["platform"])
  rd = d["record_date"]
  try:
    ok = isinstance(rd, str) and datetime.date.fromisoformat(rd).isoformat() == rd
  except ValueError:
    ok = False
  if not ok:
    raise _bad(where, "record_date", "an ISO date 'YYYY-MM-DD'", rd)
  _check_keys(d["producer"], where, "producer", _PRODUCER_KEYS)
  for k, v in d["producer"].items():
    if v is not None and not (isinstance(v, str) and is_safe_name(v)):
      raise _bad(where, f"producer.{k}", "a version string or null", v)
  for field in ("calling_convention_version", "serialization_version"):
    if not _is_int(d[field]) or d[field] < 0:
      raise _bad(where, field, "a non-negative integer", d[field])
  targets = d["custom_call_targets"]
  if not isinstance(targets, (list, tuple)):
    raise _bad(where, "custom_call_targets", "a list", targets)
  for i, s in enumerate(targets):
    f = f"custom_call_targets[{i}]"
    _check_keys(s, where, f, ("target", "operand_types", "result_types", "attributes"))
    if not isinstance(s["target"], str) or not s["target"]:
      raise _bad(where, f + ".target", "a non-empty string", s["target"])
    _check_str_list(s["operand_types"], where, f + ".operand_types")
    _check_str_list(s["result_types"], where, f + ".result_types")
    attrs = s["attributes"]
    if not isinstance(attrs, dict) or not all(isinstance(v, str) for v in attrs.values()):
      raise _bad(where, f + ".attributes", "an object of strings", attrs)
  if d["polymorphic_shapes"] is not None:
    _check_shape_strs(d["polymorphic_shapes"], where, "polymorphic_shapes")
  if d["constraints"] is not None:
    _check_str_list(d["constraints"], where, "constraints")
  if not isinstance(d["lowering_only"], bool):
    raise _bad(where, "lowering_only", "true or false", d["lowering_only"])
  cmp = d["comparison"]
  _check_keys(cmp, where, "comparison", ("mode", "rtol", "atol"))
  if not isinstance(cmp["mode"], str) or not cmp["mode"]:
    raise _bad(where, "comparison.mode", "a checker name", cmp["mode"])
  for k in ("rtol", "atol"):
    v = cmp[k]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < float("inf")):
      raise _bad(where, f"comparison.{k}", "a finite number >= 0", v)
  files = d["files"]
  if not isinstance(files, dict):
    raise _bad(where, "files", "an object of file name -> sha256", files)
  for name, sha in files.items():
    if name not in DATA_FILES:
      raise _bad(where, "files", f"names among {list(DATA_FILES)}", name)
    if not isinstance(sha, str) or not _SHA256_RE.fullmatch(sha):
      raise _bad(where, f"files[{name!r}]", "64 lowercase hex digits (sha256)", sha)
  if files:
    required = {BLOB_FILE, INPUTS_FILE, MODULE_FILE} | (set() if d["lowering_only"] else {EXPECTED_FILE})
    if set(files) - set(OPTIONAL_FILES) != required:
      raise GoldenDataError(
          f"{where}: files: expected exactly {sorted(required)} "
          f"(lowering_only={d['lowering_only']}), plus optionally {list(OPTIONAL_FILES)}, "
          f"got {sorted(files)}.")
  arrays = d["arrays"]
  if not isinstance(arrays, dict):
    raise _bad(where, "arrays", "an object", arrays)
  if set(arrays) - {"inputs", "expected"}:
    raise _bad(where, "arrays", "keys among ['expected', 'inputs']", sorted(arrays))
  if files:
    want = {"inputs"} | (set() if d["lowering_only"] else {"expected"})
    if set(arrays) != want:
      raise _bad(where, "arrays", f"keys {sorted(want)}", sorted(arrays))
  for k, specs in arrays.items():
    if not isinstance(specs, (list, tuple)):
      raise _bad(where, f"arrays.{k}", "a list", specs)
    for i, a in enumerate(specs):
      f = f"arrays.{k}[{i}]"
      _check_keys(a, where, f, ("dtype", "shape"))
      if not isinstance(a["dtype"], str) or not a["dtype"]:
        raise _bad(where, f + ".dtype", "a dtype name", a["dtype"])
      shape = a["shape"]
      if not isinstance(shape, (list, tuple)) or not all(_is_int(x) and x >= 0 for x in shape):
        raise _bad(where, f + ".shape", "a list of non-negative integers", shape)
  imp = d["imported_from"]
  if imp is not None:
    _check_keys(imp, where, "imported_from", ("source", "details"))
    if not isinstance(imp["source"], str) or not imp["source"]:
      raise _bad(where, "imported_from.source", "a non-empty string", imp["source"])
    det = imp["details"]
    if not isinstance(det, dict) or not all(
        v is None or isinstance(v, (str, int, float, bool)) for v in det.values()):
      raise _bad(where, "imported_from.details", "an object of JSON scalars", det)
