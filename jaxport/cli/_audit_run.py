"""``jaxport audit --run``: the artifacts with sample inputs at hand run and their outputs judged.

A store entry holds its inputs and the outputs its producer recorded; a bare blob has them
where ``jaxport import-artifacts`` takes them, ``NAME.inputs.npz`` and ``NAME.expected.npz``
beside ``NAME.bin``. Each is run by the installed jax in the release replayer's process
(``jaxport.multirelease._replay``, the process ``replay --with-jax`` and ``bisect`` run
entries in), never in the command's own, and its row judged by the release rows' judge
(``jaxport.harness._judge._release_runs``): a row that fails to load, run or reproduce is a
problem of the artifact. A blob is put into a scratch store of its own first, as ``bisect
--blob`` does; its bytes are kept.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.cli._artifacts import Artifact
from jaxport.corpus._artifacts import EXPECTED_SUFFIX, INPUTS_SUFFIX
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._judge._release_runs import ReleaseRun, judge_row
from jaxport.multirelease._bisect import entry_from_blob
from jaxport.multirelease._replay import replay_with

# The comparison a blob's outputs are judged with (``bisect --blob``'s default).
BLOB_RTOL = BLOB_ATOL = 1e-5


@json_record(Strict.raising(JaxportError), also=("ran", "status", "detail"))
@dataclasses.dataclass(frozen=True)
class ArtifactRun:
  """What ``--run`` made of one artifact: its judged row (``run``), or why it was not run."""
  run: ReleaseRun | None = key(skip=True, default=None)
  not_run: str | None = key(skip=True, default=None)

  # Its JSON view: whether it ran and was judged, the judge's status, and the detail (why it
  # did not run, where it did not).
  @property
  def ran(self) -> bool:
    return self.run is not None and self.run.status is not None

  @property
  def status(self) -> str | None:
    return str(self.run.status) if self.ran else None

  @property
  def detail(self) -> str | None:
    return self.not_run if self.run is None else self.run.detail


def samples_of(blob: Path) -> tuple[Path, Path] | None:
  """The sample files beside ``blob``: ``NAME.inputs.npz`` and ``NAME.expected.npz``."""
  stem = blob.name[:-len(blob.suffix)] if blob.suffix else blob.name
  inputs, expected = blob.with_name(stem + INPUTS_SUFFIX), blob.with_name(stem + EXPECTED_SUFFIX)
  return (inputs, expected) if inputs.is_file() and expected.is_file() else None


def run_artifacts(artifacts: Sequence[Artifact], work: Path) -> dict[str, ArtifactRun]:
  """Each artifact's run, by label: the entries of each store replayed together, each blob
  with its sample files in a scratch store of its own."""
  out: dict[str, ArtifactRun] = {}
  by_store: dict[Path, list[tuple[str, EntryId]]] = {}
  for i, art in enumerate(artifacts):
    if art.problem is not None:
      continue
    if art.entry is not None:
      try:
        lowering_only = art.entry.manifest.lowering_only
      except JaxportError:
        continue  # Its audit reports the damage.
      if lowering_only:
        out[art.label] = ArtifactRun(not_run="a lowering-only entry records no outputs")
        continue
      root = art.entry.path.resolve().parents[3]
      by_store.setdefault(root, []).append((art.label, art.entry.entry_id))
      continue
    samples = samples_of(art.path)
    if samples is None:
      out[art.label] = ArtifactRun(not_run=(
          f"no sample inputs: {art.path.stem}{INPUTS_SUFFIX} and "
          f"{art.path.stem}{EXPECTED_SUFFIX} are not both beside it"))
      continue
    root = work / f"blob-{i}"
    try:
      entry_id = entry_from_blob(art.path, *samples, root, rtol=BLOB_RTOL, atol=BLOB_ATOL)
    except (JaxportError, OSError) as e:
      out[art.label] = ArtifactRun(not_run=f"its sample files do not make an entry: {e}")
      continue
    by_store.setdefault(root, []).append((art.label, entry_id))
  consumer = installed_jax_version()
  for n, (root, pairs) in enumerate(by_store.items()):
    folder = work / f"run-{n}"
    folder.mkdir(parents=True)
    ids = [e for _, e in pairs]
    rows = dict(zip(ids, replay_with(sys.executable, root, ids, folder)))
    for label, entry_id in pairs:
      out[label] = ArtifactRun(run=judge_row(rows[entry_id], consumer))
  return out


def run_in_scratch(artifacts: Sequence[Artifact]) -> dict[str, ArtifactRun]:
  """:func:`run_artifacts` in a scratch folder removed after."""
  with tempfile.TemporaryDirectory(prefix="jaxport-audit-run-") as tmp:
    return run_artifacts(artifacts, Path(tmp))
