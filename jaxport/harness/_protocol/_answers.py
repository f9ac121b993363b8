"""The worker's answers as typed records, serialized once, at the process boundary.

The replay engine builds these records in the worker; the worker writes one as a JSON line
(:func:`dump_answer`); the session reads it back with :func:`load_answer`. Reading fails
closed: a missing, unknown or mistyped key raises :class:`jaxport.errors.WorkerAnswerError`,
which the session turns into a :class:`WorkerFailure` of kind ``malformed_answer``, an error
verdict. Nothing here imports jax.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from jaxport._record_codec import counted, json_record, key
from jaxport._records import Strict
from jaxport.errors import WorkerAnswerError
from jaxport.golden._entry_id import EntryId, read_entry_id, require_entry_id
from jaxport.harness._protocol._stage_marks import is_stage


class Stage(enum.StrEnum):
  """How far one reader's replay of an entry got."""
  DESERIALIZE = "deserialize"
  DESERIALIZE_REWRITTEN = "deserialize after the envelope upgrade"
  MODULE = "module"                # a lowering-only entry: its module read and judged
  RUN = "run"
  RUN_UPGRADED = "run after upgrade"
  COMPARE = "compare"              # outputs computed and compared with the recorded ones


class FailureKind(enum.StrEnum):
  """Why a request got no replay answer."""
  CRASHED = "crashed"                     # the worker died, timed out or passed its memory limit
  GOLDEN_DATA = "golden_data"             # the entry's files failed verification in the worker
  HARNESS = "harness"                     # the worker raised
  CASE_MODULES = "case_modules"           # the project's case modules failed to load
  CASE_CODE = "case_code"                 # the case's own code ended the request (SystemExit...)
  MALFORMED_ANSWER = "malformed_answer"   # the answer did not read as a record of this module


# --- strict reading -------------------------------------------------------------------------

_S = Strict.raising(WorkerAnswerError)
_record = json_record(_S)


def _stage(s: Strict, value: Any, where: str) -> str:
  """``value`` if it is a stage of ``_stage_marks``' vocabulary."""
  if not is_stage(s.of(value, str, where)):
    raise s.fail(where, f"expected a stage (case_code, today, reader:NAME), got {value!r}")
  return value


def _stages(s: Strict, value: Any, where: str) -> tuple[str, ...]:
  return tuple(_stage(s, x, f"{where}[{i}]") for i, x in enumerate(s.strs(value, where)))


# --- records --------------------------------------------------------------------------------

@_record
@dataclasses.dataclass(frozen=True)
class Numerics:
  """One comparison of computed outputs with the recorded ones (a checker's verdict), or
  ``checker_error``: the checker raised, as one line naming it and the exception (then not
  ``ok``, and no problems: nothing was judged)."""
  ok: bool
  exact: bool
  max_abs_err: float
  problems: tuple[str, ...] = ()
  checker_error: str | None = None

  def __post_init__(self) -> None:
    if self.checker_error is not None and (self.ok or self.problems):
      raise WorkerAnswerError("numerics: a checker that raised judged nothing: not ok, and "
                              "no problems")

  @classmethod
  def of(cls, verdict: Any) -> Numerics:
    """The record of a checker's verdict."""
    return cls(bool(verdict.ok), bool(verdict.exact), float(verdict.max_abs_err),
               tuple(verdict.problems))

  @classmethod
  def raised(cls, checker_error: str, exact: bool) -> Numerics:
    """The record of a checker that raised (``exact``: the outputs are bitwise equal all the
    same)."""
    return cls(False, exact, 0.0, (), checker_error)


@_record
@dataclasses.dataclass(frozen=True)
class EnvelopeRead:
  """An envelope the installed jax refused as expired, read after its rewrite."""
  layout: str
  from_version: int
  to_version: int
  reason: str
  producer: str | None
  error_before: str


@_record
@dataclasses.dataclass(frozen=True)
class UpgradedRun:
  """A record that failed to run and was rewritten by ``jaxport.upgrade``."""
  rules: tuple[str, ...]
  error_before: str
  rewrites: tuple[Mapping[str, Any], ...]


@_record
@dataclasses.dataclass(frozen=True)
class ReaderResult:
  """One reader's replay of an entry.

  ``error``: the failure at ``stage``, jax's whole error up to the bound of
  ``jaxport._limits.MAX_ERROR_LINES`` lines and ``MAX_ERROR_CHARS`` characters (None when
  it did not fail); ``numerics``: the comparison of the outputs (stage ``compare``);
  ``problems``: what the module read back or a sharding check found wrong; ``platforms``
  and ``allowed_targets``: the module as read, the platforms it was lowered for and the
  custom-call targets its ``disabled_safety_checks`` allow (``ALL``: every one; None: the
  module was not read). Results only: the judge weighs them (``jaxport.harness._judge``)."""
  reader: str
  stage: Stage
  error: str | None = None
  problems: tuple[str, ...] = ()
  numerics: Numerics | None = None
  upgrade_refused: str | None = None
  envelope: EnvelopeRead | None = None
  upgraded: UpgradedRun | None = None
  platforms: tuple[str, ...] | None = None
  allowed_targets: tuple[str, ...] | None = None


