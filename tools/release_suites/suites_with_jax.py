"""Run this checkout's test suite and CPU harness replay under each supported jax release.

    python tools/release_suites/suites_with_jax.py --supported --out reports/releases
    python tools/release_suites/suites_with_jax.py --jax 0.9.2 --jax 0.10.1 --out reports/releases
    python tools/release_suites/suites_with_jax.py --jax 0.10.0 --suite tests -- -k vmap
    python tools/release_suites/suites_with_jax.py --supported --list   # each release's Python, no run

The command names this checkout; :mod:`jaxport.multirelease._suites` builds the release
environments and runs the suites there (``--help`` lists the options).
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
if __package__ in (None, ""):
  sys.path.insert(0, str(CHECKOUT))

from jaxport.multirelease import _suites  # noqa: E402


def main(argv: list[str] | None = None) -> int:
  """Run the suites of this checkout (see :func:`jaxport.multirelease._suites.main`)."""
  return _suites.main(argv, CHECKOUT)


if __name__ == "__main__":
  sys.exit(main())
