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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax import tree_util

import jaxport
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.golden import _signatures
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import (BLOB_FILE, EXPECTED_FILE, INPUTS_FILE, MODULE_FILE, Comparison,
                                      CustomCallSignature, ImportSource, Manifest, Producer)
from jaxport.golden._entry import sha256_hex
from jaxport.golden._npz import encode_arrays
from jaxport.golden._store import GoldenStore
from jaxport.serde import _read
from jaxport.corpus import _corpus_rules, _jax_testdata, _poly_specs
from jaxport._progress import track

logger = logging.getLogger(__name__)

# Reads the custom-call signatures of a module's bytes; the second argument names the dataset.
SignatureReader = Callable[[bytes, str], tuple[CustomCallSignature, ...]]

_TOLERANCES = {"float64": (1e-7, 1e-9), "complex128": (1e-7, 1e-9),
               "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5),
               "float16": (1e-2, 1e-3), "bfloat16": (1e-2, 1e-2)}


def source_files(paths: list[str]) -> list[Path]:
  """The ``.py`` files named by ``paths`` (files, or directories searched recursively)."""
  out = []
  for p in map(Path, paths):
    if p.is_dir():
      out.extend(sorted(f for f in p.rglob("*.py") if f.name != "__init__.py"))
    elif p.exists():  # a file, or a FIFO or device that run_import skips with the reason
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


def _input_avals(inputs, specs: tuple[str | None, ...] | None) -> tuple[Any, ...]:
  if specs is None:
    return _avals(inputs)
  structs = jaxport.symbolic_args_specs(tuple(inputs), specs)
  return tuple(jax.core.ShapedArray(s.shape, s.dtype) for s in structs)


def build_exported(ds: _jax_testdata.Dataset, fun_name: str,
                   specs: tuple[str | None, ...] | None = None) -> Any:
  """An Exported around the dataset's module bytes, as jax's back-compat replay builds it.

  ``specs`` are the polymorphic shapes of the inputs (None: all static); the
  outputs keep the dataset's concrete shapes, as jax's own replay does.
  """
  f = ds.fields
  inputs, outputs = tuple(f["inputs"]), tuple(f["expected_outputs"] or ())
  n_in, n_out = len(inputs), len(outputs)
  in_avals = _input_avals(inputs, specs)
  return jaxport.Exported(
      fun_name=fun_name,
      in_tree=tree_util.tree_structure((inputs, {})),
      in_avals=in_avals,
      out_tree=tree_util.tree_structure(outputs),
      out_avals=_avals(outputs),
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
      uses_global_constants=any(not all(isinstance(d, int) for d in a.shape) for a in in_avals),
      _get_vjp=None,
  )


_DTYPE_KEYS = frozenset({"f16", "bf16", "f32", "f64", "c64", "c128"})
_SHORT_DTYPES = {"float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64",
                 "complex128": "c128"}


def _dtype_and_variant(ds: _jax_testdata.Dataset) -> tuple[str | None, str | None]:
  """The dtype a dataset is about (its key ``f32``..., else its first float array's) and the
  rest of its keys (an algorithm such as ``jacobi``), each None when there is none."""
  dtypes = [k for k in ds.keys if k in _DTYPE_KEYS]
  rest = [k for k in ds.keys if k not in _DTYPE_KEYS]
  if dtypes:
    dtype = dtypes[-1]
  else:
    arrays = [*ds.fields["inputs"], *(ds.fields["expected_outputs"] or ())]
    dtype = next((_SHORT_DTYPES[np.asarray(a).dtype.name] for a in arrays
                  if np.asarray(a).dtype.name in _SHORT_DTYPES), None)
  return dtype, "_".join(rest) or None


def _skip_reason(ds: _jax_testdata.Dataset, lowering_only: bool) -> str | None:
  if ds.fields["expected_outputs"] is None and not lowering_only:
    return "the dataset has no expected outputs"
  return None


def _signatures_here(module: bytes, label: str) -> tuple[CustomCallSignature, ...]:
  """The custom-call signatures of a module, read in this process (``label`` is unused)."""
  return _signatures.signatures(module)


