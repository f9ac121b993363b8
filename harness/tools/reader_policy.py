"""Measure which envelope layouts each jax release's ``jax.export.deserialize`` reads.

For every release jaxport serves (``served_releases``) this reads one blob of each
envelope layout (``jaxport.upgrades.LAYOUTS``) with that release's own reader,
in its environment (``jaxport.multirelease._reader_policy_measure`` runs them). The
readings live in the one release table (``jaxport/releases/release_table.json``, written
by ``release_table.py``, whose sample blobs are the same); the harness cites them when a
reader refuses an expired envelope. Without ``--check`` this regenerates those releases'
rows of the table.

    python harness/tools/reader_policy.py            # every tested release
    python harness/tools/reader_policy.py --check    # measure again, compare with the file
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import release_table  # noqa: E402
from jaxport.multirelease._reader_policy_measure import measure  # noqa: E402
from jaxport.releases import served_releases  # noqa: E402
from jaxport.harness._judge import _reader_policy  # noqa: E402

METHOD = ("harness/tools/reader_policy.py: each release's jax.export.deserialize on one blob per "
          "layout, default configuration")


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--check", action="store_true",
                      help="measure again and fail when the results differ from the file")
  parser.add_argument("--jax", action="append", help="only this release (repeatable)")
  args = parser.parse_args(argv)
  releases = args.jax or list(served_releases())
  doc = measure(releases, release_table.STORE, METHOD)
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
