"""jax.export's own findings of the differential properties: its crashes and its unsound
answers are not jaxport failures, so they are counted (a Hypothesis event) and, when the
environment names a file in ``JAXPORT_JAX_FINDINGS``, listed there one JSON line each for the
nightly's summary."""

from __future__ import annotations

import json

from hypothesis import event

from harness._environment import jax_findings_file


def jax_finding(kind: str, detail: str) -> None:
  """Count one finding about jax.export (``kind``: crash, unsound) and list it when asked to."""
  event(f"jax.export {kind}")
  path = jax_findings_file()
  if path is not None:
    with open(path, "a", encoding="utf-8") as f:
      f.write(json.dumps({"kind": kind, "detail": detail}) + "\n")
