"""The worker's typed answers: they cross the process boundary whole, and an answer with a
misspelt, missing, unknown or mistyped key is an error verdict, never a pass."""

import dataclasses
import datetime
import importlib.metadata as md
import json

import pytest

from jaxport._vocabulary import FindingKind, Status, Subject
from jaxport.golden import EntryId
from jaxport.golden._manifest import Comparison, CustomCallSignature, Manifest, Producer
import _judging as judging
from jaxport.errors import WorkerAnswerError
from jaxport.harness._protocol._answers import (ArtifactsAnswer, CaseFacts, FailureKind, Numerics,
                                                ProjectCases, ReaderResult, RecordAnswer,
                                                ReplayAnswer, Stage, TodayResult, WorkerFailure,
                                                dump_answer, load_answer)
from jaxport.harness._protocol._requests import FeaturesWanted, ReplayRequest
from jaxport.harness._controller._worker_client import Reply, read_answer

TODAY = datetime.date(2026, 6, 1)
THIS_JAX = md.version("jax")
ENTRY_ID = EntryId.parse("cpu/lapack_potrf/cholesky_f32/2026-05-01_jax-0.10.2")
SIG = CustomCallSignature("lapack_spotrf_ffi", ("tensor<4x4xf32>",),
                          ("tensor<4x4xf32>", "tensor<i32>"), {})


# What the session asks of every entry: both readers, today's lowering.
REQUEST = ReplayRequest("compat_data", ENTRY_ID, ("jaxport", "jax"))


def _manifest() -> Manifest:
  return Manifest(case_id="cholesky_f32", family="lapack_potrf", platform="cpu",
                  record_date=datetime.date(2026, 5, 1),
                  # Recorded by the jax replaying here: a lowering difference is the function's.
                  producer=Producer(jax=THIS_JAX, jaxlib=THIS_JAX, jaxport="0", numpy="2",
                                    scipy=None, python=None),
                  calling_convention_version=10, serialization_version=6,
                  custom_call_targets=(SIG,), polymorphic_shapes=None, constraints=None,
                  lowering_only=False, comparison=Comparison("allclose", 1e-5, 1e-5))


def _passing() -> ReplayAnswer:
  exact = Numerics(ok=True, exact=True, max_abs_err=0.0)
  return ReplayAnswer(
      readers=(ReaderResult("jaxport", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=exact),
               ReaderResult("jax", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=exact)),
      today=TodayResult(available=True, targets=("lapack_spotrf_ffi",), same_module=True),
      host=None, seconds=1.5, timings={"call": 0.5})


def _verdict(line: str, strict: bool = True) -> tuple[Status, tuple[str, ...]]:
  answer = read_answer(line).answer
  outcome = judging.findings(answer, REQUEST, entry_id=ENTRY_ID, manifest=_manifest(), today=TODAY,
                               window_days=180)
  return judging.status(outcome, strict=strict), outcome.messages


def _wire(answer=None) -> dict:
  return json.loads(json.dumps(dump_answer(answer or _passing(), ["a notice"], request_id=1,
                                           entry_id=ENTRY_ID, output="printed\n")))


CASES = ProjectCases(
    (CaseFacts("cholesky_f32", "cpu", ("cpu",), False, "0.4.30"),
     CaseFacts("ffi_cuda", "cpu", ("cuda",), True, None)),
    {"lapack_sgeqp3_ffi": "pivoted QR is not on jax's stable table"})


def test_answers_cross_the_boundary_whole():
  for answer in (_passing(), RecordAnswer(EntryId.parse("cpu/f/c/2026-05-01_jax-0.10.2")),
                 RecordAnswer(EntryId.parse("cpu/f/c/2026-05-01_jax-0.10.2"),
                              compared_with=EntryId.parse("cpu/f/c/2026-05-01_jax-0.10.2_2"),
                              differing=("module.mlir",)), CASES,
                 WorkerFailure(FailureKind.CRASHED, "no answer", returncode=-9, stderr_tail="x"),
                 WorkerFailure(FailureKind.CRASHED, "the worker exited", returncode=3,
                               stages=("case_code", "reader:jax"), exited_in="case_code")):
    wire = load_answer(_wire(answer))
    assert wire.answer == answer and wire.notices == ("a notice",)
    assert (wire.request_id, wire.entry_id, wire.output) == (1, ENTRY_ID, "printed\n")


def test_a_well_formed_passing_answer_passes():
  status, messages = _verdict(json.dumps(_wire()))
  assert status is Status.PASS, messages


def _mutated(change) -> str:
  wire = _wire()
  change(wire["body"])
  return json.dumps(wire)


def _rename(d: dict, old: str, new: str) -> None:
  d[new] = d.pop(old)


