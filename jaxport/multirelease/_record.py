"""Record golden entries with an older jax release.

    python harness/tools/record_with_jax.py --jax 0.9.2 [--case eigh_f32 ...]

Creates (or reuses) ``.jax-venvs/jax-<version>``, runs ``_recorder.py`` there
with that release's own ``jax.export``, then, back in this interpreter (the
jaxport venv), imports the staging folder into ``compat_data`` through
``GoldenStore.write_entry``. Entries already present are left as they are
(the store is append-only).
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
  sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.tools import _venvs  # noqa: E402
from jaxport.multirelease._replay import release_env  # noqa: E402
from harness.tools.staging import ImportResult, import_staging  # noqa: E402

RECORDER = Path(__file__).resolve().parent / "_recorder.py"


def run_recorder(python: Path, staging: Path, cases: list[str], platform: str,
                 date: str | None) -> None:
  cmd = [str(python), str(RECORDER), "--out", str(staging), "--platform", platform]
  for c in cases:
    cmd += ["--case", c]
  if date:
    cmd += ["--date", date]
  proc = subprocess.run(cmd, env=release_env(), capture_output=True, text=True)
  if proc.returncode != 0:
    raise RuntimeError(f"the recorder failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                       f"{proc.stderr[-4000:]}")


def record(version: str, store_root: Path, *, cases: list[str] = (), platform: str = "cpu",
           venvs: Path | None = None, date: str | None = None,
           keep_staging: Path | None = None) -> ImportResult:
  """Record ``cases`` (all by default) with jax ``version`` into ``store_root``."""
  from jaxport.golden._store import GoldenStore
  python = _venvs.ensure_venv(version, venvs)
  with tempfile.TemporaryDirectory(prefix=f"jaxport-staging-{version}-") as tmp:
    staging = Path(keep_staging) if keep_staging else Path(tmp) / "staging"
    run_recorder(python, staging, list(cases), platform, date)
    return import_staging(staging, GoldenStore(store_root))


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description="Record golden entries with an older jax release.")
  parser.add_argument("--jax", required=True, help="the producer jax release, e.g. 0.9.2")
  parser.add_argument("--case", action="append", default=[], help="only this case id (repeatable)")
  parser.add_argument("--platform", default="cpu", choices=["cpu"],
                      help="release venvs hold the CPU jaxlib only")
  parser.add_argument("--store", default=str(_venvs.REPO_ROOT / "compat_data"))
  parser.add_argument("--venvs", default=None, help="folder of release venvs (.jax-venvs)")
  parser.add_argument("--date", default=None, help="record date, default today")
  parser.add_argument("--keep-staging", default=None, help="write the staging folder here")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  result = record(args.jax, Path(args.store), cases=args.case, platform=args.platform,
                  venvs=args.venvs, date=args.date, keep_staging=args.keep_staging)
  for e in result.written:
    print(f"wrote   {e.entry_id}")
  for eid in result.existing:
    print(f"exists  {eid}")
  for case_id, why in sorted(result.skipped.items()):
    print(f"skipped {case_id}: {why}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
