"""A case's `min_consumer`: the harness fails an entry whose computed range leaves that release out."""

from __future__ import annotations

import dataclasses
import datetime
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.golden import EntryId
from jaxport.harness import Case# noqa: E402
from jaxport.harness._judge._status import Policy, status_of  # noqa: E402
from jaxport.harness._protocol._answers import ReplayAnswer  # noqa: E402
from jaxport.harness._controller._session import HarnessSession  # noqa: E402
from jaxport.harness._controller._settings import Options, Settings  # noqa: E402
from jaxport.releases import runs_on  # noqa: E402
from jaxport.releases._features import features_of_blob  # noqa: E402
from jaxport.report import FindingKind, Status  # noqa: E402
from _harness_paths import repo_project  # noqa: E402

GOLDEN = ROOT / "compat_data"
ENTRY = "cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"


def _session(root: Path, min_consumer: str | None, monkeypatch,
             project_root: Path | None = None) -> HarnessSession:
  shutil.copytree(GOLDEN / ENTRY, root / ENTRY)
  project = repo_project(root)
  if project_root is not None:
    project = dataclasses.replace(project, root=project_root)
  hs = HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date(2026, 11, 29)),
      golden_root=root, partial=False), project)
  listed = hs.case_facts

  def case_facts():
    facts = listed()
    return dataclasses.replace(facts, cases=tuple(
        dataclasses.replace(c, min_consumer=min_consumer) for c in facts.cases))

  monkeypatch.setattr(hs, "case_facts", case_facts)
  return hs


def _range():
  from jaxport.golden import GoldenStore
  entry = GoldenStore(GOLDEN).entry(EntryId.parse(ENTRY))
  return runs_on(features_of_blob(entry.blob(), entry.manifest)).releases["cpu"]


def test_a_min_consumer_older_than_the_range_fails_naming_the_release_and_the_factor(
    tmp_path, monkeypatch):
  oldest = "0.4.26"
  assert oldest not in _range()
  outcome = _session(tmp_path, oldest, monkeypatch).replay(EntryId.parse(ENTRY))
  assert outcome.status == Status.FAIL
  found = [f for f in outcome.findings if f.kind == FindingKind.BELOW_MIN_CONSUMER]
  assert len(found) == 1, outcome.messages
  assert "does not run on jax 0.4.26 (cpu): envelope layout" in found[0].message
  assert "refused" in found[0].message


def test_a_min_consumer_within_the_range_adds_no_finding(tmp_path, monkeypatch):
  got = _range()
  inside = got[0]
  assert {"0.10.2"} <= set(got)
  outcome = _session(tmp_path, inside, monkeypatch).replay(EntryId.parse(ENTRY))
  assert FindingKind.BELOW_MIN_CONSUMER not in outcome.kinds, outcome.messages
  assert outcome.status == Status.PASS, outcome.messages


def test_a_case_refuses_a_min_consumer_that_is_not_a_release():
  with pytest.raises(ValueError, match="min_consumer='latest' is not a jax release"):
    Case(case_id="c", family="f", fun=lambda x: x, make_inputs=lambda: ((), {}),
         min_consumer="latest")


def test_a_recording_keeps_its_case_min_consumer_in_the_manifest():
  import numpy as np
  from jaxport.harness._worker import _recording
  case = Case(case_id="double", family="f", fun=lambda x: 2 * x,
              make_inputs=lambda: ((np.ones((2,), np.float32),), {}), min_consumer="0.9.2")
  rec = _recording.record_case(case, datetime.date(2026, 11, 29))
  assert rec.manifest.min_consumer == "0.9.2"
  again = type(rec.manifest).from_json(rec.manifest.to_json(), "manifest.json")
  assert again.min_consumer == "0.9.2"
  plain = _recording.record_case(dataclasses.replace(case, min_consumer=None),
                              datetime.date(2026, 11, 29))
  assert plain.manifest.min_consumer is None


def _features_replaced(hs: HarnessSession, monkeypatch, **changes) -> None:
  """Have the session's real worker answers carry other ``features``/``features_error``."""
  workers = hs.pool.worker

  class _Changed:
    def __init__(self, client):
      self.client = client

    def __getattr__(self, name):
      return getattr(self.client, name)

    def request(self, request):
      reply = self.client.request(request)
      if isinstance(reply.answer, ReplayAnswer):
        reply = reply._replace(answer=dataclasses.replace(reply.answer, **changes))
      return reply

  monkeypatch.setattr(hs.pool, "worker", lambda num_devices=1: _Changed(workers(num_devices)))


def _replayed_with(tmp_path, monkeypatch, min_consumer, **changes):
  """The entry's outcome in a session asked for a report, its worker's answers changed."""
  hs = _session(tmp_path, min_consumer, monkeypatch)
  hs.options = dataclasses.replace(
      hs.options, settings=dataclasses.replace(hs.options.settings, report=tmp_path / "report.json"))
  _features_replaced(hs, monkeypatch, **changes)
  try:
    return hs.replay(EntryId.parse(ENTRY))
  finally:
    hs.close()


