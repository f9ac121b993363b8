"""``jaxport bisect ENTRY --releases A..B``: the first jax release that breaks a golden entry.

A range of one release (``A..A``) checks that release: the exit status is 1 when it fails.

Each probe replays the entry with one release's own ``jax.export`` in that release's
environment, built on demand in the machine's cache (:mod:`jaxport.multirelease`); it works
in any project, and on a store or a blob given by path. The project's effect modules
(``jaxport_effect_modules``) are imported first in each probe, when a project is read.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from pathlib import Path

from jaxport.cli import _harness_run
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._project import Project
from jaxport.multirelease._bisect import entry_from_blob, releases_in, run_bisect

logger = logging.getLogger(__name__)


def _project(args, by_id: bool) -> Project | None:
  """The project ``--project`` names, or the working directory's when the entry is an id with
  no ``--root``; None when nothing needs it (a store, entry or blob given by path)."""
  if args.project is None and (not by_id or args.root is not None):
    return None
  return _harness_run.read_project(args.project or ".", "bisect ENTRY")


def _entry_id(text: str) -> EntryId:
  """The entry id an ENTRY argument names; a JaxportError naming the forms taken otherwise."""
  try:
    return EntryId.parse(text.strip("/"))
  except ValueError as e:
    raise JaxportError(f"bisect: {e}; name an entry id of the store, or the entry's "
                       "directory") from None


def run(args, extra: list[str] | None = None) -> int:
  """Bisect the entry or blob ``args`` name."""
  if (args.entry is None) == (args.blob is None):
    raise JaxportError("bisect: name either an ENTRY or --blob (with --inputs and --expected)")
  if args.blob is not None and (args.inputs is None or args.expected is None):
    raise JaxportError("bisect: --blob needs --inputs and --expected")
  envs = Path(args.envs).resolve() if args.envs else None
  by_id = args.blob is None and not (Path(args.entry) / "manifest.json").is_file()
  project = _project(args, by_id)
  effects = project.effect_files() if project is not None else None
  versions = releases_in(args.releases)
  with tempfile.TemporaryDirectory(prefix="jaxport-bisect-store-") as tmp:
    if args.blob is not None:
      store = Path(tmp)
      entry_id = entry_from_blob(Path(args.blob), Path(args.inputs), Path(args.expected), store,
                                 rtol=args.rtol, atol=args.atol)
    elif (Path(args.entry) / "manifest.json").is_file():
      entry = Path(args.entry).resolve()
      entry_id, store = EntryId.from_folder(entry), entry.parents[3]
    else:
      entry_id = _entry_id(args.entry)
      store = Path(args.root).resolve() if args.root is not None else project.store
    result = run_bisect(entry_id, versions, store=store, available_only=args.available_only,
                        venvs=envs, effects=effects)
  label = args.blob if args.blob is not None else None
  sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n" if args.json
                   else result.text(label))
  # One release is a check: its verdict is the exit status. A bisection answers either way.
  return 1 if len(result.releases) == 1 and not result.ok else 0