MUTATIONS = {
    "misspelt ok": (lambda b: _rename(b["readers"][0]["numerics"], "ok", "okk"), "okk"),
    "misspelt exact": (lambda b: _rename(b["readers"][1]["numerics"], "exact", "exactt"), "exactt"),
    "missing stage": (lambda b: b["readers"][0].pop("stage"), "stage"),
    "missing today": (lambda b: b.pop("today"), "today"),
    "missing readers": (lambda b: b.pop("readers"), "readers"),
    "unknown key": (lambda b: b.update(all_good=True), "all_good"),
    "unknown stage": (lambda b: b["readers"][0].update(stage="done"), "done"),
    "mistyped ok": (lambda b: b["readers"][0]["numerics"].update(ok="yes"), "yes"),
    "mistyped readers": (lambda b: b.update(readers={}), "readers"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_malformed_answer_is_an_error_verdict_naming_the_key(name):
  change, named = MUTATIONS[name]
  for strict in (True, False):
    status, messages = _verdict(_mutated(change), strict=strict)
    assert status is Status.FAIL, (name, messages)
  assert len(messages) == 1 and "answer" in messages[0] and named in messages[0], messages


@pytest.mark.parametrize("change, named", [
    (lambda b: b.update(stages=["typing"]), "typing"),
    (lambda b: b.update(stages=["reader:../x"]), "reader:../x"),
    (lambda b: b.update(exited_in="today's"), "exited_in"),
    (lambda b: b.update(stages="today"), "stages"),
    (lambda b: b.pop("exited_in"), "exited_in"),
])
def test_a_failure_naming_a_stage_outside_the_vocabulary_does_not_read(change, named):
  wire = _wire(WorkerFailure(FailureKind.CRASHED, "the worker exited", stages=("today",)))
  change(wire["body"])
  with pytest.raises(WorkerAnswerError, match=named.replace(".", r"\.")):
    load_answer(json.loads(json.dumps(wire)))


def test_the_listed_cases_answer_by_id_and_host_platform():
  assert [c.case_id for c in CASES.cases_for("cpu")] == ["cholesky_f32", "ffi_cuda"]
  assert CASES.cases_for("cuda") == []
  assert CASES.case("cholesky_f32").min_consumer == "0.4.30"
  assert CASES.case("gone") is None


@pytest.mark.parametrize("change, named", [
    (lambda b: b["cases"][0].pop("min_consumer"), "min_consumer"),
    (lambda b: b["cases"][1].update(lowering_only="yes"), "lowering_only"),
    (lambda b: b["cases"][0].update(export_platforms="cpu"), "export_platforms"),
    (lambda b: b.update(unreachable=[]), "unreachable"),
    (lambda b: b.update(checkers={}), "checkers"),
])
def test_a_malformed_list_of_cases_fails_naming_the_key(change, named):
  wire = _wire(CASES)
  change(wire["body"])
  with pytest.raises(WorkerAnswerError, match=named):
    load_answer(json.loads(json.dumps(wire)))


@pytest.mark.parametrize("line", ["", "not json", "[]", '{"type": "replay"}',
                                  '{"type": "verdict", "body": {}, "notices": []}',
                                  '{"type": "replay", "body": {}, "notices": [], "extra": 1}'])
def test_a_line_that_is_not_an_answer_is_an_error_verdict(line):
  status, messages = _verdict(line)
  assert status is Status.FAIL and "worker's answer" in messages[0], messages


def test_a_failure_answer_classifies_by_its_kind():
  cases = {FailureKind.CRASHED: (FindingKind.COMPATIBILITY_BREAK, Subject.WORKER),
           FailureKind.GOLDEN_DATA: (FindingKind.GOLDEN_DATA_ERROR, Subject.GOLDEN_DATA),
           FailureKind.HARNESS: (FindingKind.COMPATIBILITY_BREAK, Subject.WORKER),
           FailureKind.MALFORMED_ANSWER: (FindingKind.COMPATIBILITY_BREAK, Subject.WORKER)}
  for kind, (finding_kind, subject) in cases.items():
    outcome = judging.findings(WorkerFailure(kind, "why"), REQUEST, entry_id=ENTRY_ID,
                                 manifest=_manifest(), today=TODAY, window_days=180)
    assert [(f.kind, f.subject) for f in outcome.findings] == [(finding_kind, subject)], kind
    assert judging.status(outcome, strict=False) is Status.FAIL


def test_findings_carry_their_subject():
  answer = ReplayAnswer(
      readers=(ReaderResult("jaxport", Stage.RUN, error="RuntimeError: boom"),
               ReaderResult("jax", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=Numerics(True, True, 0.0))),
      today=TodayResult(available=True, targets=(), signature_diff=("target x: removed",)),
      host=None, seconds=0.0, timings={})
  outcome = judging.findings(answer, REQUEST, entry_id=ENTRY_ID, manifest=_manifest(),
                               today=datetime.date(2027, 1, 1), window_days=180)
  subjects = {(f.kind, f.subject) for f in outcome.findings}
  assert (FindingKind.COMPATIBILITY_BREAK, Subject.READER) in subjects
  assert (FindingKind.LOWERING_DRIFT, Subject.TODAY) in subjects
  assert (FindingKind.EXPIRED, Subject.AGE) in subjects
  drift = outcome.of_kind(FindingKind.LOWERING_DRIFT)[0]
  assert drift.detail == "target x: removed"


def _session(root):
  from jaxport.harness._project import OnChange, Project
  from jaxport.harness._controller._session import HarnessSession
  from jaxport.harness._controller._settings import Options, Settings
  return HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date(2026, 11, 29)),
      golden_root=root, partial=True),
      Project(case_modules=(), store=root, on_change=OnChange.WARN, root=root))


