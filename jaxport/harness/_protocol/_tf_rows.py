"""The ``tf`` reader's result of one entry (``jaxport_in_release/tf_reader.py``), typed.

The reader runs in a TensorFlow release's environment and writes one JSON line per entry: how
far the entry got, TensorFlow's error text there, the artifact's calling convention, StableHLO
version and platforms, and whether its outputs matched. Results only; the judge
(``jaxport.harness._judge._tf_runs``) names why TensorFlow refused an entry and makes its
status. Reading fails closed: a line that does not read is kept as the reader's own error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jaxport._records import Strict
from jaxport.errors import JaxportError
from jaxport.golden._entry_id import EntryId, read_entry_id
from jaxport.harness._protocol._release_rows import HARNESS, PROCESS, VERIFY

# ``precheck``: refused from the release's measured facts before TensorFlow was asked.
PRECHECK, READ, CALL, COMPARE = "precheck", "read", "call", "compare"
STAGES = (VERIFY, PRECHECK, READ, CALL, COMPARE, HARNESS, PROCESS)


class TfRowError(JaxportError, ValueError):
  """A ``tf`` reader's line that does not read as a row of this module."""


_S = Strict.raising(TfRowError)


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
  stage: str
  error: str | None = None
  calling_convention: int | None = None
  stablehlo: str | None = None
  platforms: tuple[str, ...] | None = None
  not_replayable: str | None = None
  not_compared: str | None = None
  matched: bool | None = None
  problems: str | None = None
  blob_sha256: str | None = None

  @classmethod
  def from_json(cls, row: Mapping[str, Any]) -> TfRow:
    """The row of a reader's line; one that does not read is a ``harness`` row naming why.
    A line naming no entry id is refused (``TfRowError``): no entry is known to fail."""
    entry_id = read_entry_id(_S, row.get("entry_id") if isinstance(row, Mapping) else None,
                             "tf reader row.entry_id")
    try:
      d = _S.obj(row, "tf reader row", required=("entry_id", "stage"))
      stage = _S.of(d["stage"], str, "stage")
      if stage not in STAGES:
        raise _S.fail("stage", f"expected one of {list(STAGES)}, got {stage!r}")
      cc = d.get("calling_convention")
      if cc is not None:
        cc = _S.count(cc, "calling_convention")
      return cls(entry_id, stage,
                 _S.of(d.get("error"), str, "error", nullable=True), cc,
                 _S.of(d.get("stablehlo"), str, "stablehlo", nullable=True),
                 _S.strs(d.get("platforms"), "platforms", nullable=True),
                 _S.of(d.get("not_replayable"), str, "not_replayable", nullable=True),
                 _S.of(d.get("not_compared"), str, "not_compared", nullable=True),
                 _S.of(d.get("matched"), bool, "matched", nullable=True),
                 _S.of(d.get("problems"), str, "problems", nullable=True),
                 _S.of(d.get("blob_sha256"), str, "blob_sha256", nullable=True))
    except TfRowError as e:
      return cls(entry_id, HARNESS, f"the tf reader's row does not read: {e}")


@dataclasses.dataclass(frozen=True)
class TfAbout:
  """The TensorFlow release the reader ran in, from TensorFlow's own API: its version, the
  StableHLO version it reads, the newest calling convention it takes (None: no such API)."""
  tf: str
  stablehlo: str
  max_calling_convention: int | None

  @classmethod
  def from_json(cls, value: Any) -> TfAbout:
    d = _S.obj(value, "tf reader's release facts",
               required=("tf", "stablehlo", "max_calling_convention"), optional=())
    top = d["max_calling_convention"]
    return cls(_S.of(d["tf"], str, "tf"), _S.of(d["stablehlo"], str, "stablehlo"),
               None if top is None else _S.count(top, "max_calling_convention"))
