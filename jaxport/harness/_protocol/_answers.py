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


def _stage(value: str, where: str) -> str:
  """``value`` if it is a stage of ``_stage_marks``' vocabulary."""
  if not is_stage(value):
    raise _S.fail(where, f"expected a stage (case_code, today, reader:NAME), got {value!r}")
  return value


# --- records --------------------------------------------------------------------------------

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

  def to_json(self) -> dict[str, Any]:
    return {"ok": self.ok, "exact": self.exact, "max_abs_err": self.max_abs_err,
            "problems": list(self.problems), "checker_error": self.checker_error}

  @classmethod
  def from_json(cls, d: Any, where: str) -> Numerics:
    d = _S.record(cls, d, where)
    return cls(_S.of(d["ok"], bool, f"{where}.ok"), _S.of(d["exact"], bool, f"{where}.exact"),
               float(_S.of(d["max_abs_err"], (int, float), f"{where}.max_abs_err")),
               _S.strs(d["problems"], f"{where}.problems"),
               _S.of(d["checker_error"], str, f"{where}.checker_error", nullable=True))


@dataclasses.dataclass(frozen=True)
class EnvelopeRead:
  """An envelope the installed jax refused as expired, read after its rewrite."""
  layout: str
  from_version: int
  to_version: int
  reason: str
  producer: str | None
  error_before: str

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, d: Any, where: str) -> EnvelopeRead:
    d = _S.record(cls, d, where)
    return cls(_S.of(d["layout"], str, f"{where}.layout"),
               _S.of(d["from_version"], int, f"{where}.from_version"),
               _S.of(d["to_version"], int, f"{where}.to_version"),
               _S.of(d["reason"], str, f"{where}.reason"),
               _S.of(d["producer"], str, f"{where}.producer", nullable=True),
               _S.of(d["error_before"], str, f"{where}.error_before"))


