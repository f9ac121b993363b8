"""The ``tf`` reader's result of one entry (``jaxport_in_release/tf_reader.py``), typed.

The reader runs in a TensorFlow release's environment and writes one JSON line per entry: how
far the entry got, TensorFlow's error text there, the artifact's calling convention, StableHLO
version and platforms, and whether its outputs matched. Results only; the judge
(``jaxport.harness._judge._tf_runs``) names why TensorFlow refused an entry and makes its
status. Reading fails closed: a line that does not read is kept as the reader's own error.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport._record_codec import json_record, key
from jaxport._records import Strict
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._protocol._release_rows import (HARNESS, PROCESS, VERIFY, read_script_row,
                                                     stage_of)

# ``precheck``: refused from the release's measured facts before TensorFlow was asked.
PRECHECK, READ, CALL, COMPARE = "precheck", "read", "call", "compare"
STAGES = (VERIFY, PRECHECK, READ, CALL, COMPARE, HARNESS, PROCESS)


class TfRowError(JaxportError, ValueError):
  """A ``tf`` reader's line that does not read as a row of this module."""


_S = Strict.raising(TfRowError)


def _count(s: Strict, value: Any, where: str) -> int | None:
  """A calling convention: a whole number from 0, or null where none was read."""
  return None if value is None else s.count(value, where)


# A row's keys beside the entry id and stage are optional, and keys a newer reader writes are
# ignored: the reader of another jaxport release may write fewer or more.
@json_record(_S, unknown_keys=True, where="tf reader row")
@dataclasses.dataclass(frozen=True)
class TfRow:
  """One entry's call by a TensorFlow release's ``XlaCallModule``.

  ``stage``: how far it got; ``error``: TensorFlow's error there (None: nothing went wrong);
  ``calling_convention``, ``stablehlo``, ``platforms``: what the envelope says (None: not
  read); ``not_replayable``: why the reader cannot call it as TF Serving would (a multi-device
  entry, a VJP); ``not_compared``: why it ran and was not compared; ``matched`` and
  ``problems``: the comparison's result (None: nothing compared); ``blob_sha256``: the sha256
  of the blob the reader called (None: it read none)."""
  entry_id: EntryId
  stage: str = key(read=stage_of(STAGES))
  error: str | None = key(default=None, optional=True)
  calling_convention: int | None = key(default=None, optional=True, read=_count)
  stablehlo: str | None = key(default=None, optional=True)
  platforms: tuple[str, ...] | None = key(default=None, optional=True)
  not_replayable: str | None = key(default=None, optional=True)
  not_compared: str | None = key(default=None, optional=True)
  matched: bool | None = key(default=None, optional=True)
  problems: str | None = key(default=None, optional=True)
  blob_sha256: str | None = key(default=None, optional=True)


def read_tf_row(row: Any) -> TfRow:
  """The tf reader's row of one line (:func:`._release_rows.read_script_row`)."""
  return read_script_row(TfRow, _S, TfRowError, row, "tf reader row")


@json_record(_S, where="tf reader's release facts")
@dataclasses.dataclass(frozen=True)
class TfAbout:
  """The TensorFlow release the reader ran in, from TensorFlow's own API: its version, the
  StableHLO version it reads, the newest calling convention it takes (None: no such API)."""
  tf: str
  stablehlo: str
  max_calling_convention: int | None = key(read=_count)
