"""Every repository path docs/architecture.md names exists in the tree, so that the map of the
code never sends a reader to a file that moved or never was."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# The tree's top-level folders a path in the document starts with.
TOP = ("jaxport/", "jaxport_pytest/", "jaxport_in_release/", "harness/", "tools/", "tests/",
       "docs/", "benchmarks/", "examples/", ".ci/")


def named_paths(text: str) -> set[str]:
  """The paths in backticks that start with one of the tree's top-level folders, without a
  ``.name`` or ``:line`` after a module (``_judge/_status.worst_first``)."""
  found = set()
  for token in re.findall(r"`([^`\s]+)`", text):
    if not token.startswith(TOP):
      continue
    path = re.split(r"[:(]", token)[0].rstrip("/")
    match = re.match(r"(.*?\.(?:py|md|toml|json|sh|txt|yml|yaml|cfg|ini|fbs|npz|mlir|bin|html))(?:\.\w+)*$", path)
    if match:
      found.add(match.group(1))
    else:  # a folder, or a module and a name in it (``_status.worst_first``)
      folder, _, last = path.rpartition("/")
      found.add(f"{folder}/{last.split('.')[0]}.py" if "." in last else path)
  return found


def test_every_path_the_architecture_page_names_exists():
  paths = named_paths(ARCHITECTURE.read_text())
  assert len(paths) > 50, "the page names few paths: has its format changed?"
  missing = sorted(p for p in paths if not (ROOT / p).exists())
  assert not missing, f"docs/architecture.md names paths that are not in the tree: {missing}"


def test_a_planted_path_that_is_not_in_the_tree_is_caught():
  planted = named_paths("| `harness/tools/no_such_tool.py` | `jaxport/_judge/_status.worst_first` |")
  assert planted == {"harness/tools/no_such_tool.py", "jaxport/_judge/_status.py"}
  assert not (ROOT / "harness/tools/no_such_tool.py").exists()