@_record
@dataclasses.dataclass(frozen=True)
class TodayResult:
  """Today's lowering of the entry's case, compared with the entry.

  Not ``available``: ``reason`` says why nothing was compared. ``error``: the case cannot
  be exported or run today. Otherwise the targets it emits, the signature differences (one
  line each), and ``numerics`` when it was run (None when its module is the entry's own up
  to source locations, ``same_module``, or it was not run). ``matched_case``: the case an
  imported dataset was compared with. ``contract_diff``: how the calling contract (input and
  output trees, types, shardings, effects) of today's export differs from the entry's, one
  line each (today's module is then not run: the entry's inputs are not its inputs);
  ``contract_by_jax``: the differences the jax release makes (the calling-convention
  version); ``platforms_added``: the platforms today's export is lowered for and the entry's
  blob is not (one line; a platform removed is a line of ``contract_diff``);
  ``donation_removed``: the inputs the entry's module donates and today's does not (one line
  each; a donation added is a line of ``contract_diff``).
  ``recorded_check``: where a comparison of the entry's replay failed with its checker's
  error, the case's checker today (with the comparison a recording of it would write)
  judging the entry's recorded outputs against themselves; None otherwise."""
  available: bool
  reason: str | None = None
  error: str | None = None
  targets: tuple[str, ...] = ()
  matched_case: str | None = None
  signature_diff: tuple[str, ...] = ()
  same_module: bool = False
  numerics: Numerics | None = None
  contract_diff: tuple[str, ...] = ()
  contract_by_jax: tuple[str, ...] = ()
  platforms_added: tuple[str, ...] = ()
  recorded_check: Numerics | None = None
  donation_removed: tuple[str, ...] = ()


@_record
@dataclasses.dataclass(frozen=True)
class ReplayAnswer:
  """The worker's replay of one entry: each reader's result, today's lowering (None when the
  request left it out), the replaying host, seconds in all and per stage, and (when asked)
  the features the blob needs of a consumer or why they could not be read."""
  readers: tuple[ReaderResult, ...]
  today: TodayResult | None
  host: Mapping[str, Any] | None
  seconds: float
  timings: Mapping[str, float]
  features: Mapping[str, Any] | None = None
  features_error: str | None = None
  # Executables jax loaded from its persistent compilation cache while answering (required
  # on the wire).
  from_cache: int = 0
  # jax settings the case's code changed while the entry was replayed, one line each (the
  # worker put them back before the next entry).
  config_changes: tuple[str, ...] = ()
  # What golden verification (``jaxport.golden._soundness``) found of the entry as read: its
  # manifest disagreeing with its module, a comparison that passes any outputs; one line each.
  golden_problems: tuple[str, ...] = ()
  # Why the outputs were judged with other tolerances than the entry records (an entry of an
  # older golden format whose case sets none: today's defaults), one line; None: as recorded.
  comparison_note: str | None = None


@_record
@dataclasses.dataclass(frozen=True)
class RecordAnswer:
  """The worker's recording of one case: the id of the entry it wrote into the staging store,
  per output holding NaN or infinities, how many of each (``output 0: 16 NaN``; empty when
  every recorded value is finite), and the jax settings the case's code changed while it was
  recorded (put back before the next request), one line each. ``compared_with``: the day's
  newest entry of the case in the golden store, which the recording was compared with (None
  where the store holds none, or refuses to list them), and ``differing`` the files in which
  the two differ (source locations left out: parsing modules needs jax, which only the worker
  imports). ``gradients``: what the record line says of gradients the case records by
  default while its newest stored entry holds none (empty otherwise: ``_gradients``)."""
  entry_id: EntryId
  nonfinite: tuple[str, ...] = ()
  config_changes: tuple[str, ...] = ()
  compared_with: EntryId | None = None
  differing: tuple[str, ...] = ()
  gradients: str = ""

  def __post_init__(self) -> None:
    require_entry_id(self.entry_id, "RecordAnswer")
    if self.compared_with is not None:
      require_entry_id(self.compared_with, "RecordAnswer.compared_with")


@_record
@dataclasses.dataclass(frozen=True)
class DevicesAnswer:
  """The worker's jax backend: the harness's name of its platform, its devices' kind and
  count; or, where the backend did not open (a TPU chip another process holds), ``error``
  saying why and who holds it, with the other fields empty."""
  platform: str
  device_kind: str
  count: int = key(read=counted)
  error: str = ""


@_record
@dataclasses.dataclass(frozen=True)
class WorkerFailure:
  """A request that got no answer of its kind: why, the worker's exit code and last stderr
  lines (a crash), or the worker's traceback (an error of the harness)."""
  kind: FailureKind
  why: str
  returncode: int | None = None
  stderr_tail: str = ""
  traceback: str = ""
  # A crash: the stages the worker was in when it died (``_stage_marks``: the case's code,
  # today's export, a reader), and the stage whose thread called ``os._exit``; empty and
  # None when it left no word.
  stages: tuple[str, ...] = key(default=(), read=_stages)
  exited_in: str | None = key(default=None, read=lambda s, v, where: None if v is None
                              else _stage(s, v, where))


