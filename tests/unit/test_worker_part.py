"""What an xdist worker sends its controller is read strictly: an entry's run, its outcome or
the part holding them with a missing, unknown or mistyped field is refused naming it, and the
run fails instead of judging what was left."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re

import pytest

from jaxport._vocabulary import Finding, FindingKind, Status, Subject
from jaxport.errors import WorkerAnswerError
from jaxport.golden import EntryId
from jaxport.harness._controller._entry_run import EntryRun
from jaxport.harness._project import Project
from jaxport.harness._controller._session import HarnessSession, _read_worker_part
from jaxport.harness._controller._settings import Options, Settings
from jaxport.report._entries import EntryResult

ENTRY = "cpu/mine/gram/2026-11-30_jax-0.10.2"
OUTCOME = EntryResult(entry_id=EntryId.parse(ENTRY), case_id="gram", family="mine",
                  record_date=datetime.date(2026, 11, 30), days_to_expiry=150, lowering_only=False, targets=("a",), current_targets=("a",),
                  findings=(Finding(FindingKind.NUMERICS_DRIFT, Subject.READER, "drift",
                                    reader="jax"),),
                  status=Status.WARN, runs_on={"cpu": ("0.10.2",)})
RUN = EntryRun(OUTCOME, seconds=1.5, parts={"call": 1.0}, from_cache=1, reader_runs=2,
               exports_today=1, output="printed by the case\n", xfailed=None)


def _part(runs=None, **changes):
  part = {"runs": {ENTRY: (RUN if runs is None else runs).to_json()}, "recorded": {},
          "session_failures": [], "notices": []}
  part.update(changes)
  return json.dumps(part)


def _session(root) -> HarnessSession:
  return HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, today=datetime.date(2026, 12, 1)),
      golden_root=root, partial=False), Project(case_modules=("mycases",), store=root))


def test_an_outcome_and_a_part_read_back_as_written():
  assert EntryResult.from_part_json(json.loads(json.dumps(OUTCOME.to_part_json()))) == OUTCOME
  assert _read_worker_part(_part())["runs"] == {EntryId.parse(ENTRY): RUN}


@pytest.mark.parametrize("run", [
    RUN, EntryRun(OUTCOME), EntryRun(OUTCOME, xfailed="expected failure: removed target")],
    ids=["replayed", "no-answer", "xfailed"])
def test_an_entrys_run_crosses_from_an_xdist_worker_to_its_controller_whole(tmp_path, run):
  worker, controller = _session(tmp_path), _session(tmp_path)
  worker._runs[EntryId.parse(ENTRY)] = run
  controller.merge(worker.worker_output())
  assert controller._runs == {EntryId.parse(ENTRY): run}
  assert not controller._session_failures


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(EntryRun)])
def test_a_part_whose_run_misses_a_field_is_refused_naming_it(field):
  d = json.loads(_part())
  del d["runs"][ENTRY][field]
  with pytest.raises(WorkerAnswerError,
                     match=re.escape(f"part.runs.{ENTRY}: missing {field}")):
    _read_worker_part(json.dumps(d))


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


@pytest.mark.parametrize("change, named", [
    (lambda p: p.update(runs=None), "part.runs: expected Mapping"),
    (lambda p: p.pop("runs"), "part: missing runs"),
    (lambda p: p["runs"][ENTRY].update(seconds="fast"), r"part.runs.*\.seconds: expected"),
    (lambda p: p["runs"][ENTRY]["parts"].update(call=True), r"part.runs.*\.parts.call"),
    (lambda p: p["runs"][ENTRY].update(from_cache=-1), r"part.runs.*\.from_cache: expected a count"),
    (lambda p: p["runs"][ENTRY].update(output=None), r"part.runs.*\.output: expected str"),
    (lambda p: p["runs"][ENTRY].update(extra=1), r"part.runs.*: unknown key 'extra'"),
    (lambda p: p["runs"][ENTRY]["outcome"].pop("status"), r"part.runs.*\.outcome: missing status"),
    (lambda p: p.update(notices="x"), "part.notices"),
], ids=["runs", "no-runs", "seconds", "parts", "work", "output", "unknown-field", "outcome",
        "notices"])
def test_a_malformed_part_is_refused_naming_the_field(change, named):
  d = json.loads(_part())
  change(d)
  with pytest.raises(WorkerAnswerError, match=named):
    _read_worker_part(json.dumps(d))


def test_a_part_that_does_not_read_fails_the_run_and_judges_none_of_it(tmp_path):
  hs = _session(tmp_path)
  broken = json.loads(_part())
  del broken["runs"][ENTRY]["outcome"]["status"]
  hs.merge(json.dumps(broken))
  assert hs.used and hs._runs == {}
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
