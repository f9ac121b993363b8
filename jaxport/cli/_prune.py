"""``jaxport prune``: the entries its options select, and with ``--yes`` their removal, one
at a time, saying how far it got.

:meth:`GoldenStore.prune` picks the entries (as a dry run); this module removes
them, one by one (:meth:`GoldenStore.remove_entry`), so that a failure or an
interrupt can name the entry not removed and the ones removed before it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from jaxport.cli import _project_args
from jaxport.cli._project_args import DEFAULT_ROOT, EXIT_INTERRUPTED, EXIT_OK
from jaxport.errors import GoldenDataError, JaxportError
from jaxport.golden._entry import Entry
from jaxport.golden._store import GoldenStore


class Interrupted(JaxportError):
  """An interrupt (SIGINT) stopped the removal: what was removed and what was not."""

  def __init__(self, removed: Sequence[Entry], remaining: Sequence[Entry]):
    super().__init__(removed, remaining)
    self.removed = tuple(removed)
    self.remaining = tuple(remaining)

  def message(self) -> str:
    done = ", ".join(str(e.entry_id) for e in self.removed) or "none"
    left = ", ".join(str(e.entry_id) for e in self.remaining)
    return (f"interrupted; removed {len(self.removed)} of "
            f"{len(self.removed) + len(self.remaining)} entries ({done})"
            + (f"; not removed: {left}. Run 'jaxport prune --yes' again to remove them."
               if self.remaining else "."))


def remove_entries(store: GoldenStore, entries: Sequence[Entry]) -> list[Entry]:
  """Remove ``entries`` in order; all of them, or a named error / :class:`Interrupted`."""
  removed: list[Entry] = []
  for i, e in enumerate(entries):
    try:
      store.remove_entry(e)
    except KeyboardInterrupt:
      gone = not os.path.lexists(e.path)
      raise Interrupted(tuple(removed) + ((e,) if gone else ()),
                        tuple(entries[i + 1 if gone else i:])) from None
    except OSError as err:
      if not os.path.lexists(e.path):
        removed.append(e)
        continue
      before = ", ".join(str(x.entry_id) for x in removed) or "none"
      later = len(entries) - i - 1
      raise GoldenDataError(
          f"{e.entry_id}: cannot remove it from the golden store {store.root} "
          f"({err.strerror or err}); removed before it: {before}; not attempted: {later} more "
          f"entr{'y' if later == 1 else 'ies'}. Make the store writable and run "
          "'jaxport prune --yes' again.") from None
    removed.append(e)
  return removed


def run(args: argparse.Namespace, extra: list[str]) -> int:
  """``jaxport prune``: list the entries its options select, and remove them with ``--yes``."""
  today = args.today or datetime.date.today()
  project = _project_args.read_project(args)
  if args.root is None and project is not None:
    root = str(_project_args.store_of(project, "--root"))
  else:
    root = args.root or DEFAULT_ROOT
  if not Path(root).is_dir():
    raise GoldenDataError(f"--root {root}: no golden store there (not a directory). Run from "
                          "the repository root, pass --root PATH/TO/compat_data, or pass "
                          "--project DIR for the project's jaxport_store.")
  store = GoldenStore(root)
  expired = store.prune(args.older_than_days, today=today, dry_run=True,
                        dated_in_future=args.dated_in_future, superseded=args.superseded,
                        cases=args.case)
  if args.yes:
    try:
      expired = remove_entries(store, expired)
    except Interrupted as stop:
      sys.stderr.write(f"jaxport prune: {stop.message()}\n")
      return EXIT_INTERRUPTED
  future = [] if args.dated_in_future else store.dated_after(today)
  if args.json:
    _project_args.print_json({"removed" if args.yes else "would_remove": [str(e.entry_id) for e in expired],
                 "dry_run": not args.yes, "today": today.isoformat(),
                 "older_than_days": args.older_than_days, "cases": args.case,
                 "dated_in_future": [str(e.entry_id) for e in future]})
  else:
    verb = "removed" if args.yes else "would remove"
    for e in expired:
      sys.stdout.write(f"{verb} {e.entry_id}\n")
    sys.stdout.write(f"{len(expired)} entr{'y' if len(expired) == 1 else 'ies'} "
                     + _pruned_because(args, today)
                     + ("" if args.yes or not expired else "; pass --yes to remove them") + ".\n")
    if future:
      sys.stdout.write(f"{len(future)} entr{'y is' if len(future) == 1 else 'ies are'} dated after "
                       f"{today} ({', '.join(str(e.entry_id) for e in future)}); a record date in the "
                       "future is wrong; pass --dated-in-future to remove them.\n")
  return EXIT_OK


def _pruned_because(args, today: datetime.date) -> str:
  """Which entries prune selected, in words: ``older than 180 days as of 2026-12-03 or
  superseded, of case mlp``."""
  rules = []
  if args.older_than_days is not None:
    rules.append(f"older than {args.older_than_days} days as of {today}")
  if args.superseded:
    rules.append("superseded")
  if args.dated_in_future:
    rules.append(f"dated after {today}")
  of = f"of case {', '.join(args.case)}" if args.case else ""
  return " or ".join(rules) + (", " if rules and of else "") + of
