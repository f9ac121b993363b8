"""Datasets of jax's own corpus that jax's back-compat suites skip on every machine.

jax keeps these datasets in its wheel but its tests skip them unconditionally,
with a stated reason (an ill-conditioned input, an op since replaced). The
harness still replays them, so their verdict is reported; a failure of one is
an expected failure that names jax's reason, never a pass and never a break of
the run. A pass is reported as a pass.
"""

from __future__ import annotations

from jaxport._vocabulary import ALWAYS_FAIL
from jaxport.golden._manifest import Manifest
from jaxport.report._entries import EntryResult

# The prefix of an entry's ``imported_from.source`` that marks jax's corpus.
_CORPUS_SOURCE = "jax:"
# Dataset file -> the reason jax's own suite gives for skipping it.
SKIPPED_BY_JAX = {
    "tpu_Eigh.py": "jax's export_back_compat_test skips test_tpu_Eigh: \"TODO(b/280668311): "
                   "Change input matrix to not be ill-conditioned.\"",
    "mosaic_semaphore_dma.py": "jax's export_back_compat_pallas_test skips the semaphore and "
                               "DMA kernel: \"Skipped until a current op is substituted.\"",
}


def skipped_by_jax(manifest: Manifest) -> str | None:
  """Why jax's own suite skips the dataset this entry was imported from (None when it runs
  it, or the entry is not from jax's corpus)."""
  imported = manifest.imported_from
  source = getattr(imported, "source", None)
  if not isinstance(source, str) or not source.startswith(_CORPUS_SOURCE):
    return None
  parts = source.split(":")
  return SKIPPED_BY_JAX.get(parts[1]) if len(parts) > 1 else None


def with_jax_skip(outcome: EntryResult, manifest: Manifest) -> EntryResult:
  """``outcome`` with a failure of a dataset jax's suite skips turned into an expected
  failure naming jax's reason (the status follows from it)."""
  reason = skipped_by_jax(manifest)
  if reason is None or outcome.expected_failure or not set(outcome.kinds) & ALWAYS_FAIL:
    return outcome
  return outcome.replace(expected_failure=f"{reason}; replayed here and reported")
