"""``jaxport bisect ENTRY --releases A..B``: the first jax release that breaks a golden entry.

The work is done by ``harness/tools/bisect_release.py`` of a jaxport source checkout
(it drives the release venvs of ``harness/tools/_venvs.py``), run from the checkout's
root like ``jaxport record --with-jax``; outside a checkout the subcommand refuses.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from jaxport.cli import _checkout

logger = logging.getLogger(__name__)
TOOL = _checkout.release_tool("bisect_release.py")


def add_parser(add) -> None:
  p = add("bisect", help="find the first jax release that no longer loads, runs or matches an entry",
          description="Replay one golden entry under the jax releases of a range, by bisection, "
                      "each in its own venv (docs/upgrade.md).")
  p.add_argument("entry", metavar="ENTRY", nargs="?", default=None,
                 help="entry id or entry directory (or --blob with --inputs and --expected)")
  p.add_argument("--blob", default=None, help="a serialized Exported instead of an entry")
  p.add_argument("--inputs", default=None, help="with --blob: npz of the inputs (arr_0, ...)")
  p.add_argument("--expected", default=None, help="with --blob: npz of the expected outputs")
  p.add_argument("--rtol", type=float, default=None, help="with --blob: allclose rtol (default 1e-5)")
  p.add_argument("--atol", type=float, default=None, help="with --blob: allclose atol (default 1e-5)")
  p.add_argument("--releases", required=True, metavar="FIRST..LAST", help="e.g. 0.5.3..0.10.2")
  p.add_argument("--available-only", action="store_true",
                 help="only releases whose venv is already built (and this jax)")
  p.add_argument("--root", default=None, help="golden store (default: the repository's compat_data)")
  p.add_argument("--json", action="store_true", help="print JSON")
  p.add_argument("--project", default=None, metavar="DIR",
                 help="the jaxport checkout whose release tools run the bisection "
                      "(default: the working directory)")


def command(args, root: Path) -> list[str]:
  cmd = [sys.executable, TOOL]
  if args.entry is not None:
    entry = Path(args.entry)
    cmd.append(str(entry.resolve()) if entry.is_dir() else args.entry)
  for flag in ("blob", "inputs", "expected"):
    if getattr(args, flag) is not None:
      cmd += [f"--{flag}", str(Path(getattr(args, flag)).resolve())]
  for flag in ("rtol", "atol"):
    if getattr(args, flag) is not None:
      cmd += [f"--{flag}", repr(getattr(args, flag))]
  cmd += ["--releases", args.releases]
  if args.root:
    cmd += ["--store", str(Path(args.root).resolve())]
  if args.available_only:
    cmd.append("--available-only")
  if args.json:
    cmd.append("--json")
  return cmd


def run(args) -> int:
  root = Path(args.project).resolve() if args.project else Path.cwd()
  _checkout.require_tool(root, Path(TOOL).name, "bisect")
  cmd = command(args, root)
  logger.info("running in %s: %s", root, " ".join(cmd))
  return subprocess.run(cmd, cwd=root, check=False).returncode
