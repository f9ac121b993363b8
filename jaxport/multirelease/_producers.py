"""Every entry of a store under several jax releases, each read by that release's own
``jax.export``: the producer x consumer matrix (``jaxport matrix --producers``).

Each consumer release replays in its environment (:mod:`._envs`) with the release replayer,
which uses only that release's ``jax.export.deserialize`` and ``Exported.call``; the running
jax can be a consumer too. With ``current_build_only`` only the entries jaxport recorded are
replayed: the forward check (do older releases read what jaxport writes?). The rows make the
matrix of :mod:`._matrix`, written as ``matrix.json``, ``matrix.md`` and ``matrix-summary.json``.
"""

from __future__ import annotations

import datetime
import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxport.errors import GoldenDataError
from jaxport.golden._entry_id import EntryId
from jaxport.multirelease import _envs, _matrix, _replay

logger = logging.getLogger(__name__)


def select_entries(root: Path, platform: str, current_build_only: bool) -> list[EntryId]:
  """Entry ids under ``root/platform``, read from the directory layout and manifests only."""
  ids = []
  for manifest in sorted((root / platform).glob("*/*/*/manifest.json")):
    if current_build_only:
      try:
        producer = json.loads(manifest.read_text()).get("producer", {})
      except (OSError, ValueError, AttributeError) as e:
        raise GoldenDataError(f"{manifest}: not a readable manifest ({e}); restore the entry "
                              "from version control or remove it") from None
      if not isinstance(producer, dict) or not producer.get("jaxport"):
        continue
    ids.append(EntryId.from_folder(manifest.parent))
  return ids


def consumer_pythons(versions: list[str]) -> dict[str, str]:
  """Each consumer release's interpreter (version -> its python), its environment built."""
  return {v: str(_envs.ensure_venv(v)) for v in versions}


def measure(consumers: Mapping[str, str], root: Path, entry_ids: list[EntryId], today: datetime.date,
            *, effects: Mapping[str, str] | None = None,
            timeout_s: float = _replay.ENTRY_TIMEOUT_S) -> dict[str, Any]:
  """The matrix of ``entry_ids`` of the store ``root`` replayed by each consumer release
  (version -> its python), the effect modules ``effects`` imported first."""
  results = {}
  for version, python in consumers.items():
    logger.info("replaying %d entries with jax %s", len(entry_ids), version)
    with tempfile.TemporaryDirectory(prefix=f"jaxport-replay-{version}-") as tmp:
      results[version] = _replay.replay_with(python, root, entry_ids, Path(tmp), effects=effects,
                                             timeout_s=timeout_s)
  return _matrix.build_matrix(results, today)
