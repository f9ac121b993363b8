"""``jaxport prune --yes``: remove golden entries one at a time, saying how far it got.

:meth:`GoldenStore.prune` picks the entries (as a dry run); this module removes
them, one by one (:meth:`GoldenStore.remove_entry`), so that a failure or an
interrupt can name the entry not removed and the ones removed before it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

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
