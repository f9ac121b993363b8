"""Failure artifacts (``--compat-artifacts DIR``): what a failing entry's replay obtained and what
today's lowering of its case is, written into one folder per entry for a CI job to upload.

Runs in the worker (it deserializes, runs and exports, all native code): the session asks
for an entry's artifacts after the entry failed (an ``ArtifactsRequest``). A folder holds

- ``obtained.npz``: the outputs of the primary reader's run of the recorded blob on the
  stored inputs (npz without pickle, ``arr_0``, ``arr_1``... as the store writes them);
- ``today.mlir``: the module text of the case exported today;
- ``module.diff``: a unified diff of the recorded module text and today's, both without
  source locations (a moved case changes every line's location, not what it computes);
- ``module.raw.diff``: the same diff with the locations kept;
- ``artifacts.json``: the entry id, the reader, the files written and why any is missing.

An entry whose files are damaged still gets what its intact files allow (a tampered expected
output leaves the blob and inputs to run). Folder names come from entry ids, sanitised to
one plain name directly under DIR; files are written to a temporary name and renamed, so a
link planted in DIR is replaced, never followed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

from jaxport.errors import GoldenDataError
from jaxport.export import _mlir
from jaxport.golden._manifest import MODULE_FILE
from jaxport.golden._npz import encode_arrays
from jaxport.golden._store import GoldenStore
from jaxport.harness._worker import _case_runs, _engine, _jax_setup
from jaxport.harness._worker import _reference as _api
from jaxport.harness._protocol._artifact_folder import (DIFF_FILE, OBTAINED_FILE, RAW_DIFF_FILE,
                                                        SUMMARY_FILE, TODAY_MODULE_FILE,
                                                        entry_folder, write_file as _write,
                                                        write_summary)
from jaxport.harness._protocol._answers import ArtifactsAnswer, FailureKind, WorkerFailure
from jaxport.harness._protocol._requests import ArtifactsRequest

def _error_line(e: BaseException) -> str:
  text = str(e).strip().splitlines()
  return f"{type(e).__name__}: {text[0] if text else ''}"[:2000]


def write(engine: _engine.ReplayEngine,
          request: ArtifactsRequest) -> ArtifactsAnswer | WorkerFailure:
  """Write the artifacts of ``request.entry_id`` of the store ``request.root`` into a folder
  of ``request.dir``; without ``request.run`` the obtained outputs are left out (an
  accelerator's entry in a CPU run)."""
  entry_id = request.entry_id
  try:
    folder = entry_folder(Path(request.dir), entry_id)
  except (OSError, GoldenDataError) as e:
    return WorkerFailure(FailureKind.HARNESS, f"--compat-artifacts: {_error_line(e)}")
  files: list[str] = []
  problems: list[str] = []

  def attempt(name: str, make: Callable[[], bytes]) -> None:
    # The summary says what is being written first: if the worker dies on the way, the folder
    # still tells which files are whole and which one it was writing.
    write_summary(folder, entry_id, _api.PRIMARY, files, problems, writing=name)
    try:
      _write(folder, name, make())
    except Exception as e:  # noqa: BLE001  (each missing artifact is named, the others written)
      problems.append(f"{name}: {_error_line(e)}")
      return
    files.append(name)

  try:
    entry = GoldenStore(request.root).entry(entry_id)
    manifest = entry.manifest
  except GoldenDataError as e:
    problems.append(f"the entry cannot be read: {_error_line(e)}")
    entry = manifest = None
  if manifest is not None:
    if manifest.lowering_only or not request.run:
      problems.append(f"{OBTAINED_FILE}: not written, the entry is not run here")
    else:
      attempt(OBTAINED_FILE, lambda: _obtained(entry, manifest))
    today: dict[str, str] = {}
    attempt(TODAY_MODULE_FILE, lambda: _today_text(engine, manifest, today))
    if "text" in today:
      attempt(DIFF_FILE, lambda: _diff(_mlir.text_without_locations(entry.module_text()),
                                       _mlir.text_without_locations(today["text"])))
      attempt(RAW_DIFF_FILE, lambda: _diff(entry.module_text(), today["text"]))
  write_summary(folder, entry_id, _api.PRIMARY, files, problems)
  files.append(SUMMARY_FILE)
  return ArtifactsAnswer(str(folder), tuple(sorted(files)), tuple(problems))


def _obtained(entry, manifest) -> bytes:
  """The primary reader's outputs of the recorded blob on the stored inputs, as npz bytes."""
  blob, inputs = entry.blob(), entry.inputs()
  with _jax_setup.jax_config(_jax_setup.calling_jax_config(manifest)):
    exp = _api.deserialize(blob, reader=_api.PRIMARY)
    outputs = _case_runs.run_exported(exp, inputs)
  data, _ = encode_arrays(outputs, OBTAINED_FILE)
  return data


def _today_text(engine: _engine.ReplayEngine, manifest, out: dict[str, str]) -> bytes:
  """Today's module text of the entry's case (kept in ``out["text"]`` for the diff)."""
  case = engine.case_of(manifest)
  if case is None:
    raise GoldenDataError(f"case {manifest.case_id} is not registered by the project's case "
                          "modules, so there is no lowering of today")
  out["text"] = _case_runs.export_case(case).mlir_module()
  return out["text"].encode()


def _diff(recorded: str, today: str) -> bytes:
  lines = difflib.unified_diff(recorded.splitlines(keepends=True), today.splitlines(keepends=True),
                               fromfile=f"recorded/{MODULE_FILE}", tofile=f"today/{MODULE_FILE}")
  return "".join(lines).encode()
