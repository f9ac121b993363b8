"""``jaxport import-artifacts``: the ``jax.export`` artifacts a project ships, as golden entries.

Each blob (``NAME.bin``, the bytes ``Exported.serialize()`` wrote) becomes one entry whose
``exported.bin`` is those bytes unchanged. Its sample inputs and expected outputs come from
``NAME.inputs.npz`` and ``NAME.expected.npz`` beside it (the flattened leaves in order, as
``np.savez(f, *leaves)`` writes them); without them the inputs are made from the input avals
(:mod:`jaxport.corpus._artifact_inputs`) and the outputs computed by the installed jax. What
the blob tells (the jax that wrote it, its envelope, its calling convention, its platforms)
and where each array came from are kept in the manifest's ``imported_from``. A blob that
cannot be imported is refused with its reason and nothing is written for it.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from jax import tree_util

from jaxport import _bounded
from jaxport._jaxcompat._version import installed_jax_version
from jaxport.corpus import _artifact_inputs as arrays
from jaxport.corpus._artifact_inputs import ArtifactRefused
from jaxport.corpus._import import tolerance
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.golden._entry import sha256_hex
from jaxport.golden._manifest import (ARTIFACT_SOURCE, BLOB_FILE, Comparison,
                                      CustomCallSignature, ImportSource, Manifest, Producer,
                                      is_safe_name)
from jaxport.golden._store import GoldenStore
from jaxport.serde import _read
from jaxport.upgrades import envelope_layout, read_any_envelope

logger = logging.getLogger(__name__)

BLOB_SUFFIX = ".bin"
INPUTS_SUFFIX = ".inputs.npz"
EXPECTED_SUFFIX = ".expected.npz"
ARTIFACT_FORMAT = "jax.export artifact"

# Reads a module's custom-call signatures, and its text; the last argument names the blob.
SignatureReader = Callable[[bytes, str], tuple[CustomCallSignature, ...]]
TextReader = Callable[[bytes, str], str]


@dataclasses.dataclass(frozen=True)
class Found:
  """The blobs under the paths given, and the other files there, left alone."""

  blobs: tuple[Path, ...]
  others: tuple[Path, ...]


@dataclasses.dataclass(frozen=True)
class Options:
  """How blobs are imported: the family for all (None: each blob's folder), the sizes of
  symbolic dimensions for made inputs, tolerances overriding the dtype-based ones, the
  import date, and the platform that replays the store."""

  family: str | None = None
  dims: Mapping[str, int] = dataclasses.field(default_factory=dict)
  rtol: float | None = None
  atol: float | None = None
  today: datetime.date = dataclasses.field(default_factory=datetime.date.today)
  host_platform: str = "cpu"


def _companion(name: str) -> str | None:
  """The blob file name a companion file ``name`` belongs to (None: not a companion)."""
  for suffix in (INPUTS_SUFFIX, EXPECTED_SUFFIX):
    if name.endswith(suffix) and len(name) > len(suffix):
      return name[:-len(suffix)] + BLOB_SUFFIX
  return None


def find_blobs(paths: list[str]) -> Found:
  """The blobs named by ``paths`` (files, or folders searched below, hidden names skipped)
  and the other files found there (the npz files beside a blob are its own, not others)."""
  blobs: list[Path] = []
  others: list[Path] = []
  for p in map(Path, paths):
    if not p.exists():
      raise GoldenDataError(f"{p}: no such file or directory.")
    if p.is_dir():
      files = sorted(f for f in p.rglob("*") if f.is_file()
                     and not any(part.startswith(".") for part in f.relative_to(p).parts))
    else:
      files = [p]
    for f in files:
      if f.suffix == BLOB_SUFFIX:
        blobs.append(f)
      elif _companion(f.name) is None or not (f.parent / _companion(f.name)).is_file():
        others.append(f)
  return Found(tuple(dict.fromkeys(blobs)), tuple(dict.fromkeys(others)))


def duplicate_stems(blobs: tuple[Path, ...]) -> dict[Path, str]:
  """Why each blob that shares its stem with another of the same import is refused: one
  stem is one case id, so neither is taken."""
  stems = Counter(b.stem for b in blobs)
  out = {}
  for b in blobs:
    if stems[b.stem] > 1:
      same = [str(o) for o in blobs if o.stem == b.stem and o != b]
      out[b] = (f"{b}: refused: its name gives the case id {b.stem!r}, as {', '.join(same)} "
                "does; rename one of them, or import them in separate runs with --family")
  return out


def _names(path: Path, options: Options) -> tuple[str, str]:
  """(family, case id) of a blob: its folder's name (or ``--family``) and its file's stem."""
  case_id = path.stem
  if not is_safe_name(case_id):
    raise ArtifactRefused(f"{path}: refused: its name {case_id!r} is not a case id (letters, "
                          "digits and '_.+-', as a folder name); rename the file")
  family = options.family or path.resolve().parent.name
  if not is_safe_name(family):
    raise ArtifactRefused(f"{path}: refused: its folder's name {family!r} is not a family "
                          "name (letters, digits and '_.+-'); pass --family NAME")
  return family, case_id


def _read_blob(path: Path) -> tuple[bytes, Any, str]:
  """The blob's bytes, the Exported they hold (any envelope age) and its envelope layout."""
  data = _bounded.read_regular(path, str(path), ArtifactRefused, "MAX_BLOB_BYTES")
  try:
    layout = envelope_layout(data)
    exp, _ = read_any_envelope(data, layout=layout)
  except (JaxportError, ValueError, TypeError, IndexError, KeyError, OverflowError) as e:
    raise ArtifactRefused(f"{path}: refused: it does not read as a jax.export artifact "
                          f"({type(e).__name__}: {e}); import the bytes Exported.serialize() "
                          "wrote") from None
  return data, exp, layout


def _producer_jax(data: bytes) -> str | None:
  """The jax release the envelope names as its writer, when it names a plausible one."""
  try:
    version = _read.read_jax_version(data)
  except (JaxportError, ValueError):
    return None
  return version if isinstance(version, str) and is_safe_name(version) and len(version) < 64 \
      else None


def _existing(store: GoldenStore, platform: str, family: str, case_id: str, digest: str,
              path: Path) -> str | None:
  """The id of this case's entry holding these very bytes (None: none); another entry of
  the case with other bytes refuses the blob."""
  entries = [e for e in store.entries(platform=platform, family=family)
             if e.entry_id.case_id == case_id]
  same = [e for e in entries if e.manifest.files.get(BLOB_FILE) == digest]
  if same:
    return str(same[0].entry_id)
  if entries:
    raise ArtifactRefused(
        f"{path}: refused: the store already holds {entries[-1].entry_id} for case "
        f"{case_id!r} with other bytes; shipped bytes are never replaced: give the new blob "
        "another name (a new case id) or another --family")
  return None


def _outputs(path: Path, exp: Any, inputs: list[np.ndarray], env: Mapping[str, int],
             ) -> tuple[list[np.ndarray], str]:
  """The expected outputs from ``NAME.expected.npz``, else computed now by the installed jax."""
  expected_file = path.with_name(path.stem + EXPECTED_SUFFIX)
  if expected_file.is_file():
    outputs = arrays.read_npz(path, expected_file, exp.out_avals, "output", env, exp.out_tree)
    return outputs, expected_file.name
  args, kwargs = tree_util.tree_unflatten(exp.in_tree, inputs)
  try:
    with arrays.x64_for(exp):
      result = exp.call(*args, **kwargs)
    leaves = [np.asarray(x) for x in tree_util.tree_leaves(result)]
  except Exception as e:  # noqa: BLE001  (whatever running it raises refuses this blob only)
    raise ArtifactRefused(f"{path}: refused: no {expected_file.name} beside it, and jax "
                          f"{installed_jax_version()} cannot run it to compute the outputs "
                          f"({type(e).__name__}: {str(e)[:500]})") from None
  return leaves, f"computed at import by jax {installed_jax_version()}"


def import_blob(store: GoldenStore, path: Path, options: Options,
                read_signatures: SignatureReader, read_text: TextReader) -> tuple[str, str]:
  """Import one blob; returns (status, message), status ``imported`` or ``exists``.

  ``ArtifactRefused`` when it cannot be: nothing is then written for it.
  """
  family, case_id = _names(path, options)
  data, exp, layout = _read_blob(path)
  label = str(path)
  platforms = tuple(exp.platforms)
  if not platforms:
    raise ArtifactRefused(f"{path}: refused: it names no platform it was exported for")
  runnable = options.host_platform in platforms
  platform = options.host_platform
  if not runnable:
    # Checked without running on the host that replays the store, as import-jax-testdata
    # files another platform's dataset.
    family = f"{platforms[0]}_{family}"
  digest = sha256_hex(data)
  found = _existing(store, platform, family, case_id, digest, path)
  if found is not None:
    return "exists", f"{path}: already imported as {found} (the same bytes); nothing written"
  inputs_file = path.with_name(path.stem + INPUTS_SUFFIX)
  if inputs_file.is_file():
    inputs = arrays.read_npz(path, inputs_file, exp.in_avals, "input", None, exp.in_tree)
    env = arrays.bindings(exp.in_avals, inputs)
    inputs_from = inputs_file.name
  else:
    env = arrays.dims_for(path, exp.in_avals, options.dims)
    inputs = arrays.made_inputs(exp.in_avals, env)
    inputs_from = "made from the input avals" + (
        f" ({', '.join(f'{k}={v}' for k, v in sorted(env.items()))})" if env else "")
  if runnable:
    expected, expected_from = _outputs(path, exp, inputs, env)
  else:
    expected, expected_from = None, (f"none: exported for {list(platforms)}, checked on "
                                     f"{platform} without running (a lowering-only entry)")
  producer_jax = _producer_jax(data)
  details = {
      "format": ARTIFACT_FORMAT,
      "file": path.name,
      "sha256": digest,
      "imported_on": options.today.isoformat(),
      "producer_jax": producer_jax,
      "envelope_layout": layout,
      "header_serialization_version": _read.read_serialization_version(data),
      "calling_convention_version": int(exp.calling_convention_version),
      "platforms": ",".join(platforms),
      "nr_devices": int(exp.nr_devices),
      "inputs_from": inputs_from,
      "expected_from": expected_from,
  }
  d_rtol, d_atol = tolerance(expected or [])
  specs = arrays.shape_specs(exp.in_avals)
  manifest = Manifest(
      case_id=case_id, family=family, platform=platform, record_date=options.today,
      producer=Producer(jax=producer_jax, jaxlib=None, jaxport=None, numpy=None, scipy=None,
                        python=None),
      calling_convention_version=int(exp.calling_convention_version),
      serialization_version=_read.read_serialization_version(data),
      custom_call_targets=read_signatures(bytes(exp.mlir_module_serialized), label),
      polymorphic_shapes=specs, constraints=arrays.constraints(exp) if specs else None,
      lowering_only=expected is None,
      comparison=Comparison("allclose", d_rtol if options.rtol is None else options.rtol,
                            d_atol if options.atol is None else options.atol),
      imported_from=ImportSource(source=f"{ARTIFACT_SOURCE}{path.name}", details=details),
      jax_config=arrays.jax_config_for(exp))
  manifest = store.next_revision(manifest)
  text = read_text(bytes(exp.mlir_module_serialized), label)
  entry = store.write_entry(manifest, data, inputs, expected, text)
  return "imported", (f"{path}: imported as {entry.entry_id} (inputs {inputs_from}; "
                      f"outputs {expected_from})")


def run_import(paths: list[str], store_root: str | Path, options: Options,
               read_signatures: SignatureReader, read_text: TextReader) -> dict[str, list[str]]:
  """Import every blob under ``paths`` into the store at ``store_root``; messages by status
  (``imported``, ``exists``, ``refused``) and the ``others`` files left alone."""
  found = find_blobs(paths)
  store = GoldenStore(store_root)
  result: dict[str, list[str]] = {"imported": [], "exists": [], "refused": [],
                                  "others": [str(p) for p in found.others]}
  duplicates = duplicate_stems(found.blobs)
  for path in found.blobs:
    if path in duplicates:
      result["refused"].append(duplicates[path])
      continue
    try:
      status, message = import_blob(store, path, options, read_signatures, read_text)
    except ArtifactRefused as e:
      status, message = "refused", str(e)
    except JaxportError as e:
      status, message = "refused", f"{path}: refused: {type(e).__name__}: {e}"
    logger.debug("%s", message)
    result[status].append(message)
  return result
