"""The requests the session sends its worker, as typed records.

A request says everything its answer must contain: which readers replay the entry, whether
today's lowering is compared, whether the blob's features are wanted and for what. The
judge (``jaxport.harness._judge``) holds the answer to that list, so an answer that leaves
out a part it was asked for fails the entry instead of passing by omission.

On the wire a request is one JSON object with its ``op`` and the ``request_id`` the client
gave it when sending (:func:`dump_request`); the worker reads it back strictly
(:func:`load_request`) and echoes the id, and the entry id where the request names one, in
its answer, so that the client pairs each answer with its own request. Nothing here imports
jax.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.errors import WorkerAnswerError
from jaxport.golden._entry_id import EntryId, require_entry_id


_record = json_record(Strict.raising(WorkerAnswerError))


class _OfNoEntry:
  """A request that names no entry (its answer echoes none)."""

  @property
  def entry_id(self) -> None:
    return None


class FeaturesWanted(enum.StrEnum):
  """Why a replay asks for the features its blob needs of a consumer (``jaxport.releases``)."""
  REPORT = "report"              # the report's runs_on column only: a failure to read them is a skip
  MIN_CONSUMER = "min_consumer"  # the case's min_consumer is checked: a failure to read them fails


@_record
@dataclasses.dataclass(frozen=True)
class ReplayRequest:
  """Replay one entry of the store at ``root`` with each of ``readers``; ``current``: compare
  today's lowering of its case; ``run``: run it (False for an accelerator's entry in a CPU
  run, checked as lowering-only entries are); ``features``: why its blob's features are
  wanted, None when they are not."""
  op: ClassVar[str] = "replay"
  root: str
  entry_id: EntryId
  readers: tuple[str, ...]
  current: bool = True
  run: bool = True
  features: FeaturesWanted | None = None

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "ReplayRequest")


@_record
@dataclasses.dataclass(frozen=True)
class RecordRequest(_OfNoEntry):
  """Record case ``case_id`` as of ``today`` (ISO date) into the staging store at ``staging``,
  and compare the recording with the day's newest entry of the case in the golden store at
  ``store`` (none where empty)."""
  op: ClassVar[str] = "record"
  case_id: str
  today: str
  staging: str
  store: str = ""


@_record
@dataclasses.dataclass(frozen=True)
class ArtifactsRequest:
  """Write the failure artifacts of entry ``entry_id`` of the store at ``root`` into a folder of
  ``dir``; ``run``: whether the obtained outputs can be computed here."""
  op: ClassVar[str] = "artifacts"
  root: str
  entry_id: EntryId
  dir: str
  run: bool = True

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "ArtifactsRequest")


@_record
@dataclasses.dataclass(frozen=True)
class CasesRequest(_OfNoEntry):
  """List the facts of the project's cases (``ProjectCases``)."""
  op: ClassVar[str] = "cases"


@_record
@dataclasses.dataclass(frozen=True)
class DevicesRequest(_OfNoEntry):
  """Say which platform the worker's jax backend is and how many devices it has
  (``DevicesAnswer``): the pytest process asks instead of opening the device itself."""
  op: ClassVar[str] = "devices"


Request = ReplayRequest | RecordRequest | ArtifactsRequest | CasesRequest | DevicesRequest
_OPS: dict[str, type] = {c.op: c for c in (ReplayRequest, RecordRequest, ArtifactsRequest,
                                          CasesRequest, DevicesRequest)}
_ENVELOPE = ("op", "request_id")


def dump_request(request: Request, request_id: int) -> dict[str, Any]:
  """The JSON object a request crosses to the worker as, with the id the client gave it."""
  return {"op": request.op, "request_id": request_id, **request.to_json()}


def request_id_of(d: Any) -> int | None:
  """The request id of a request object, or None where it has none that reads (the worker's
  answer to such a request then carries no id, and the client refuses it)."""
  if isinstance(d, Mapping):
    rid = d.get("request_id")
    if isinstance(rid, int) and not isinstance(rid, bool):
      return rid
  return None


def load_request(d: Any) -> tuple[int, Request]:
  """The id and the typed request of an object :func:`dump_request` wrote;
  :class:`WorkerAnswerError` naming the key for anything else (an unknown op included)."""
  if not isinstance(d, Mapping):
    raise WorkerAnswerError(f"request: expected an object, got {type(d).__name__}")
  rid = request_id_of(d)
  if rid is None:
    raise WorkerAnswerError(f"request: expected an integer request_id, got "
                            f"{d.get('request_id')!r}")
  op = d.get("op")
  cls = _OPS.get(op) if isinstance(op, str) else None
  if cls is None:
    raise WorkerAnswerError(f"unknown request op {op!r} (expected one of {', '.join(_OPS)})")
  body = {k: v for k, v in d.items() if k not in _ENVELOPE}
  return rid, cls.from_json(body, f"request {rid} ({op})")
