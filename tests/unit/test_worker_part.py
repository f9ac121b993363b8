"""What an xdist worker sends its controller is read strictly: an outcome or a part with a
missing, unknown or mistyped field is refused naming it, and the run fails instead of judging
what was left."""

from __future__ import annotations

import datetime
import json

import pytest

from jaxport._vocabulary import Finding, FindingKind, Status, Subject
from jaxport.errors import WorkerAnswerError
from jaxport.golden import EntryId
from jaxport.harness._project import Project
from jaxport.harness._session import HarnessSession, Options, _read_worker_part
from jaxport.harness._settings import Settings
from jaxport.report._entries import EntryResult

ENTRY = "cpu/mine/gram/2026-11-30_jax-0.10.2"
OUTCOME = EntryResult(entry_id=EntryId.parse(ENTRY), case_id="gram", family="mine", record_date=datetime.date(2026, 11, 30),
                  days_to_expiry=150, lowering_only=False, targets=("a",), current_targets=("a",),
                  findings=(Finding(FindingKind.NUMERICS_DRIFT, Subject.READER, "drift",
                                    reader="jax"),),
                  status=Status.WARN, runs_on={"cpu": ("0.10.2",)})


def _part(**changes):
  part = {"outcomes": {ENTRY: OUTCOME.to_part_json()}, "recorded": {}, "session_failures": [],
          "seconds": {ENTRY: 1.5}, "parts": {ENTRY: {"call": 1.0}},
          "work": {ENTRY: {"from_cache": 1}}, "notices": []}
  part.update(changes)
  return json.dumps(part)


def test_an_outcome_and_a_part_read_back_as_written():
  assert EntryResult.from_part_json(json.loads(json.dumps(OUTCOME.to_part_json()))) == OUTCOME
  part = _read_worker_part(_part())
  entry_id = EntryId.parse(ENTRY)
  assert part["outcomes"] == {entry_id: OUTCOME} and part["seconds"] == {entry_id: 1.5}


@pytest.mark.parametrize("change, named", [
    (lambda o: o.pop("status"), "outcome: missing status"),
    (lambda o: o.update(status="passed"), "outcome.status: expected one of"),
    (lambda o: o.update(targets="a"), "outcome.targets: expected list"),
    (lambda o: o.update(days_to_expiry=True), "outcome.days_to_expiry: expected int or null"),
    (lambda o: o["findings"][0].update(kind="nothing"), r"outcome.findings\[0\].kind"),
    (lambda o: o["findings"][0].pop("reader"), r"outcome.findings\[0\]: missing reader"),
    (lambda o: o.update(extra=1), "outcome: unknown key 'extra'"),
], ids=["no-status", "unknown-status", "targets-text", "bool-days", "finding-kind",
        "finding-field", "unknown-field"])
def test_a_malformed_outcome_is_refused_naming_the_field(change, named):
  d = json.loads(json.dumps(OUTCOME.to_part_json()))
  change(d)
  with pytest.raises(WorkerAnswerError, match=named):
    EntryResult.from_part_json(d)


@pytest.mark.parametrize("changes, named", [
    ({"outcomes": None}, "part.outcomes: expected Mapping"),
    ({"seconds": {ENTRY: "fast"}}, "part.seconds"),
    ({"work": {ENTRY: {"from_cache": -1}}}, "part.work"),
    ({"notices": "x"}, "part.notices"),
], ids=["outcomes", "seconds", "work", "notices"])
def test_a_malformed_part_is_refused_naming_the_field(changes, named):
  with pytest.raises(WorkerAnswerError, match=named):
    _read_worker_part(_part(**changes))


def test_a_part_that_does_not_read_fails_the_run_and_judges_none_of_it(tmp_path):
  hs = HarnessSession(Options(Settings(platform="cpu", window_days=180), golden_root=tmp_path,
                              today=datetime.date(2026, 12, 1), strict=False, partial=False),
                      Project(case_modules=("mycases",), store=tmp_path))
  broken = json.loads(_part())
  del broken["outcomes"][ENTRY]["status"]
  hs.merge(json.dumps(broken))
  assert hs.used and hs._outcomes == {}
  assert any("xdist worker's results do not read" in f and "missing status" in f
             for f in hs._session_failures)


def test_the_project_crosses_into_the_worker_whole_or_not_at_all(tmp_path):
  from jaxport.errors import SettingsError
  project = Project(case_modules=("mycases",), store=tmp_path, root=tmp_path, paths=("a",))
  assert Project.from_json(json.loads(json.dumps(project.to_json()))) == project
  broken = {**project.to_json(), "require_builtin_targets": "yes"}
  with pytest.raises(SettingsError, match="project.require_builtin_targets: expected bool"):
    Project.from_json(broken)
  with pytest.raises(SettingsError, match="project: missing paths"):
    Project.from_json({k: v for k, v in project.to_json().items() if k != "paths"})
