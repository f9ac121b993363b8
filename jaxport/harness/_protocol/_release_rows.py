"""The release replayer's result of one entry (``jaxport_in_release/replayer.py``), typed.

The replayer runs in another release's environment and writes one JSON line per entry:
how far the entry got, what went wrong there, whether its outputs were compared and
matched. Results only; the judge (``jaxport.harness._judge._release_runs``) makes its status.
Reading fails closed: a line that does not read is kept as the replayer's own error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

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
R = TypeVar("R")


def stage_of(stages: tuple[str, ...]):
  """The reader of a row's ``stage``: one of ``stages``, else the reader's refusal."""
  def read(s: Strict, value: Any, where: str) -> str:
    stage = s.of(value, str, where)
    if stage not in stages:
      raise s.fail(where, f"expected one of {list(stages)}, got {stage!r}")
    return stage
  return read


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
  stage: str = key(read=stage_of(STAGES))
  error: str | None = key(default=None, optional=True)
  not_replayable: str | None = key(default=None, optional=True)
  not_compared: str | None = key(default=None, optional=True)
  matched: bool | None = key(default=None, optional=True)
  problems: str | None = key(default=None, optional=True)


def read_script_row(cls: type[R], strict: Strict, error: type[Exception], row: Any,
                    what: str) -> R:
  """The row of ``cls`` a script running in another release wrote (``what`` names its
  lines); one that does not read is a ``harness`` row naming why. A line naming no entry id is
  refused (``error``): no entry is known to fail."""
  entry_id = read_entry_id(strict, row.get("entry_id") if isinstance(row, Mapping) else None,
                           f"{what}.entry_id")
  try:
    return cls.from_json(row, what)
  except error as e:
    return cls(entry_id, HARNESS, f"the {what} does not read: {e}")


def read_row(row: Any) -> ReleaseRow:
  """The release replayer's row of one line (:func:`read_script_row`)."""
  return read_script_row(ReleaseRow, _S, ReleaseRowError, row, "release replayer row")
