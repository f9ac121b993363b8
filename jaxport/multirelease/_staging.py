"""Import a staging folder written by an older jax release into the golden store.

The recorder (``jaxport_in_release/recorder.py``) runs inside a release's environment and writes plain files
(see its docstring). This module runs in the jaxport venv: it validates those
files (JSON and pickle-free npz only), computes the custom-call signatures
with jaxport's module walk, and writes each case with
``GoldenStore.write_entry`` so the entry gets the store's sha256 manifest.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
from pathlib import Path
from typing import Any

from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.golden._host import current_host
from jaxport.golden._manifest import (
    Comparison, CustomCallSignature, ImportSource, Manifest, Producer)
from jaxport.golden._entry import Entry
from jaxport.golden._signatures import signatures as module_signatures
from jaxport.golden._store import GoldenStore
from jaxport.multirelease._bisect import load_arrays

logger = logging.getLogger(__name__)

STAGING_FORMAT = 1
IMPORT_SOURCE = "jax.export"
_CASE_KEYS = frozenset({
    "staging_format", "case_id", "family", "platform", "fun_name", "platforms",
    "calling_convention_version", "serialization_version", "polymorphic_shapes",
    "constraints", "lowering_only", "vjp_order", "comparison"})
# Written by recorders from 2026-12: whether the case ran with jax_enable_x64.
_OPTIONAL_CASE_KEYS = frozenset({"x64"})
_CASE_FILES = ("case.json", "exported.bin", "inputs.npz", "module.mlir", "module.mlirbc")


@dataclasses.dataclass(frozen=True)
class StagedCase:
  """One case folder of a staging directory."""
  path: Path
  meta: dict[str, Any]

  @property
  def case_id(self) -> str:
    return self.meta["case_id"]


@dataclasses.dataclass(frozen=True)
class Staging:
  """A staging directory: who recorded it, when, its cases and what it skipped."""
  path: Path
  producer: Producer
  record_date: datetime.date
  platform: str
  cases: tuple[StagedCase, ...]
  skipped: dict[str, str]


@dataclasses.dataclass(frozen=True)
class ImportResult:
  written: tuple[Entry, ...]
  existing: tuple[EntryId, ...]  # entry ids already in the store (append-only: left as is)
  skipped: dict[str, str]       # case id -> why the producer could not record it


def _read_json(path: Path) -> Any:
  try:
    return json.loads(path.read_text(encoding="utf-8"))
  except FileNotFoundError:
    raise GoldenDataError(f"staging file {path} is missing; re-run the recorder.") from None
  except (UnicodeDecodeError, json.JSONDecodeError) as e:
    raise GoldenDataError(f"staging file {path} is not valid JSON ({e}); re-run the recorder.") from None


def read_staging(path: str | Path) -> Staging:
  """Parse and validate a staging directory written by the recorder."""
  root = Path(path)
  info = _read_json(root / "producer.json")
  if not isinstance(info, dict) or info.get("staging_format") != STAGING_FORMAT:
    raise GoldenDataError(
        f"staging file {root / 'producer.json'}: staging_format expected {STAGING_FORMAT}, got "
        f"{info.get('staging_format') if isinstance(info, dict) else info!r}; record again with "
        "the recorder of this jaxport (jaxport record --with-jax).")
  p = info.get("producer")
  fields = [f.name for f in dataclasses.fields(Producer) if f.name != "jaxport"]
  if not isinstance(p, dict) or set(p) != set(fields):
    raise GoldenDataError(
        f"staging file {root / 'producer.json'}: producer expected keys {sorted(fields)}, got "
        f"{sorted(p) if isinstance(p, dict) else p!r}.")
  producer = Producer(jaxport=None, **p)
  try:
    record_date = datetime.date.fromisoformat(info.get("record_date", ""))
  except (TypeError, ValueError):
    raise GoldenDataError(
        f"staging file {root / 'producer.json'}: record_date expected 'YYYY-MM-DD', got "
        f"{info.get('record_date')!r}.") from None
  skipped = _read_json(root / "skipped.json")
  if not isinstance(skipped, dict) or not all(isinstance(v, str) for v in skipped.values()):
    raise GoldenDataError(f"staging file {root / 'skipped.json'}: expected an object of "
                          "case id -> reason.")
  cases = []
  for d in sorted(x for x in root.iterdir() if x.is_dir()):
    meta = _read_json(d / "case.json")
    if not isinstance(meta, dict) or not _CASE_KEYS <= set(meta) <= _CASE_KEYS | _OPTIONAL_CASE_KEYS:
      got = sorted(meta) if isinstance(meta, dict) else meta
      raise GoldenDataError(
          f"staging file {d / 'case.json'}: expected keys {sorted(_CASE_KEYS)} (and optionally "
          f"{sorted(_OPTIONAL_CASE_KEYS)}), got {got}.")
    if "x64" in meta and not isinstance(meta["x64"], bool):
      raise GoldenDataError(f"staging file {d / 'case.json'}: x64 expected true or false, got "
                            f"{meta['x64']!r}.")
    if meta["case_id"] != d.name:
      raise GoldenDataError(f"staging file {d / 'case.json'}: case_id {meta['case_id']!r} "
                            f"but the folder is {d.name!r}.")
    needed = _CASE_FILES if meta["lowering_only"] else _CASE_FILES + ("expected.npz",)
    missing = [n for n in needed if not (d / n).is_file()]
    if missing:
      raise GoldenDataError(f"staging case {d}: missing file(s) {missing}; re-run the recorder.")
    cases.append(StagedCase(d, meta))
  return Staging(path=root, producer=producer, record_date=record_date,
                 platform=info.get("platform", "cpu"), cases=tuple(cases), skipped=skipped)


def signatures(module_bytes: bytes) -> tuple[CustomCallSignature, ...]:
  """The custom-call signatures of a serialized module, computed as for every other entry."""
  return module_signatures(module_bytes)


def manifest_for(staging: Staging, case: StagedCase,
                 custom_calls: tuple[CustomCallSignature, ...]) -> Manifest:
  """The store manifest of one staged case (files and arrays are filled in by the store)."""
  m = case.meta
  details = {"fun_name": m["fun_name"], "platforms": ",".join(m["platforms"]),
             "vjp_order": int(m["vjp_order"]), "recorder": "jaxport record --with-jax"}
  return Manifest(
      case_id=m["case_id"], family=m["family"], platform=m["platform"],
      record_date=staging.record_date, producer=staging.producer,
      calling_convention_version=m["calling_convention_version"],
      serialization_version=m["serialization_version"],
      custom_call_targets=custom_calls,
      polymorphic_shapes=m["polymorphic_shapes"], constraints=m["constraints"],
      lowering_only=m["lowering_only"], comparison=Comparison(**m["comparison"]),
      imported_from=ImportSource(IMPORT_SOURCE, details),
      jax_config=None if "x64" not in m else {"jax_enable_x64": m["x64"]},
      # The recorder ran on this machine, in the release's venv, with this environment.
      host=current_host(m["platform"], jaxlib=staging.producer.jaxlib))


def import_staging(path: str | Path, store: GoldenStore) -> ImportResult:
  """Write every staged case into ``store``; entries already there are left untouched."""
  staging = read_staging(path)
  written, existing = [], []
  for case in staging.cases:
    blob = (case.path / "exported.bin").read_bytes()
    manifest = manifest_for(staging, case, signatures((case.path / "module.mlirbc").read_bytes()))
    if (store.root / manifest.relative_dir).exists():
      existing.append(manifest.entry_id)
      continue
    expected = None if manifest.lowering_only else load_arrays(case.path / "expected.npz")
    entry = store.write_entry(manifest, blob, load_arrays(case.path / "inputs.npz"), expected,
                              (case.path / "module.mlir").read_text(encoding="utf-8"))
    logger.info("imported %s", entry.entry_id)
    written.append(entry)
  return ImportResult(tuple(written), tuple(existing), dict(staging.skipped))
