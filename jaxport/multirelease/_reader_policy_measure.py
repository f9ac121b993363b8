"""Measure which envelope layouts each jax release's own ``jax.export.deserialize`` reads.

One blob of each envelope layout (:mod:`._table_samples`) is read by each release's reader
in its environment (:func:`._envs.ensure_venv`); the readings are the document
``jaxport.harness._judge._reader_policy`` parses. The checkout's
``harness/tools/reader_policy.py`` is the command.
"""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path
from typing import Any

from jaxport.harness._judge import _reader_policy
from jaxport.multirelease import _envs
from jaxport.multirelease._replay import IN_RELEASE
from jaxport.multirelease._table_samples import run_script, sample_blobs
from jaxport.upgrades import LAYOUTS

# Run in a release's venv: read each blob with that release's jax.export, print JSON.
READ_LAYOUTS = IN_RELEASE / "read_layouts.py"


def measure(releases: list[str], store: Path, method: str) -> dict[str, Any]:
  """The reader policy of ``releases``, on sample blobs from the golden ``store``, as the JSON
  document ``_reader_policy.parse`` reads; ``method`` says how, in the document's words."""
  with tempfile.TemporaryDirectory() as tmp:
    blobs = sample_blobs(Path(tmp), releases[-1], store)
    paths = json.dumps({layout: str(path) for layout, (_, path) in blobs.items()})
    readers = {}
    for release in releases:
      got = json.loads(run_script(_envs.ensure_venv(release), READ_LAYOUTS, paths))
      readers[release] = got["reads"]
  return {
      "format_version": _reader_policy.FORMAT_VERSION,
      "measured_on": datetime.date.today().isoformat(),
      "method": method,
      "layouts": {layout: {"written_by": blobs[layout][0]} for layout in LAYOUTS if layout in blobs},
      "readers": readers,
  }
