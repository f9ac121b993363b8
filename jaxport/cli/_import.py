"""``jaxport import-jax-testdata``: convert jax's golden Python files into golden entries.

Each dataset becomes one entry: the module bytes are wrapped in an Exported
the way jax's own replay does (every argument kept, no shardings or effects,
one platform), serialized with jaxport; inputs and expected outputs go to npz.
The producer's versions are unknown (jax's files state only a date and their
own format numbers), so ``producer`` fields are null, the directory is
``<serialized_date>_jax-unknown`` and ``imported_from`` keeps what the file states.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax import tree_util

import jaxport
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.golden import _signatures
from jaxport.golden._manifest import (BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MODULE_FILE, Comparison,
                                      ImportSource, Manifest, Producer)
from jaxport.golden._store import GoldenStore, encode_arrays, sha256_hex
from jaxport.serde import _read
from jaxport.cli import _jax_testdata
from jaxport.cli._progress import track

logger = logging.getLogger(__name__)

# Replays of jax's data compare the whole outputs: the inputs are often built
# inside the module (iota), so invariant checkers have nothing to check against.
DEFAULT_MODE = "allclose"
_TOLERANCES = {"float64": (1e-7, 1e-9), "complex128": (1e-7, 1e-9),
               "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5),
               "float16": (1e-2, 1e-3), "bfloat16": (1e-2, 1e-2)}


def source_files(paths: list[str]) -> list[Path]:
  """The ``.py`` files named by ``paths`` (files, or directories searched recursively)."""
  out = []
  for p in map(Path, paths):
    if p.is_dir():
      out.extend(sorted(f for f in p.rglob("*.py") if f.name != "__init__.py"))
    elif p.is_file():
      out.append(p)
    else:
      raise GoldenDataError(f"{p}: no such file or directory.")
  return out


def tolerance(arrays) -> tuple[float, float]:
  """The loosest (rtol, atol) over the dtypes of ``arrays``; exact for integers and bools."""
  tols = [_TOLERANCES.get(np.asarray(a).dtype.name, (0.0, 0.0)) for a in arrays]
  return max((t[0] for t in tols), default=0.0), max((t[1] for t in tols), default=0.0)


def _avals(arrays) -> tuple[Any, ...]:
  return tuple(jax.core.ShapedArray(np.shape(a), np.asarray(a).dtype) for a in arrays)


def build_exported(ds: _jax_testdata.Dataset, fun_name: str) -> Any:
  """An Exported around the dataset's module bytes, as jax's back-compat replay builds it."""
  f = ds.fields
  inputs, outputs = tuple(f["inputs"]), tuple(f["expected_outputs"] or ())
  n_in, n_out = len(inputs), len(outputs)
  return jaxport.Exported(
      fun_name=fun_name,
      in_tree=tree_util.tree_structure((inputs, {})),
      in_avals=_avals(inputs),
      out_tree=tree_util.tree_structure(outputs),
      out_avals=_avals(outputs),
      _has_named_shardings=True,
      _in_named_shardings=(None,) * n_in,
      _out_named_shardings=(None,) * n_out,
      in_shardings_hlo=(None,) * n_in,
      out_shardings_hlo=(None,) * n_out,
      nr_devices=int(f.get("nr_devices", 1)),
      platforms=(f["platform"],),
      ordered_effects=(),
      unordered_effects=(),
      disabled_safety_checks=(),
      mlir_module_serialized=bytes(f["mlir_module_serialized"]),
      calling_convention_version=int(f["xla_call_module_version"]),
      module_kept_var_idx=tuple(range(n_in)),
      uses_global_constants=False,
      _get_vjp=None,
  )


_DYNAMIC_TENSOR_RE = re.compile(r"tensor<[^>]*\?")
# Families whose results are unique only up to a choice (eigenvector phases,
# Schur bases): jax's own tests compare them by hand.
_NON_UNIQUE_RE = re.compile(r"eig|syev|heev|geev|schur|gees")


def _is_shape_polymorphic(module_text: str) -> bool:
  if "jax.uses_shape_polymorphism = true" in module_text:
    return True
  return any("@main(" in line and _DYNAMIC_TENSOR_RE.search(line)
             for line in module_text.splitlines() if "func.func" in line)


def _skip_reason(ds: _jax_testdata.Dataset) -> str | None:
  f = ds.fields
  if _is_shape_polymorphic(f["mlir_module_text"]):
    return ("the module is shape-polymorphic and the file does not state its polymorphic "
            "shapes, so no Exported can be rebuilt around it")
  if f["expected_outputs"] is None:
    return "the dataset has no expected outputs"
  return None


def import_dataset(store: GoldenStore, ds: _jax_testdata.Dataset, *, mode: str | None,
                   rtol: float | None, atol: float | None) -> tuple[str, str]:
  """Write one dataset as an entry; returns (status, message) with status imported/exists/skipped."""
  _jax_testdata.check_fields(ds)
  reason = _skip_reason(ds)
  if reason:
    return "skipped", f"{ds.source}: {ds.label}: skipped: {reason}"
  f = ds.fields
  family, case_id = _jax_testdata.case_names(ds)
  sigs = _signatures.signatures(f["mlir_module_serialized"])
  stated = sorted(set(f["custom_call_targets"]))
  found = sorted({s.target for s in sigs})
  if stated != found:
    logger.warning("%s: %s: the file lists custom_call_targets %s but the module calls %s; "
                   "the manifest records what the module calls", ds.source, ds.label, stated, found)
  exp = build_exported(ds, fun_name=f"{family}.{case_id}")
  blob = bytes(exp.serialize())
  outputs = list(f["expected_outputs"])
  d_rtol, d_atol = tolerance(outputs)
  details = {
      "format": "jax back-compat test data",
      "testdata_version": f["testdata_version"],
      "serialized_date": f["serialized_date"].isoformat(),
      "xla_call_module_version": f["xla_call_module_version"],
      "nr_devices": f.get("nr_devices", 1),
      "stated_custom_call_targets": ",".join(f["custom_call_targets"]),
      "producer_versions": "unknown: the source states only its serialized_date",
  }
  if mode is None and _NON_UNIQUE_RE.search(family):
    note = ("results are unique only up to a choice (phases, bases); an allclose comparison "
            "may report a break where the results are equally valid; pass --mode with a "
            "checker for this family")
    details["comparison_note"] = note
    logger.warning("%s: %s: %s", ds.source, ds.label, note)
  manifest = Manifest(
      case_id=case_id, family=family, platform=f["platform"],
      record_date=f["serialized_date"],
      producer=Producer(jax=None, jaxlib=None, jaxport=None, numpy=None, scipy=None, python=None),
      calling_convention_version=int(f["xla_call_module_version"]),
      serialization_version=_read.read_serialization_version(blob),
      custom_call_targets=sigs, polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison(mode or DEFAULT_MODE, d_rtol if rtol is None else rtol,
                            d_atol if atol is None else atol),
      imported_from=ImportSource(source=f"jax:{ds.source}:{ds.label}", details=details))
  inputs = list(f["inputs"])
  if (store.root / manifest.relative_dir).exists():
    existing = store.entry(manifest.relative_dir)
    differing = _differing_files(existing, blob, inputs, outputs, f["mlir_module_text"])
    if differing:
      raise GoldenDataError(
          f"{ds.source}: {ds.label}: maps to the existing entry {existing.entry_id}, whose "
          f"{', '.join(differing)} differ from this dataset's. Two datasets with the same case "
          "and date cannot both be stored; import them into separate stores or rename the "
          "dataset's variable.")
    return "exists", f"{manifest.relative_dir}: already in the store with the same content"
  entry = store.write_entry(manifest, blob, inputs, outputs, f["mlir_module_text"])
  return "imported", f"{entry.entry_id}: imported from {ds.source} {ds.label}"


def _differing_files(entry, blob: bytes, inputs, outputs, module_text: str) -> list[str]:
  """The files of ``entry`` whose content differs from what this dataset would write."""
  want = {BLOB_FILE: sha256_hex(blob), MODULE_FILE: sha256_hex(module_text.encode("utf-8")),
          INPUTS_FILE: sha256_hex(encode_arrays(inputs, "inputs")[0]),
          EXPECTED_FILE: sha256_hex(encode_arrays(outputs, "expected")[0])}
  files = entry.manifest.files
  return sorted(name for name, sha in want.items() if files.get(name) != sha)


def run_import(paths: list[str], out: str, *, platform: str | None = None, mode: str | None = None,
               rtol: float | None = None, atol: float | None = None) -> dict[str, list[str]]:
  """Import every dataset under ``paths`` into the store at ``out``; returns messages by status."""
  store = GoldenStore(out)
  result: dict[str, list[str]] = {"imported": [], "exists": [], "skipped": [], "failed": []}
  for path in track(source_files(paths), "reading"):
    try:
      datasets, notes = _jax_testdata.read_file(path)
    except (GoldenDataError, UnicodeDecodeError) as e:
      result["failed"].append(f"{path.name}: {e}")
      continue
    result["skipped"].extend(notes)
    for ds in datasets:
      if platform is not None and ds.fields.get("platform") != platform:
        continue
      try:
        status, msg = import_dataset(store, ds, mode=mode, rtol=rtol, atol=atol)
      except (JaxportError, NotImplementedError) as e:
        status, msg = "failed", f"{ds.source}: {ds.label}: {type(e).__name__}: {e}"
      logger.info("%s", msg)
      result[status].append(msg)
  return result
