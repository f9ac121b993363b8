"""``jaxport bisect ENTRY --releases A..B``: the first jax release that breaks a golden entry.

Each probe replays the entry with one release's own ``jax.export`` in that release's
environment, built on demand in the machine's cache (:mod:`jaxport.multirelease`); it works
in any project, and on a store or a blob given by path.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from jaxport.cli import _harness_run
from jaxport.errors import JaxportError
from jaxport.multirelease._bisect import entry_from_blob, releases_in, run_bisect

logger = logging.getLogger(__name__)


def add_parser(add) -> None:
  p = add("bisect", help="find the first jax release that no longer loads, runs or matches an entry",
          description="Replay one golden entry under the jax releases of a range, by bisection, "
                      "each in its own environment, built when missing (docs/multi-release.md).")
  p.add_argument("entry", metavar="ENTRY", nargs="?", default=None,
                 help="entry id or entry directory (or --blob with --inputs and --expected)")
  p.add_argument("--blob", default=None, help="a serialized Exported instead of an entry")
  p.add_argument("--inputs", default=None, help="with --blob: npz of the inputs (arr_0, ...)")
  p.add_argument("--expected", default=None, help="with --blob: npz of the expected outputs")
  p.add_argument("--rtol", type=float, default=1e-5, help="with --blob: allclose rtol (default 1e-5)")
  p.add_argument("--atol", type=float, default=1e-5, help="with --blob: allclose atol (default 1e-5)")
  p.add_argument("--releases", required=True, metavar="FIRST..LAST", help="e.g. 0.11.0..0.12.0.1")
  p.add_argument("--available-only", action="store_true",
                 help="only releases whose environment is already built (and this jax)")
  p.add_argument("--root", default=None,
                 help="golden store (default: the --project's jaxport_store)")
  p.add_argument("--envs", default=None, metavar="DIR",
                 help="folder of release environments (default: $JAXPORT_RELEASE_ENVS, else "
                      "the machine's cache, ~/.cache/jaxport/release-envs)")
  p.add_argument("--json", action="store_true", help="print JSON")
  p.add_argument("--project", default=None, metavar="DIR",
                 help="the project whose jaxport_store holds ENTRY (default: the working "
                      "directory)")


def _store(args) -> Path:
  if args.root is not None:
    return Path(args.root).resolve()
  return _harness_run.read_project(args.project or ".", "bisect ENTRY").store


def run(args, effects: Mapping[str, str] | None = None) -> int:
  """Bisect the entry or blob ``args`` name; ``effects`` as for the release replayer."""
  if (args.entry is None) == (args.blob is None):
    raise JaxportError("bisect: name either an ENTRY or --blob (with --inputs and --expected)")
  if args.blob is not None and (args.inputs is None or args.expected is None):
    raise JaxportError("bisect: --blob needs --inputs and --expected")
  envs = Path(args.envs).resolve() if args.envs else None
  versions = releases_in(args.releases)
  with tempfile.TemporaryDirectory(prefix="jaxport-bisect-store-") as tmp:
    if args.blob is not None:
      store = Path(tmp)
      entry_id = entry_from_blob(Path(args.blob), Path(args.inputs), Path(args.expected), store,
                                 rtol=args.rtol, atol=args.atol)
    elif (Path(args.entry) / "manifest.json").is_file():
      entry = Path(args.entry).resolve()
      entry_id, store = "/".join(entry.parts[-4:]), entry.parents[3]
    else:
      entry_id, store = args.entry.strip("/"), _store(args)
    result = run_bisect(entry_id, versions, store=store, available_only=args.available_only,
                        venvs=envs, effects=effects)
  sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n" if args.json else result.text())
  return 0
