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


def repo_project(store: Path | None = None):
  """This repository's harness project (as ``pyproject.toml`` declares it), on ``store``."""
  from jaxport.harness import OnChange, Project
  return Project(case_modules=("harness.cases",), store=store or ROOT / "compat_data",
                 on_change=OnChange.WARN, require_builtin_targets=True,
                 expectations=ROOT / "harness" / "expected_status.json", root=ROOT,
                 paths=(str(ROOT),))
