"""jax.export's own findings of the differential properties: its crashes and its unsound
answers are not jaxport failures, so they are counted (a Hypothesis event) and, when the
environment names a file in ``JAXPORT_JAX_FINDINGS``, listed there one JSON line each for the
nightly's summary."""

from __future__ import annotations

import json
import os

from hypothesis import event

FINDINGS_ENV = "JAXPORT_JAX_FINDINGS"


def jax_finding(kind: str, detail: str) -> None:
  """Count one finding about jax.export (``kind``: crash, unsound) and list it when asked to."""
  event(f"jax.export {kind}")
  path = os.environ.get(FINDINGS_ENV)
  if path:
    with open(path, "a", encoding="utf-8") as f:
      f.write(json.dumps({"kind": kind, "detail": detail}) + "\n")
