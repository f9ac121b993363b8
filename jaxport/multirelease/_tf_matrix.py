"""TensorFlow releases as consumers of the producer x consumer matrix (``jaxport matrix
--producers --tf-releases 2.19,2.21``).

Each TensorFlow release calls every entry with its ``XlaCallModule`` (the ``tf`` reader,
:mod:`._tf_replay`), and each row is weighed by the ``tf`` reader's judge
(``jaxport.harness._judge._tf_runs``): its cell counts the statuses, as a jax consumer's does,
with the refusals counted by reason. jax's compatibility window promises nothing of TensorFlow:
no TensorFlow cell must pass, and a failure there warns.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jaxport._vocabulary import Status
from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._judge._release_runs import cell_status
from jaxport.harness._judge._tf_runs import TfRun, judge_tf_row
from jaxport.harness._protocol._tf_rows import TfRow
from jaxport.multirelease import _matrix
from jaxport.multirelease._tf_replay import replay_store_with_tf
from jaxport.releases._tf_table import TfRelease


def consumer_key(release: TfRelease) -> str:
  """TensorFlow ``release``'s key among the matrix's consumers (jax's are bare versions)."""
  return f"{_matrix.TF_PREFIX}{release.version}"


def producers_of(root: Path, entry_ids: Sequence[EntryId]) -> dict[EntryId, dict[str, Any]]:
  """Each entry's producer as its manifest records it (who wrote the entry)."""
  out = {}
  for entry_id in entry_ids:
    manifest = root / str(entry_id) / "manifest.json"
    try:
      producer = json.loads(manifest.read_text()).get("producer")
    except (OSError, ValueError, AttributeError) as e:
      raise GoldenDataError(f"{manifest}: not a readable manifest ({e}); restore the entry "
                            "from version control or remove it") from None
    out[entry_id] = producer if isinstance(producer, dict) else {}
  return out


def tf_cells(rows: Sequence[TfRow], release: TfRelease,
             producers: Mapping[EntryId, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
  """Producer label -> the cell of TensorFlow ``release``'s rows of that producer's entries."""
  cells: dict[str, dict[str, Any]] = {}
  judged: dict[str, list[TfRun]] = collections.defaultdict(list)
  for row in rows:
    producer = producers.get(row.entry_id) or {}
    label = _matrix.producer_label(producer) if producer else "unknown"
    cell = cells.setdefault(label, {**{str(s): 0 for s in Status}, _matrix.NOT_REPLAYED: 0,
                                    "total": 0, "failures": [], "refused_for": {}})
    run = judge_tf_row(row, release)
    judged[label].append(run)
    cell[_matrix.NOT_REPLAYED if run.status is None else str(run.status)] += 1
    cell["total"] += 1
    if run.status is None:
      cell.setdefault("skipped", []).append({"entry_id": str(run.entry_id), "why": run.detail})
    elif not run.passed:
      cell["failures"].append({"entry_id": str(run.entry_id), "status": str(run.status),
                               "stage": run.stage, "error": run.detail})
      if run.refusal is not None:
        reason = str(run.refusal.reason)
        cell["refused_for"][reason] = cell["refused_for"].get(reason, 0) + 1
  for label, cell in cells.items():
    cell["failures"].sort(key=lambda f: f["entry_id"])
    cell["window"] = None
    cell["must_pass"] = False
    cell["status"] = str(cell_status(judged[label], False))
  return cells


def add_tf_consumers(matrix: dict[str, Any], root: Path, entry_ids: Sequence[EntryId],
                     releases: Sequence[TfRelease],
                     replay: Callable[[Path, Sequence[EntryId], TfRelease], list[TfRow]]
                     = replay_store_with_tf) -> dict[str, Any]:
  """``matrix`` with a consumer column per TensorFlow release of ``releases``, after jax's;
  ``replay`` calls the entries with one release (its environment built first)."""
  producers = producers_of(root, entry_ids)
  for release in releases:
    key = consumer_key(release)
    for label, cell in tf_cells(replay(root, entry_ids, release), release, producers).items():
      matrix["cells"].setdefault(label, {})[key] = cell
      if label not in matrix["producers"]:
        matrix["producers"].append(label)
    matrix["consumers"].append(key)
  return matrix
