"""Where the harness tests find the repository's harness and golden store, and a small store
copied from it; importing this also puts the repository root on ``sys.path`` for ``harness``."""

import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

HARNESS_TESTS = ROOT / "harness" / "test_replay.py"
GOLDEN_CPU = ROOT / "compat_data" / "cpu"


def copy_cpu_entries(entries: Iterable[str], root: Path) -> Path:
  """A store at ``root`` holding copies of the given cpu entries (ids below ``cpu/``)."""
  for e in entries:
    shutil.copytree(GOLDEN_CPU / e, root / "cpu" / e)
  return root
