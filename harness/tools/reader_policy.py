"""Measure which envelope layouts each jax release's ``jax.export.deserialize`` reads.

For every release jaxport serves (``served_releases``) this reads one blob of each
envelope layout (``jaxport.upgrades.LAYOUTS``) with that release's own reader,
in its venv (``_venvs.ensure_venv``). The readings live in the one release table
(``jaxport/releases/release_table.json``, written by ``release_table.py``, which
takes its sample blobs from here); the harness cites them when a reader refuses
an expired envelope. Without ``--check`` this regenerates those releases' rows of
the table. The blobs come from
``compat_data/`` (the first release-case entry of each layout there) and, for layouts no
entry has, from the newest release's own ``jax.export`` (version 12) or built as the
releases that wrote them did (HloSharding protos: ``_legacy_envelopes``).

    python harness/tools/reader_policy.py            # every tested release
    python harness/tools/reader_policy.py --check    # measure again, compare with the file
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _legacy_envelopes, _venvs
from harness.tools.suites_with_jax import supported_releases
from jaxport.harness import _reader_policy
from jaxport.upgrades import LAYOUTS, envelope_layout

REPO = Path(__file__).resolve().parents[2]
STORE = REPO / "compat_data"

# Run in a release's venv: read each blob with that release's jax.export, print JSON.
_READ_SCRIPT = """
import json, sys, jax
from jax import export
out = {}
for layout, path in json.loads(sys.argv[1]).items():
  try:
    export.deserialize(bytearray(open(path, "rb").read()))
    out[layout] = {"status": "reads", "error": None}
  except Exception as e:
    first = (str(e).strip().splitlines() or [""])[0]
    expired = "backward-compatibility window" in first
    out[layout] = {"status": "refuses_expired" if expired else "refuses",
                   "error": f"{type(e).__name__}: {first}"[:300]}
print(json.dumps({"jax": jax.__version__, "reads": out}))
"""

# Run in the newest release's venv: a blob of that release's own writer.
_WRITE_SCRIPT = """
import sys, jax, jax.numpy as jnp
from jax import export
exp = export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32))
open(sys.argv[1], "wb").write(exp.serialize())
"""


def _run(python: Path, script: str, *args: str) -> str:
  proc = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True,
                        timeout=600)
  if proc.returncode != 0:
    raise RuntimeError(f"{python} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
  lines = proc.stdout.strip().splitlines()
  return lines[-1] if lines else ""


def sample_blobs(scratch: Path, newest: str) -> dict[str, tuple[str, Path]]:
  """One blob per layout: ``layout -> (producer, path)``."""
  found: dict[str, tuple[str, Path]] = {}
  # The release cases' entries: recorded by jax.export itself, with no effect or pytree
  # node of this repository's that a bare reader would not know.
  for blob in sorted(STORE.rglob("release_*/*/exported.bin")):
    layout = envelope_layout(blob.read_bytes())
    producer = blob.parent.name.rsplit("_jax-", 1)[-1]
    found.setdefault(layout, (producer, blob))
  written = scratch / f"jax-{newest}.bin"
  _run(_venvs.ensure_venv(newest), _WRITE_SCRIPT, str(written))
  found.setdefault(envelope_layout(written.read_bytes()), (newest, written))
  # No release case of the store has HloSharding protos: built as jax 0.8.1 to 0.8.3 wrote them.
  built = scratch / "hlo-shardings.bin"
  built.write_bytes(_legacy_envelopes.hlo_sharding_envelope())
  found.setdefault(envelope_layout(built.read_bytes()), ("0.8.3 (built)", built))
  return found


def measure(releases: list[str]) -> dict:
  """The reader policy of ``releases`` as the JSON document ``_reader_policy.parse`` reads."""
  with tempfile.TemporaryDirectory() as tmp:
    blobs = sample_blobs(Path(tmp), releases[-1])
    paths = json.dumps({layout: str(path) for layout, (_, path) in blobs.items()})
    readers = {}
    for release in releases:
      got = json.loads(_run(_venvs.ensure_venv(release), _READ_SCRIPT, paths))
      readers[release] = got["reads"]
  return {
      "format_version": _reader_policy.FORMAT_VERSION,
      "measured_on": datetime.date.today().isoformat(),
      "method": "harness/tools/reader_policy.py: each release's jax.export.deserialize on one "
                "blob per layout, default configuration",
      "layouts": {layout: {"written_by": blobs[layout][0]} for layout in LAYOUTS if layout in blobs},
      "readers": readers,
  }


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--check", action="store_true",
                      help="measure again and fail when the results differ from the file")
  parser.add_argument("--jax", action="append", help="only this release (repeatable)")
  args = parser.parse_args(argv)
  releases = args.jax or list(supported_releases())
  doc = measure(releases)
  _reader_policy.parse(doc, "the new measurement")
  if args.check:
    old = _reader_policy.load()
    changed = [r for r in releases if old.readers.get(r) != _reader_policy.parse(doc, "new").readers[r]]
    for r in changed:
      print(f"jax {r}: reads differently from {_reader_policy.POLICY_FILE.name}", file=sys.stderr)
    return 1 if changed else 0
  from harness.tools import release_table
  return release_table.main(["--releases", *releases, "--force"])


if __name__ == "__main__":
  sys.exit(main())