@dataclasses.dataclass(frozen=True)
class UpgradedRun:
  """A record that failed to run and was rewritten by ``jaxport.upgrade``."""
  rules: tuple[str, ...]
  error_before: str
  rewrites: tuple[Mapping[str, Any], ...]

  def to_json(self) -> dict[str, Any]:
    return {"rules": list(self.rules), "error_before": self.error_before,
            "rewrites": [dict(r) for r in self.rewrites]}

  @classmethod
  def from_json(cls, d: Any, where: str) -> UpgradedRun:
    d = _S.record(cls, d, where)
    rewrites = _S.of(d["rewrites"], list, f"{where}.rewrites")
    return cls(_S.strs(d["rules"], f"{where}.rules"), _S.of(d["error_before"], str,
                                                            f"{where}.error_before"),
               tuple(_S.of(r, dict, f"{where}.rewrites[{i}]") for i, r in enumerate(rewrites)))


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

  def to_json(self) -> dict[str, Any]:
    return {"reader": self.reader, "stage": str(self.stage), "error": self.error,
            "problems": list(self.problems),
            "numerics": None if self.numerics is None else self.numerics.to_json(),
            "upgrade_refused": self.upgrade_refused,
            "envelope": None if self.envelope is None else self.envelope.to_json(),
            "upgraded": None if self.upgraded is None else self.upgraded.to_json(),
            "platforms": None if self.platforms is None else list(self.platforms),
            "allowed_targets": (None if self.allowed_targets is None
                                else list(self.allowed_targets))}

  @classmethod
  def from_json(cls, d: Any, where: str) -> ReaderResult:
    d = _S.record(cls, d, where)
    return cls(
        reader=_S.of(d["reader"], str, f"{where}.reader"),
        stage=_S.enum(Stage, d["stage"], f"{where}.stage"),
        error=_S.of(d["error"], str, f"{where}.error", nullable=True),
        problems=_S.strs(d["problems"], f"{where}.problems"),
        numerics=None if d["numerics"] is None else Numerics.from_json(d["numerics"], f"{where}.numerics"),
        upgrade_refused=_S.of(d["upgrade_refused"], str, f"{where}.upgrade_refused", nullable=True),
        envelope=None if d["envelope"] is None else EnvelopeRead.from_json(d["envelope"], f"{where}.envelope"),
        upgraded=None if d["upgraded"] is None else UpgradedRun.from_json(d["upgraded"], f"{where}.upgraded"),
        platforms=_S.strs(d["platforms"], f"{where}.platforms", nullable=True),
        allowed_targets=_S.strs(d["allowed_targets"], f"{where}.allowed_targets", nullable=True))


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

  def to_json(self) -> dict[str, Any]:
    return {"available": self.available, "reason": self.reason, "error": self.error,
            "recorded_check": (None if self.recorded_check is None
                               else self.recorded_check.to_json()),
            "targets": list(self.targets), "matched_case": self.matched_case,
            "signature_diff": list(self.signature_diff), "same_module": self.same_module,
            "numerics": None if self.numerics is None else self.numerics.to_json(),
            "contract_diff": list(self.contract_diff),
            "contract_by_jax": list(self.contract_by_jax),
            "platforms_added": list(self.platforms_added),
            "donation_removed": list(self.donation_removed)}

  @classmethod
  def from_json(cls, d: Any, where: str) -> TodayResult:
    d = _S.record(cls, d, where)
    return cls(
        available=_S.of(d["available"], bool, f"{where}.available"),
        reason=_S.of(d["reason"], str, f"{where}.reason", nullable=True),
        error=_S.of(d["error"], str, f"{where}.error", nullable=True),
        targets=_S.strs(d["targets"], f"{where}.targets"),
        matched_case=_S.of(d["matched_case"], str, f"{where}.matched_case", nullable=True),
        signature_diff=_S.strs(d["signature_diff"], f"{where}.signature_diff"),
        same_module=_S.of(d["same_module"], bool, f"{where}.same_module"),
        numerics=None if d["numerics"] is None else Numerics.from_json(d["numerics"], f"{where}.numerics"),
        contract_diff=_S.strs(d["contract_diff"], f"{where}.contract_diff"),
        contract_by_jax=_S.strs(d["contract_by_jax"], f"{where}.contract_by_jax"),
        platforms_added=_S.strs(d["platforms_added"], f"{where}.platforms_added"),
        recorded_check=None if d["recorded_check"] is None else Numerics.from_json(
            d["recorded_check"], f"{where}.recorded_check"),
        donation_removed=_S.strs(d["donation_removed"], f"{where}.donation_removed"))


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

  def to_json(self) -> dict[str, Any]:
    return {"readers": [r.to_json() for r in self.readers], "from_cache": self.from_cache,
            "config_changes": list(self.config_changes),
            "golden_problems": list(self.golden_problems),
            "comparison_note": self.comparison_note,
            "today": None if self.today is None else self.today.to_json(),
            "host": None if self.host is None else dict(self.host), "seconds": self.seconds,
            "timings": dict(self.timings),
            "features": None if self.features is None else dict(self.features),
            "features_error": self.features_error}

  @classmethod
  def from_json(cls, d: Any, where: str) -> ReplayAnswer:
    d = _S.record(cls, d, where)
    readers = _S.of(d["readers"], list, f"{where}.readers")
    timings = _S.of(d["timings"], dict, f"{where}.timings")
    return cls(
        readers=tuple(ReaderResult.from_json(r, f"{where}.readers[{i}]")
                      for i, r in enumerate(readers)),
        today=None if d["today"] is None else TodayResult.from_json(d["today"], f"{where}.today"),
        host=_S.of(d["host"], dict, f"{where}.host", nullable=True),
        seconds=float(_S.of(d["seconds"], (int, float), f"{where}.seconds")),
        timings={_S.of(k, str, f"{where}.timings"): float(_S.of(v, (int, float),
                                                                f"{where}.timings.{k}"))
                 for k, v in timings.items()},
        from_cache=_S.of(d["from_cache"], int, f"{where}.from_cache"),
        features=_S.of(d["features"], dict, f"{where}.features", nullable=True),
        features_error=_S.of(d["features_error"], str, f"{where}.features_error", nullable=True),
        config_changes=_S.strs(d["config_changes"], f"{where}.config_changes"),
        golden_problems=_S.strs(d["golden_problems"], f"{where}.golden_problems"),
        comparison_note=_S.of(d["comparison_note"], str, f"{where}.comparison_note",
                              nullable=True))


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

  def to_json(self) -> dict[str, Any]:
    return {"entry_id": str(self.entry_id), "nonfinite": list(self.nonfinite),
            "config_changes": list(self.config_changes),
            "compared_with": None if self.compared_with is None else str(self.compared_with),
            "differing": list(self.differing), "gradients": self.gradients}

  @classmethod
  def from_json(cls, d: Any, where: str) -> RecordAnswer:
    d = _S.record(cls, d, where)
    return cls(read_entry_id(_S, d["entry_id"], f"{where}.entry_id"),
               _S.strs(d["nonfinite"], f"{where}.nonfinite"),
               _S.strs(d["config_changes"], f"{where}.config_changes"),
               read_entry_id(_S, d["compared_with"], f"{where}.compared_with", nullable=True),
               _S.strs(d["differing"], f"{where}.differing"),
               _S.of(d["gradients"], str, f"{where}.gradients"))


