"""Replay golden entries under other jax releases and write the producer x consumer matrix.

    python harness/tools/replay_with_jax.py --jax 0.9.2 --jax 0.10.0 --current \\
        --out compat-matrix/

``--table-releases`` adds every release of ``harness/expected_status.json``.
Each ``--jax`` release gets (or reuses) its venv ``.jax-venvs/jax-<version>``
and replays there with jaxport's release replayer, which uses only that release's
``jax.export.deserialize`` and ``Exported.call``; ``--current`` adds the jax of
this interpreter. ``--current-build-only`` keeps the entries the current
jaxport build recorded: the forward check (do older releases read what we
write?). The result is ``matrix.json`` and ``matrix.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _venvs, expected_status, matrix  # noqa: E402
from jaxport.multirelease import _replay  # noqa: E402

logger = logging.getLogger(__name__)
# The harness's ordered effect: jax looks effect types up by the qualified name of their class.
HARNESS_EFFECTS = {"harness.cases._effects": str(_venvs.REPO_ROOT / "harness" / "cases" / "_effects.py")}


def select_entries(root: Path, platform: str, current_build_only: bool) -> list[str]:
  """Entry ids under ``root/platform``, read from the directory layout and manifests only."""
  ids = []
  for manifest in sorted((root / platform).glob("*/*/*/manifest.json")):
    if current_build_only:
      producer = json.loads(manifest.read_text()).get("producer", {})
      if not producer.get("jaxport"):
        continue
    ids.append("/".join(manifest.parent.parts[-4:]))
  return ids


def replay_with(python: str, root: Path, entry_ids: list[str], work: Path,
                timeout_s: float = _replay.ENTRY_TIMEOUT_S) -> list[dict]:
  """Replay ``entry_ids`` with ``python`` (the package's driver), the harness's effects known."""
  return _replay.replay_with(python, root, entry_ids, work, effects=HARNESS_EFFECTS,
                             timeout_s=timeout_s)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description="Replay golden entries under other jax releases.")
  parser.add_argument("--jax", action="append", default=[], help="consumer release (repeatable)")
  parser.add_argument("--table-releases", action="store_true",
                      help="every producer release listed in harness/expected_status.json")
  parser.add_argument("--current", action="store_true",
                      help="also replay with this interpreter's jax (the pinned one)")
  parser.add_argument("--current-build-only", action="store_true",
                      help="only entries recorded by the current jaxport build (forward check)")
  parser.add_argument("--platform", default="cpu", choices=["cpu"],
                      help="release venvs hold the CPU jaxlib only")
  parser.add_argument("--store", default=str(_venvs.REPO_ROOT / "compat_data"))
  parser.add_argument("--venvs", default=None)
  parser.add_argument("--out", required=True, help="folder for matrix.json and matrix.md")
  parser.add_argument("--today", default=None, help="date for window ages (YYYY-MM-DD)")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  if args.table_releases:
    args.jax += [v for v in expected_status.load_table().releases if v not in args.jax]
  if not args.jax and not args.current:
    parser.error("name at least one consumer: --jax VERSION, --table-releases or --current")
  today = datetime.date.fromisoformat(args.today) if args.today else datetime.date.today()
  root = Path(args.store).resolve()
  entry_ids = select_entries(root, args.platform, args.current_build_only)
  if not entry_ids:
    parser.error(f"no entries under {root / args.platform}")
  consumers: dict[str, str] = {}
  for version in args.jax:
    consumers[version] = str(_venvs.ensure_venv(version, args.venvs))
  if args.current:
    import importlib.metadata as md
    consumers[md.version("jax")] = sys.executable
  results = {}
  for version, python in consumers.items():
    logger.info("replaying %d entries with jax %s", len(entry_ids), version)
    with tempfile.TemporaryDirectory(prefix=f"jaxport-replay-{version}-") as tmp:
      results[version] = replay_with(python, root, entry_ids, Path(tmp))
  m = matrix.build_matrix(results, today)
  json_path, text_path = matrix.write(m, args.out)
  print(text_path.read_text())
  print(f"wrote {json_path} and {text_path}")
  violations = [(p, c) for p in m["producers"] for c, cell in m["cells"][p].items()
                if not cell["policy_ok"]]
  return 1 if violations else 0


if __name__ == "__main__":
  sys.exit(main())