def test_features_that_cannot_be_read_fail_an_entry_with_a_min_consumer_naming_the_error(
    tmp_path, monkeypatch):
  outcome = _replayed_with(tmp_path, monkeypatch, _range()[0], features=None,
                           features_error="module bytes: truncated")
  # The case's promise cannot be checked: a failure, not a warning.
  assert outcome.status == Status.FAIL, outcome.messages
  assert not outcome.has(FindingKind.MIN_CONSUMER_UNKNOWN)
  (found,) = outcome.of_kind(FindingKind.BELOW_MIN_CONSUMER)
  assert "cannot be read from its blob (module bytes: truncated)" in found.message


def test_features_that_cannot_be_read_for_the_report_only_are_a_skip_naming_why(
    tmp_path, monkeypatch):
  outcome = _replayed_with(tmp_path, monkeypatch, None, features=None,
                           features_error="module bytes: truncated")
  assert outcome.status == Status.PASS, outcome.messages
  assert ("the releases the entry runs on are not computed: module bytes: truncated"
          in outcome.skips), outcome.skips


@pytest.mark.parametrize("min_consumer", [None, "0.10.2"], ids=["for the report", "min_consumer"])
def test_features_asked_for_and_left_out_of_the_answer_fail_the_entry(tmp_path, monkeypatch,
                                                                      min_consumer):
  outcome = _replayed_with(tmp_path, monkeypatch, min_consumer, features=None,
                           features_error=None)
  assert outcome.status == Status.FAIL, outcome.messages
  wanted = "report" if min_consumer is None else "min_consumer"
  assert any(f"the blob's features were asked for ({wanted}) and are missing" in m
             for m in outcome.messages), outcome.messages


def test_a_case_written_for_its_min_consumer_runs_on_it():
  import numpy as np
  from jaxport.harness._worker import _recording
  oldest = "0.9.2"
  case = Case(case_id="double", family="f", fun=lambda x: 2 * x,
              make_inputs=lambda: ((np.ones((2,), np.float32),), {}), min_consumer=oldest,
              for_jax=oldest)
  rec = _recording.record_case(case, datetime.date(2026, 11, 29))
  assert runs_on(features_of_blob(rec.blob, rec.manifest)).covers("cpu", oldest)
  with pytest.raises(ValueError, match="for_jax='next' is not a jax release"):
    dataclasses.replace(case, for_jax="next")


def test_the_below_min_consumer_hint_names_the_case_option(tmp_path, monkeypatch):
  outcome = _session(tmp_path, "0.4.26", monkeypatch).replay(EntryId.parse(ENTRY))
  (found,) = outcome.of_kind(FindingKind.BELOW_MIN_CONSUMER)
  assert "Case(..., for_jax='0.4.26')" in found.message


def _measured(project_root: Path, release: str, runs: bool) -> Path:
  import json
  from jaxport.multirelease._measured import write_measured
  from jaxport.releases import MeasuredRun, MeasuredRuns
  sha = json.loads((GOLDEN / ENTRY / "manifest.json").read_text())["files"]["exported.bin"]
  run = MeasuredRun(release, runs, "ran" if runs else "run: refused by the test",
                    datetime.date(2026, 11, 29), sha, "0.1.0")
  return write_measured(project_root, MeasuredRuns().with_runs(EntryId.parse(ENTRY), [run]))


def test_a_measured_run_takes_precedence_over_the_predicted_refusal(tmp_path, monkeypatch):
  from jaxport.harness._judge._consumers import measured_releases
  table = measured_releases()
  oldest = table[table.index(_range()[0]) - 1]  # the release just below the predicted range
  assert oldest not in _range()
  _measured(tmp_path / "project", oldest, runs=True)
  outcome = _session(tmp_path / "store", oldest, monkeypatch, tmp_path / "project").replay(EntryId.parse(ENTRY))
  assert FindingKind.BELOW_MIN_CONSUMER not in outcome.kinds, outcome.messages
  assert oldest in outcome.runs_on["cpu"]


def test_a_measured_failure_takes_precedence_over_the_predicted_run(tmp_path, monkeypatch):
  assert "0.10.2" in _range()
  _measured(tmp_path / "project", "0.10.2", runs=False)
  outcome = _session(tmp_path / "store", "0.10.2", monkeypatch, tmp_path / "project").replay(EntryId.parse(ENTRY))
  assert outcome.status == Status.FAIL
  (found,) = [f for f in outcome.findings if f.kind == FindingKind.BELOW_MIN_CONSUMER]
  assert "does not run on jax 0.10.2 (cpu): measured: run: refused by the test" in found.message
  assert "measured, taking precedence over the table: 0.10.2 does not run" in found.message
