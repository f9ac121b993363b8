"""What a serving reader said of a run's entries: the report of ``jaxport replay --with-tf X
--compat-report TF.json``, read for the page's "served by" columns.

The tf reader's report holds, per entry of the store, its row and the judge's verdict:
``status`` (``pass``, ``fail``, or null where the reader did not call it), the refusal's
``reason`` (null unless refused) and ``detail``. Only those are read here, strictly: a report
that is not one is refused naming the key, and an entry's verdict is never guessed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from jaxport import _json
from jaxport._vocabulary import Status
from jaxport.errors import ReportError
from jaxport.golden._entry_id import EntryId, read_entry_id
from jaxport._records import Strict

_FIX = "write it again with jaxport replay --with-tf VERSION --compat-report FILE"
STRICT = Strict(lambda where, what: ReportError(f"{where}: {what}. Is this the report of a "
                                                f"tf reader's run? {_FIX[0].upper()}{_FIX[1:]}."))


@dataclasses.dataclass(frozen=True)
class Served:
  """One entry as the serving reader judged it: ``status`` None where it was not called."""
  status: str | None
  reason: str | None
  detail: str

  @property
  def text(self) -> str:
    """The verdict in a few words: served, refused for a reason, failed, or not called."""
    if self.status is None:
      return "not called"
    if self.status == Status.PASS:
      return "served"
    return f"refused ({self.reason})" if self.reason else "fails"


@dataclasses.dataclass(frozen=True)
class ServedBy:
  """A serving reader's verdicts over a store: ``reader`` names it (``TF 2.21.0``)."""
  reader: str
  entries: dict[EntryId, Served]
  source: str

  def of(self, entry_id: EntryId) -> Served | None:
    """The verdict on ``entry_id``, None where the run did not include it."""
    return self.entries.get(entry_id)


def _status(text: str) -> Status | None:
  """The status ``text`` names, None for no status at all."""
  try:
    return Status(text)
  except ValueError:
    return None


def read_served(d: Any, source: str) -> ServedBy:
  """The verdicts of a tf reader's report (decoded JSON); ``ReportError`` naming the key of
  anything else."""
  STRICT.obj(d, source, ("tf", "entries"))
  version = STRICT.of(d["tf"], str, f"{source}: tf")
  entries: dict[EntryId, Served] = {}
  for i, e in enumerate(STRICT.of(d["entries"], list, f"{source}: entries")):
    where = f"{source}: entries[{i}]"
    STRICT.obj(e, where, ("entry_id", "status", "reason", "detail"))
    entry_id = read_entry_id(STRICT, e["entry_id"], f"{where}.entry_id")
    status = STRICT.of(e["status"], str, f"{where}.status", nullable=True)
    if status is not None and _status(status) not in (Status.PASS, Status.FAIL):
      raise STRICT.fail(f"{where}.status", f"expected one of pass, fail or null, got "
                                           f"{status!r}")
    if entry_id in entries:
      raise STRICT.fail(f"{where}.entry_id", f"{entry_id} is listed twice")
    entries[entry_id] = Served(status, STRICT.of(e["reason"], str, f"{where}.reason",
                                                 nullable=True),
                               STRICT.of(e["detail"], str, f"{where}.detail"))
  return ServedBy(f"TF {version}", entries, source)


def load_served(path: str | Path) -> ServedBy:
  """The tf reader's report at ``path``; ``ReportError`` naming the file and the fix for one
  that does not read."""
  data = _json.load_file(Path(path), str(path), ReportError, _FIX)
  return read_served(data, str(path))
