"""A checker that raises is the case's error (``checker_error``): judged in the worker as one
line naming the checker and the exception, weighed by the judge apart from breaks, carried on
the wire and between processes, and the reason ``--compat-update`` records a case anew when
the case's checker today accepts the entry's own recorded outputs."""

import datetime
import json

import numpy as np
import pytest

import _judging as judging
from jaxport.errors import WorkerAnswerError
from jaxport.golden import EntryId
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.harness import checkers
from jaxport.harness._controller import _update
from jaxport.harness._judge._status import Policy, status_of
from jaxport.harness._protocol._answers import (Numerics, ReaderResult, ReplayAnswer, Stage,
                                                TodayResult)
from jaxport.harness._protocol._requests import ReplayRequest
from jaxport.harness._worker import _judging
from jaxport.report import FindingKind as K, Status
from jaxport.report._entries import EntryResult
from jaxport._vocabulary import Subject

TODAY = datetime.date(2026, 6, 1)
ENTRY = EntryId.parse(f"cpu/mine/eigh_of_data/2026-05-01_jax-{judging.CONSUMER}")
RAISED = "checker 'eigh' raised ValueError: operands could not be broadcast together"


def _manifest() -> Manifest:
  v = judging.CONSUMER
  return Manifest(case_id="eigh_of_data", family="mine", platform="cpu",
                  record_date=datetime.date(2026, 5, 1),
                  producer=Producer(jax=v, jaxlib=v, jaxport="0", numpy="2", scipy=None,
                                    python=None),
                  calling_convention_version=10, serialization_version=6,
                  custom_call_targets=(), polymorphic_shapes=None, constraints=None,
                  lowering_only=False, comparison=Comparison("eigh", 1e-5, 1e-5))


def _reader(name: str, numerics: Numerics) -> ReaderResult:
  return ReaderResult(name, Stage.COMPARE, numerics=numerics, platforms=("cpu",),
                      allowed_targets=())


def _outcome(readers, today_numerics=None, recorded_check=None, same_module=True):
  answer = ReplayAnswer(
      readers=tuple(_reader(n, x) for n, x in readers),
      today=TodayResult(True, same_module=same_module, numerics=today_numerics,
                        recorded_check=recorded_check),
      host=None, seconds=0.0, timings={})
  request = ReplayRequest("compat_data", ENTRY, tuple(n for n, _ in readers), current=True)
  return judging.findings(answer, request, entry_id=ENTRY, manifest=_manifest(), today=TODAY,
                          window_days=180)


RAISING = Numerics.raised(RAISED, exact=True)
GOOD = Numerics(True, True, 0.0)


def test_a_checker_that_raised_is_one_checker_error_of_the_case_never_a_break():
  out = _outcome([("jaxport", RAISING), ("jax", RAISING)], today_numerics=RAISING,
                 same_module=False)
  assert out.kinds == (K.CHECKER_ERROR,)
  (finding,) = out.findings
  assert finding.subject is Subject.CHECKER and finding.reader is None
  assert finding.detail == RAISED
  assert finding.text.startswith(f"[checker_error] {RAISED} judging the jaxport reader's and "
                                 "the jax reader's and today's lowering's outputs")
  assert "\n" not in finding.text and "compatibility_break" not in finding.text
  assert judging.status(out) is Status.FAIL
  assert out.checker_fixed is None  # the worker did not say what today's checker makes of it


def test_a_sharding_problem_beside_a_checker_error_is_still_a_break():
  readers = (ReaderResult("jaxport", Stage.COMPARE, numerics=RAISING, platforms=("cpu",),
                          allowed_targets=(), problems=("output 0 sharding: x became y",)),)
  answer = ReplayAnswer(readers=readers, today=TodayResult(True, same_module=True), host=None,
                        seconds=0.0, timings={})
  out = judging.findings(answer, ReplayRequest("compat_data", ENTRY, ("jaxport",), current=True),
                         entry_id=ENTRY, manifest=_manifest(), today=TODAY, window_days=180)
  assert out.kinds == (K.CHECKER_ERROR, K.COMPATIBILITY_BREAK)
  assert "jaxport reader: output 0 sharding: x became y" in out.messages[1]


