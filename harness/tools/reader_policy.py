"""Measure which envelope layouts each jax release's ``jax.export.deserialize`` reads.

For every release jaxport serves (``served_releases``) this reads one blob of each
envelope layout (``jaxport.upgrades.LAYOUTS``) with that release's own reader,
in its environment (``jaxport.multirelease._envs.ensure_venv``). The readings live in the
one release table (``jaxport/releases/release_table.json``, written by ``release_table.py``,
whose sample blobs are the same, ``_reader_samples.py``); the harness cites them when a
reader refuses an expired envelope. Without ``--check`` this regenerates those releases'
rows of the table.

    python harness/tools/reader_policy.py            # every tested release
    python harness/tools/reader_policy.py --check    # measure again, compare with the file
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import release_table  # noqa: E402
from harness.tools._reader_samples import run_script, sample_blobs  # noqa: E402
from jaxport.multirelease import _envs  # noqa: E402
from jaxport.releases import served_releases  # noqa: E402
from jaxport.harness._judge import _reader_policy
from jaxport.upgrades import LAYOUTS

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

def measure(releases: list[str]) -> dict:
  """The reader policy of ``releases`` as the JSON document ``_reader_policy.parse`` reads."""
  with tempfile.TemporaryDirectory() as tmp:
    blobs = sample_blobs(Path(tmp), releases[-1])
    paths = json.dumps({layout: str(path) for layout, (_, path) in blobs.items()})
    readers = {}
    for release in releases:
      got = json.loads(run_script(_envs.ensure_venv(release), _READ_SCRIPT, paths))
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
  releases = args.jax or list(served_releases())
  doc = measure(releases)
  _reader_policy.parse(doc, "the new measurement")
  if args.check:
    old = _reader_policy.load()
    changed = [r for r in releases if old.readers.get(r) != _reader_policy.parse(doc, "new").readers[r]]
    for r in changed:
      print(f"jax {r}: reads differently from {_reader_policy.POLICY_FILE.name}", file=sys.stderr)
    return 1 if changed else 0
  return release_table.main(["--releases", *releases, "--force"])


if __name__ == "__main__":
  sys.exit(main())
