"""This repository's expected-status table, and the compat-window table of a report.

    python -m harness.tools.expected_status RUN.json

The table's reader is the harness's (``jaxport.harness._judge._expectations``; the judge
holds each entry to it); the repository names its table with ``jaxport_expectations`` in ``pyproject.toml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jaxport.harness._judge import _expectations
from jaxport.harness._judge._expectations import *  # noqa: F401,F403  (the judging API)

TABLE_PATH = Path(__file__).resolve().parents[1] / "expected_status.json"


def load_table() -> _expectations.Table:
  """The repository's table."""
  return _expectations.load_table(TABLE_PATH)


if __name__ == "__main__":
  sys.exit(_expectations.main())