def test_a_superseded_entrys_checker_error_warns_and_fails_when_strict():
  out = _outcome([("jaxport", RAISING)])
  assert judging.status(out, superseded=True) is Status.WARN
  assert judging.status(out, strict=True, superseded=True) is Status.FAIL


def test_the_finding_says_what_the_cases_checker_today_makes_of_the_recorded_outputs():
  fixed = _outcome([("jaxport", RAISING)], recorded_check=GOOD)
  assert fixed.checker_fixed is True
  assert "accepts the entry's recorded outputs: --compat-update records" in fixed.messages[0]
  still = _outcome([("jaxport", RAISING)], recorded_check=Numerics.raised(RAISED, True))
  assert still.checker_fixed is False
  assert "fails on the entry's own recorded outputs too" in still.messages[0]
  # Between xdist workers and their controller the outcome keeps it.
  back = EntryResult.from_part_json(json.loads(json.dumps(fixed.to_part_json())))
  assert back == fixed


def test_an_update_run_warns_of_the_checker_error_of_a_case_it_records_anew():
  fixed = _outcome([("jaxport", RAISING)], recorded_check=GOOD)
  assert status_of(fixed.kinds, Policy(updating=True, checker_fixed=True)) is Status.WARN
  assert status_of(fixed.kinds, Policy(updating=True)) is Status.FAIL


def test_update_records_a_newest_entry_whose_checker_today_accepts_its_recorded_outputs():
  fixed = _outcome([("jaxport", RAISING)], recorded_check=GOOD)
  still = _outcome([("jaxport", RAISING)], recorded_check=Numerics(False, True, 0.0, ("bad",)))
  for outcome, changed in ((fixed, True), (still, False)):
    changes = _update.changed_cases({ENTRY: outcome}, [ENTRY], ["eigh_of_data"],
                                    include_new=True)
    assert [c.case_id for c in changes] == (["eigh_of_data"] if changed else [])
  (change,) = _update.changed_cases({ENTRY: fixed}, [ENTRY], ["eigh_of_data"], True)
  assert change.numerics == (f"the entry's {RAISED}; the case's checker today accepts its "
                             "recorded outputs",)


def test_numerics_carry_a_checker_error_on_the_wire_and_refuse_one_that_also_judged():
  assert Numerics.from_json(json.loads(json.dumps(RAISING.to_json())), "n") == RAISING
  with pytest.raises(WorkerAnswerError, match="judged nothing"):
    Numerics(True, True, 0.0, (), RAISED)
  with pytest.raises(WorkerAnswerError, match="checker_error"):
    Numerics.from_json({k: v for k, v in GOOD.to_json().items() if k != "checker_error"}, "n")


def _explodes(inputs, expected, actual, *, rtol, atol):
  raise ZeroDivisionError("the case's checker divided by zero\nsecond line")


def test_the_worker_records_a_raising_checker_as_one_line_naming_it():
  registry = checkers.project_registry()
  registry.register("explodes", _explodes)
  a = np.eye(3)
  out = _judging.judge(registry, "explodes", [a], [a], [a], rtol=1e-6, atol=1e-6)
  assert out == Numerics.raised("checker 'explodes' raised ZeroDivisionError: the case's "
                                "checker divided by zero", exact=True)
  # A built-in checker misapplied (the input is data, not the matrix) is the case's too.
  data = np.ones((3, 2))
  w, v = np.linalg.eigh(data @ data.T)
  misapplied = _judging.judge(registry, "eigh", [data], [w, v], [w, v], rtol=1e-6, atol=1e-6)
  assert misapplied.checker_error.startswith("checker 'eigh' raised ValueError")
  assert not misapplied.ok and misapplied.problems == ()
