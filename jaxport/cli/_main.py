"""Entry point of the ``jaxport`` console script."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
  print("jaxport: the command line is being built", file=sys.stderr)
  return 2
