"""Regenerate ``jaxport/releases/release_table.json`` from one venv per jax release, with this
checkout's ``compat_data/`` release cases as the sample blobs.

    python harness/tools/release_table.py                       # every release, resumably
    python harness/tools/release_table.py --releases 0.9.1 --keep-venvs
    python harness/tools/release_table.py --reader-only --out NEW.json   # reader facts again

What is measured, and how, is :mod:`jaxport.multirelease._table_measure`'s docstring;
``--help`` lists the options.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
  sys.path.insert(0, str(CHECKOUT))

from jaxport.multirelease import _table_measure  # noqa: E402

STORE = CHECKOUT / "compat_data"
METHOD = ("harness/tools/release_table.py: in each release's own venv, its jaxlib's StableHLO "
          "versions and VHLO op names, its export module's calling-convention bounds and stable "
          "table, its jax.export.deserialize on one blob per envelope layout (default "
          "configuration) and on one-device blobs with only one device-count field each, its "
          "jaxlib's portable-artifact reader on a newer StableHLO and on a module using the sdy "
          "dialect, a round trip and call of its own export at a calling convention above its "
          "maximum, and a cpu compile (and, for typed FFI targets, a run without operands) of a "
          "minimal custom call per probed target")


def main(argv: list[str] | None = None) -> int:
  """Measure the releases ``argv`` names, on this checkout's store's sample blobs."""
  return _table_measure.main(argv, STORE, METHOD)


if __name__ == "__main__":
  sys.exit(main())
