"""One blob of each envelope layout, for measuring what each release's reader reads.

Shared by :mod:`._table_measure` (which measures every release's reader facts on them) and
:mod:`._reader_policy_measure` (which measures the reader policy alone). The blobs come from
a golden store (the first release-case entry of each layout there) and, for layouts no
entry has, from the newest release's own ``jax.export`` (version 12) or built as the releases
that wrote them did (HloSharding protos: :mod:`._legacy_envelopes`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from jaxport.multirelease import _envs, _legacy_envelopes
from jaxport.multirelease._replay import IN_RELEASE
from jaxport.upgrades import envelope_layout

# Run in the newest release's venv: a blob of that release's own writer.
WRITE_SAMPLE = IN_RELEASE / "write_sample.py"


def run_script(python: Path, script: Path, *args: str) -> str:
  """The last line the script file ``script`` (of ``jaxport_in_release``) prints, run by
  ``python`` (a release's interpreter)."""
  proc = subprocess.run([str(python), str(script), *args], capture_output=True, text=True,
                        timeout=600)
  if proc.returncode != 0:
    raise RuntimeError(f"{python} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
  lines = proc.stdout.strip().splitlines()
  return lines[-1] if lines else ""


def sample_blobs(scratch: Path, newest: str, store: Path) -> dict[str, tuple[str, Path]]:
  """One blob per layout, from the golden ``store`` and written in ``scratch``:
  ``layout -> (producer, path)``."""
  found: dict[str, tuple[str, Path]] = {}
  # The release cases' entries: recorded by jax.export itself, with no effect or pytree
  # node of this repository's that a bare reader would not know.
  for blob in sorted(store.rglob("release_*/*/exported.bin")):
    layout = envelope_layout(blob.read_bytes())
    producer = blob.parent.name.rsplit("_jax-", 1)[-1]
    found.setdefault(layout, (producer, blob))
  written = scratch / f"jax-{newest}.bin"
  run_script(_envs.ensure_venv(newest), WRITE_SAMPLE, str(written))
  found.setdefault(envelope_layout(written.read_bytes()), (newest, written))
  # No release case of the store has HloSharding protos: built as jax 0.8.1 to 0.8.3 wrote them.
  built = scratch / "hlo-shardings.bin"
  built.write_bytes(_legacy_envelopes.hlo_sharding_envelope())
  found.setdefault(envelope_layout(built.read_bytes()), ("0.8.3 (built)", built))
  return found