def import_dataset(store: GoldenStore, ds: _jax_testdata.Dataset, *, mode: str | None,
                   rtol: float | None, atol: float | None,
                   host_platform: str | None = None,
                   read_signatures: SignatureReader = _signatures_here) -> tuple[str, str]:
  """Write one dataset as an entry; returns (status, message) with status imported/exists/skipped.

  With ``host_platform`` (the platform of the machine that will replay the
  store), a dataset of another platform becomes a lowering-only entry under
  the host's directory, family ``<its platform>_<family>``: the blob is read
  and its module's custom calls judged, nothing is run. ``read_signatures``
  reads the module's custom calls (the command line passes its module parser
  child, so that a module that crashes jaxlib fails this dataset only).
  """
  _jax_testdata.check_fields(ds)
  f = ds.fields
  lowering_only = host_platform is not None and f["platform"] != host_platform
  reason = _skip_reason(ds, lowering_only)
  if reason:
    return "skipped", f"{ds.source}: {ds.label}: skipped: {reason}"
  family, case_id = _jax_testdata.case_names(ds)
  specs, specs_source = None, None
  if _poly_specs.is_shape_polymorphic(f["mlir_module_text"]):
    found_specs = _poly_specs.resolve(f["mlir_module_text"], Path(ds.source).stem, ds.variable)
    if found_specs.specs is None:
      return "skipped", f"{ds.source}: {ds.label}: skipped: {found_specs.source}"
    specs, specs_source = found_specs.specs, found_specs.source
  sigs = read_signatures(bytes(f["mlir_module_serialized"]), f"{ds.source}: {ds.label}")
  stated = sorted(set(f["custom_call_targets"]))
  found = sorted({s.target for s in sigs})
  if stated != found:
    logger.warning("%s: %s: the file lists custom_call_targets %s but the module calls %s; "
                   "the manifest records what the module calls", ds.source, ds.label, stated, found)
  exp = build_exported(ds, fun_name=f"{family}.{case_id}", specs=specs)
  blob = bytes(exp.serialize())
  outputs = list(f["expected_outputs"] or ())
  d_rtol, d_atol = tolerance(outputs)
  choice = _corpus_rules.choose_checker(family, found)
  dtype, variant = _dtype_and_variant(ds)
  details = {
      "format": "jax back-compat test data",
      "testdata_version": f["testdata_version"],
      "serialized_date": f["serialized_date"].isoformat(),
      "xla_call_module_version": f["xla_call_module_version"],
      "nr_devices": f.get("nr_devices", 1),
      "stated_custom_call_targets": ",".join(f["custom_call_targets"]),
      "producer_versions": "unknown: the source states only its serialized_date",
      "dataset_platform": f["platform"],
      "dataset_family": family,
      "dataset_op": choice.op,
      "dataset_dtype": dtype,
      "dataset_variant": variant,
      "checker_reason": (f"chosen with --mode {mode}" if mode is not None else choice.reason),
  }
  if specs_source is not None:
    details["polymorphic_shapes_source"] = specs_source
  checker = mode or choice.checker
  if lowering_only:
    checker = "none"
    details["lowering_only_reason"] = (f"a {f['platform']} dataset imported for a "
                                       f"{host_platform} host: its platform cannot run here")
    family = f"{f['platform']}_{family}"
  manifest = Manifest(
      case_id=case_id, family=family, platform=host_platform if lowering_only else f["platform"],
      record_date=f["serialized_date"],
      producer=Producer(jax=None, jaxlib=None, jaxport=None, numpy=None, scipy=None, python=None),
      calling_convention_version=int(f["xla_call_module_version"]),
      serialization_version=_read.read_serialization_version(blob),
      custom_call_targets=sigs, polymorphic_shapes=specs, constraints=None,
      lowering_only=lowering_only,
      comparison=Comparison(checker, d_rtol if rtol is None else rtol, d_atol if atol is None else atol),
      imported_from=ImportSource(source=f"jax:{ds.source}:{ds.label}", details=details))
  inputs = list(f["inputs"])
  expected = None if lowering_only else outputs
  if (store.root / manifest.relative_dir).exists():
    existing = store.entry(manifest.entry_id)
    differing = _differing_files(existing, blob, inputs, expected, f["mlir_module_text"])
    if differing:
      raise GoldenDataError(
          f"{ds.source}: {ds.label}: maps to the existing entry {existing.entry_id}, whose "
          f"{', '.join(differing)} differ from this dataset's. Two datasets with the same case "
          "and date cannot both be stored; import them into separate stores or rename the "
          "dataset's variable.")
    return "exists", f"{manifest.relative_dir}: already in the store with the same content"
  entry = store.write_entry(manifest, blob, inputs, expected, f["mlir_module_text"])
  return "imported", f"{entry.entry_id}: imported from {ds.source} {ds.label}"


def _differing_files(entry, blob: bytes, inputs, outputs, module_text: str) -> list[str]:
  """The files of ``entry`` whose content differs from what this dataset would write."""
  want = {BLOB_FILE: sha256_hex(blob), MODULE_FILE: sha256_hex(module_text.encode("utf-8")),
          INPUTS_FILE: sha256_hex(encode_arrays(inputs, "inputs")[0])}
  if outputs is not None:
    want[EXPECTED_FILE] = sha256_hex(encode_arrays(outputs, "expected")[0])
  files = entry.manifest.files
  return sorted(name for name in set(want) | (set(files) - {BLOB_FILE}) if files.get(name) != want.get(name))


def run_import(paths: list[str], out: str, *, platform: str | None = None, mode: str | None = None,
               rtol: float | None = None, atol: float | None = None,
               host_platform: str | None = None,
               read_signatures: SignatureReader = _signatures_here) -> dict[str, list[str]]:
  """Import every dataset under ``paths`` into the store at ``out``; returns messages by status.

  ``host_platform`` and ``read_signatures``: see :func:`import_dataset` (other platforms'
  datasets become lowering-only; what reads each module's custom calls).
  """
  store = GoldenStore(out)
  result: dict[str, list[str]] = {"imported": [], "exists": [], "skipped": [], "failed": []}
  for path in track(source_files(paths), "reading"):
    unreadable = _jax_testdata.not_regular_reason(path)
    if unreadable is not None:
      result["skipped"].append(f"{path.name}: skipped: {path} is {unreadable}")
      continue
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
        status, msg = import_dataset(store, ds, mode=mode, rtol=rtol, atol=atol,
                                     host_platform=host_platform, read_signatures=read_signatures)
      except (JaxportError, NotImplementedError) as e:
        status, msg = "failed", f"{ds.source}: {ds.label}: {type(e).__name__}: {e}"
      logger.info("%s", msg)
      result[status].append(msg)
  return result
