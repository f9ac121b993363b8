"""The release replayer's result of one entry (``jaxport_in_release/replayer.py``), typed.

The replayer runs in another release's environment and writes one JSON line per entry:
how far the entry got, what went wrong there, whether its outputs were compared and
matched. Results only; the judge (``jaxport.harness._judge._release_runs``) makes its status.
Reading fails closed: a line that does not read is kept as the replayer's own error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId, read_entry_id

# The stages of a row that are the replaying process's own, not the entry's replay: its files
# did not verify, the replayer raised, the process died on the entry.
VERIFY, HARNESS, PROCESS = "verify", "harness", "process"
STAGES = (VERIFY, "deserialize", "devices", "run", "compare", HARNESS, PROCESS)


class ReleaseRowError(JaxportError, ValueError):
  """A release replayer's line that does not read as a row of this module."""


_S = Strict.raising(ReleaseRowError)


def _stage(s: Strict, value: Any, where: str) -> str:
  stage = s.of(value, str, where)
  if stage not in STAGES:
    raise s.fail(where, f"expected one of {list(STAGES)}, got {stage!r}")
  return stage


# A row's keys beside the entry id and stage are optional, and keys a newer replayer writes are
# ignored: the replayer of another jaxport release may write fewer or more.
@json_record(_S, unknown_keys=True)
@dataclasses.dataclass(frozen=True)
class ReleaseRow:
  """One entry's replay by a release's own ``jax.export``.

  ``stage``: how far it got; ``error``: what went wrong there (None: nothing);
  ``not_replayable``: why the replayer cannot replay it in that release (a multi-device
  entry, a project's pytree type); ``not_compared``: why its outputs were run and not
  compared (the project's own checker); ``matched`` and ``problems``: the comparison's
  result (None: nothing compared)."""
  entry_id: EntryId
  stage: str = key(read=_stage)
  error: str | None = key(default=None, optional=True)
  not_replayable: str | None = key(default=None, optional=True)
  not_compared: str | None = key(default=None, optional=True)
  matched: bool | None = key(default=None, optional=True)
  problems: str | None = key(default=None, optional=True)


def read_row(row: Any) -> ReleaseRow:
  """The row of a replayer's line; one that does not read is a ``harness`` row naming why.
  A line naming no entry id is refused (``ReleaseRowError``): no entry is known to fail."""
  entry_id = read_entry_id(_S, row.get("entry_id") if isinstance(row, Mapping) else None,
                           "release replayer row.entry_id")
  try:
    return ReleaseRow.from_json(row, "release replayer row")
  except ReleaseRowError as e:
    return ReleaseRow(entry_id, HARNESS, f"the release replayer's row does not read: {e}")