@dataclasses.dataclass(frozen=True)
class DevicesAnswer:
  """The worker's jax backend: the harness's name of its platform, its devices' kind and
  count; or, where the backend did not open (a TPU chip another process holds), ``error``
  saying why and who holds it, with the other fields empty."""
  platform: str
  device_kind: str
  count: int
  error: str = ""

  def to_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, d: Any, where: str) -> DevicesAnswer:
    d = _S.record(cls, d, where)
    return cls(_S.of(d["platform"], str, f"{where}.platform"),
               _S.of(d["device_kind"], str, f"{where}.device_kind"),
               _S.count(d["count"], f"{where}.count"),
               _S.of(d["error"], str, f"{where}.error"))


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
  stages: tuple[str, ...] = ()
  exited_in: str | None = None

  def to_json(self) -> dict[str, Any]:
    return {"kind": str(self.kind), "why": self.why, "returncode": self.returncode,
            "stderr_tail": self.stderr_tail, "traceback": self.traceback,
            "stages": list(self.stages), "exited_in": self.exited_in}

  @classmethod
  def from_json(cls, d: Any, where: str) -> WorkerFailure:
    d = _S.record(cls, d, where)
    return cls(_S.enum(FailureKind, d["kind"], f"{where}.kind"), _S.of(d["why"], str,
                                                                       f"{where}.why"),
               _S.of(d["returncode"], int, f"{where}.returncode", nullable=True),
               _S.of(d["stderr_tail"], str, f"{where}.stderr_tail"),
               _S.of(d["traceback"], str, f"{where}.traceback"),
               tuple(_stage(s, f"{where}.stages[{i}]")
                     for i, s in enumerate(_S.strs(d["stages"], f"{where}.stages"))),
               None if d["exited_in"] is None else _stage(
                   _S.of(d["exited_in"], str, f"{where}.exited_in"), f"{where}.exited_in"))


@dataclasses.dataclass(frozen=True)
class ArtifactsAnswer:
  """The failure artifacts the worker wrote for one entry (``--compat-artifacts``): the folder,
  the files in it, and what could not be written, with why."""
  folder: str
  files: tuple[str, ...]
  problems: tuple[str, ...] = ()

  def to_json(self) -> dict[str, Any]:
    return {"folder": self.folder, "files": list(self.files), "problems": list(self.problems)}

  @classmethod
  def from_json(cls, d: Any, where: str) -> ArtifactsAnswer:
    d = _S.record(cls, d, where)
    return cls(_S.of(d["folder"], str, f"{where}.folder"), _S.strs(d["files"], f"{where}.files"),
               _S.strs(d["problems"], f"{where}.problems"))


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

  def to_json(self) -> dict[str, Any]:
    return {"case_id": self.case_id, "host_platform": self.host_platform,
            "export_platforms": list(self.export_platforms), "lowering_only": self.lowering_only,
            "min_consumer": self.min_consumer, "lowering_twin": self.lowering_twin}

  @classmethod
  def from_json(cls, d: Any, where: str) -> CaseFacts:
    d = _S.record(cls, d, where)
    return cls(_S.of(d["case_id"], str, f"{where}.case_id"),
               _S.of(d["host_platform"], str, f"{where}.host_platform"),
               _S.strs(d["export_platforms"], f"{where}.export_platforms"),
               _S.of(d["lowering_only"], bool, f"{where}.lowering_only"),
               _S.of(d["min_consumer"], str, f"{where}.min_consumer", nullable=True),
               _S.of(d["lowering_twin"], str, f"{where}.lowering_twin", nullable=True))


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

  def to_json(self) -> dict[str, Any]:
    return {"cases": [c.to_json() for c in self.cases], "unreachable": dict(self.unreachable)}

  @classmethod
  def from_json(cls, d: Any, where: str) -> ProjectCases:
    d = _S.record(cls, d, where)
    cases = _S.of(d["cases"], list, f"{where}.cases")
    return cls(tuple(CaseFacts.from_json(c, f"{where}.cases[{i}]") for i, c in enumerate(cases)),
               dict(_S.str_map(d["unreachable"], f"{where}.unreachable")))


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