@_record
@dataclasses.dataclass(frozen=True)
class ArtifactsAnswer:
  """The failure artifacts the worker wrote for one entry (``--compat-artifacts``): the folder,
  the files in it, and what could not be written, with why."""
  folder: str
  files: tuple[str, ...]
  problems: tuple[str, ...] = ()


@_record
@dataclasses.dataclass(frozen=True)
class CaseFacts:
  """What a process that routes entries needs to know of one case, without importing it (and
  jax): its id, host, export platforms, whether it is lowering-only, its ``min_consumer`` and
  its ``lowering_twin``."""
  case_id: str
  host_platform: str
  export_platforms: tuple[str, ...]
  lowering_only: bool
  min_consumer: str | None
  lowering_twin: str | None = None


@_record
@dataclasses.dataclass(frozen=True)
class ProjectCases:
  """The facts of every case of a project's case modules, and the targets the modules declare
  they cannot reach (``UNREACHABLE``): what the pytest process asks its worker for, which has
  imported the cases, instead of importing them (and jax) itself."""
  cases: tuple[CaseFacts, ...]
  unreachable: Mapping[str, str]

  def case(self, case_id: str) -> CaseFacts | None:
    """The case ``case_id``, or None if no module registers it any more."""
    return self._by_id.get(case_id)

  @functools.cached_property
  def _by_id(self) -> dict[str, CaseFacts]:
    return {c.case_id: c for c in self.cases}

  def cases_for(self, host_platform: str) -> list[CaseFacts]:
    """The cases recorded and replayed on machines of ``host_platform``, sorted by id."""
    return sorted((c for c in self.cases if c.host_platform == host_platform),
                  key=lambda c: c.case_id)


Answer = (ReplayAnswer | RecordAnswer | ArtifactsAnswer | ProjectCases | DevicesAnswer
          | WorkerFailure)
_TYPES: dict[str, type] = {"replay": ReplayAnswer, "record": RecordAnswer,
                           "artifacts": ArtifactsAnswer, "cases": ProjectCases,
                           "devices": DevicesAnswer, "failure": WorkerFailure}
_TYPE_OF = {v: k for k, v in _TYPES.items()}
_ENVELOPE = ("type", "body", "notices", "request_id", "entry_id", "output")


class WireAnswer(NamedTuple):
  """One answer as it crossed the boundary: the record, the worker's notices, the id of the
  request it answers and the entry id that request named (None for a request naming none, and
  for a request whose id did not read), and what the worker's code wrote to its stdout and
  stderr while it handled the request (its tail)."""
  answer: Answer
  notices: tuple[str, ...]
  request_id: int | None
  entry_id: EntryId | None
  output: str


def dump_answer(answer: Answer, notices: list[str], *, request_id: int | None,
                entry_id: EntryId | None = None, output: str = "") -> dict[str, Any]:
  """The JSON object one answer crosses the boundary as: the record, the worker's notices, the
  echo of the request it answers, and the output written while it was handled."""
  return {"type": _TYPE_OF[type(answer)], "body": answer.to_json(), "notices": list(notices),
          "request_id": request_id, "entry_id": None if entry_id is None else str(entry_id),
          "output": output}


def load_answer(d: Any) -> WireAnswer:
  """What :func:`dump_answer` wrote; WorkerAnswerError, naming the key, for anything else."""
  if not isinstance(d, Mapping) or set(d) != set(_ENVELOPE):
    keys = sorted(d) if isinstance(d, Mapping) else type(d).__name__
    raise WorkerAnswerError(f"worker answer: expected the keys {', '.join(sorted(_ENVELOPE))}; "
                            f"got {keys}")
  cls = _TYPES.get(d["type"]) if isinstance(d["type"], str) else None
  if cls is None:
    raise WorkerAnswerError(f"worker answer: unknown type {d['type']!r} (expected one of "
                            f"{', '.join(_TYPES)})")
  return WireAnswer(cls.from_json(d["body"], f"worker answer ({d['type']})"),
                    _S.strs(d["notices"], "notices"),
                    _S.of(d["request_id"], int, "worker answer: request_id", nullable=True),
                    read_entry_id(_S, d["entry_id"], "worker answer: entry_id", nullable=True),
                    _S.of(d["output"], str, "worker answer: output"))


def wrong_kind(expected: type, got: Answer) -> WorkerFailure:
  """The failure that stands for an answer of another kind than the request asks for."""
  return malformed(WorkerAnswerError(f"expected a {_TYPE_OF[expected]} answer, got "
                                     f"{type(got).__name__}"))


def malformed(error: WorkerAnswerError) -> WorkerFailure:
  """The failure that stands for an answer that did not read."""
  return WorkerFailure(FailureKind.MALFORMED_ANSWER,
                       f"the worker's answer does not read as an answer of its kind: {error}")