class _Answering:
  """A worker stand-in that answers every request with ``answer``."""

  def __init__(self, answer):
    self.answer = answer

  def send_ahead(self, request, most=1):
    return False  # taken by ``request`` only

  def holds_ahead(self, entry_id):
    return False

  def request(self, request):
    return Reply(self.answer, ())


@pytest.mark.parametrize("answer", [RecordAnswer(ENTRY_ID),
                                    ArtifactsAnswer("artifacts/x", ("outputs.npz",))],
                         ids=["record", "artifacts"])
def test_a_replay_answered_with_another_kind_of_answer_is_an_error_verdict(tmp_path, monkeypatch,
                                                                           answer):
  import shutil
  from pathlib import Path
  entry_id = "cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
  shutil.copytree(Path(__file__).resolve().parents[2] / "compat_data" / entry_id,
                  tmp_path / entry_id)
  hs = _session(tmp_path)
  monkeypatch.setattr(hs.pool, "worker", lambda num_devices=1: _Answering(answer))
  outcome = hs.replay(EntryId.parse(entry_id))
  assert outcome.status is Status.FAIL, outcome.messages
  assert [(f.kind, f.subject) for f in outcome.findings] == [(FindingKind.COMPATIBILITY_BREAK,
                                                              Subject.WORKER)]
  assert f"expected a replay answer, got {type(answer).__name__}" in outcome.messages[0]


@pytest.mark.parametrize("answer", [_passing(), ArtifactsAnswer("artifacts/x", ())],
                         ids=["replay", "artifacts"])
def test_a_recording_answered_with_another_kind_of_answer_is_an_error(tmp_path, monkeypatch,
                                                                      answer):
  hs = _session(tmp_path)
  monkeypatch.setattr(hs.pool, "worker", lambda num_devices=1: _Answering(answer))
  result = hs.record("cholesky_f32")
  assert result.action == "error" and result.entry_id is None, result
  assert f"expected a record answer, got {type(answer).__name__}" in result.message


INCOMPLETE = {
    "no reader": lambda a: dataclasses.replace(a, readers=()),
    "compare without numerics": lambda a: dataclasses.replace(
        a, readers=(ReaderResult("jaxport", Stage.COMPARE), a.readers[1])),
    "compare without target verdicts": lambda a: dataclasses.replace(
        a, readers=(ReaderResult("jaxport", Stage.COMPARE, numerics=Numerics(True, True, 0.0)),
                    a.readers[1])),
    "a failed stage without an error": lambda a: dataclasses.replace(
        a, readers=(ReaderResult("jaxport", Stage.DESERIALIZE), a.readers[1])),
    "today neither run nor the same module": lambda a: dataclasses.replace(
        a, today=TodayResult(available=True, targets=("lapack_spotrf_ffi",))),
}


@pytest.mark.parametrize("name", sorted(INCOMPLETE))
def test_a_well_formed_answer_that_leaves_out_a_judgement_fails(name):
  answer = INCOMPLETE[name](_passing())
  outcome = judging.findings(answer, REQUEST, entry_id=ENTRY_ID, manifest=_manifest(),
                               today=TODAY, window_days=180)
  assert judging.status(outcome, strict=False) is Status.FAIL, outcome.messages
  assert any(f.subject is Subject.WORKER and "incomplete" in f.message
             for f in outcome.findings), outcome.messages


def test_a_lowering_only_entry_is_complete_at_the_module_stage():
  answer = dataclasses.replace(
      _passing(), readers=(ReaderResult("jaxport", Stage.MODULE, platforms=("cpu",), allowed_targets=()),
                           ReaderResult("jax", Stage.MODULE, platforms=("cpu",), allowed_targets=())),
      today=TodayResult(available=True, targets=("lapack_spotrf_ffi",)))
  manifest = dataclasses.replace(_manifest(), lowering_only=True)
  outcome = judging.findings(answer, REQUEST, entry_id=ENTRY_ID, manifest=manifest,
                               today=TODAY, window_days=180)
  assert judging.status(outcome, strict=True) is Status.PASS, outcome.messages
