"""The typed loader of the harness's JSON report: exact round trips, and errors that name the key."""

import copy
import json
import os
import sys
from pathlib import Path

import pytest

import _report_helpers as helpers
from jaxport.errors import ReportError
from jaxport.report import RunReport, Status, Subject, load_report, merge_reports, write_report
from jaxport.report._entries import about_current_lowering
from jaxport.report import _views


def _write(tmp_path, data, name="run.json"):
  path = tmp_path / name
  path.write_text(json.dumps(data))
  return path


def test_loading_and_writing_gives_back_the_same_json(tmp_path):
  data = helpers.run_report()
  data["entries"][0]["future_field"] = {"kept": True}
  data["future_top_level"] = "kept"
  data["shard"] = {"index": 1, "count": 2}
  report = load_report(_write(tmp_path, data))
  assert report.to_json() == data and str(report.shard) == "1/2"
  write_report(report, tmp_path / "again.json")
  assert json.loads((tmp_path / "again.json").read_text()) == data
  umask = os.umask(0)
  os.umask(umask)
  assert (tmp_path / "again.json").stat().st_mode & 0o777 == 0o666 & ~umask
  assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_entries_are_typed():
  report = RunReport.from_json(helpers.run_report())
  by_case = {e.case_id: e for e in report.entries}
  assert {e.status for e in report.entries} == set(Status)
  lu = by_case["release_lu_f32"]
  assert lu.status is Status.XFAIL and lu.producer == "0.4.30" and lu.platform == "cpu"
  assert lu.release.window.inside_window is False
  finding, = by_case["svd_f32"].findings
  assert finding.kind == "lowering_drift" and finding.subject is Subject.TODAY
  assert about_current_lowering(finding) and finding.reader is None
  qr, = by_case["qr_f32"].findings
  assert qr.subject is Subject.READER and qr.reader == "jax" and not about_current_lowering(qr)
  assert report.summary.counts[Status.FAIL] == 1 and not report.ok


@pytest.mark.parametrize("change, where, what", [
    (lambda d: d["entries"][2].update(status="broken"), "entries[2].status", "expected one of pass"),
    (lambda d: d["entries"][0].pop("targets"), "entries[0]", "missing targets"),
    (lambda d: d["summary"].update(fail=True), "summary.fail", "expected int"),
    (lambda d: d.update(today="yesterday"), "today", "expected a date"),
    (lambda d: d["entries"][1]["release"]["window"].update(age_days="old"),
     "entries[1].release.window.age_days", "expected int"),
    (lambda d: d.update(mode="nightly"), "mode", "expected one of replay, record, update"),
])
def test_malformed_reports_name_the_file_and_the_key(tmp_path, change, where, what):
  data = helpers.run_report()
  change(data)
  path = _write(tmp_path, data)
  with pytest.raises(ReportError) as e:
    load_report(path)
  assert f"{path}: {where}" in str(e.value) and what in str(e.value)


def _updated(**changes):
  u = {"case_id": "svd_f32", "since": "cpu/svd/svd_f32/2026-10-01_jax-0.10.2",
       "entry_id": "cpu/svd/svd_f32/2026-10-01.2_jax-0.10.2", "action": "written", "message": "",
       "targets_added": ["lapack_sgesdd_ffi"], "targets_removed": [],
       "signature_changes": ["target lapack_sgesdd_ffi is new"], "numerics": []}
  u.update(changes)
  return u


def test_an_update_run_report_types_its_updated_cases_and_round_trips(tmp_path):
  data = helpers.run_report()
  data["mode"] = "update"
  data["updated"] = [_updated(), _updated(case_id="new_f32", since=None, action="error",
                                          entry_id=None, message="recording failed")]
  data["entries"].append(helpers._entry("svd", "svd_f32", "0.10.2", "pass", ["lapack_sgesdd_ffi"],
                                        entry_id="cpu/svd/svd_f32/2026-10-01.2_jax-0.10.2",
                                        release=None))
  report = load_report(_write(tmp_path, data))
  assert report.mode == "update" and report.to_json() == data
  first, second = report.updated
  assert first.targets_added == ("lapack_sgesdd_ffi",) and first.since.producer == "0.10.2"
  assert second.since is None and second.entry_id is None and second.action == "error"
  revised = next(e for e in report.entries if e.entry_id.folder == "2026-10-01.2_jax-0.10.2")
  assert revised.producer == "0.10.2" and revised.platform == "cpu"
  # A replay run's report has no such section, and gets none written back.
  plain = load_report(_write(tmp_path, helpers.run_report(), "plain.json"))
  assert plain.updated is None and "updated" not in plain.to_json()
  data["updated"][0]["targets_added"] = "lapack_sgesdd_ffi"
  with pytest.raises(ReportError, match=r"updated\[0\].targets_added"):
    load_report(_write(tmp_path, data, "bad.json"))


def test_unreadable_reports_say_why(tmp_path):
  with pytest.raises(ReportError, match="no such report.*--compat-report"):
    load_report(tmp_path / "missing.json")
  (tmp_path / "cut.json").write_text('{"format": 1, "entries": [')
  with pytest.raises(ReportError, match="invalid JSON at line 1"):
    load_report(tmp_path / "cut.json")
  (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
  with pytest.raises(ReportError, match="JSON nested 100000 levels deep, more than the limit "
                                        "jaxport._limits.MAX_JSON_NESTING"):
    load_report(tmp_path / "deep.json")
  with pytest.raises(ReportError, match="report format 7, but this jaxport reads format 3"):
    load_report(_write(tmp_path, {**helpers.run_report(), "format": 7}))


@pytest.mark.parametrize("older", [1, 2])
def test_an_older_format_report_is_refused_as_written_by_an_older_jaxport(tmp_path, older):
  with pytest.raises(ReportError, match=f"format {older}, written by an older jaxport.*Replay again"):
    load_report(_write(tmp_path, {**helpers.run_report(), "format": older}))


def test_a_release_record_that_restates_its_verdict_is_refused_naming_the_key(tmp_path):
  data = helpers.run_report()
  (entry,) = [e for e in data["entries"] if e.get("release")][:1]
  entry["release"]["policy_ok"] = True
  with pytest.raises(ReportError, match="policy_ok"):
    load_report(_write(tmp_path, data))


def test_a_finding_with_an_unknown_subject_names_where_it_is(tmp_path):
  data = helpers.run_report()
  data["entries"][3]["findings"][0]["subject"] = "the moon"
  with pytest.raises(ReportError,
                     match=r"entries\[3\]\.findings\[0\]\.subject: expected one of .*'the moon'"):
    load_report(_write(tmp_path, data))


def _shards(data, first_cases):
  a, b = copy.deepcopy(data), copy.deepcopy(data)
  a["entries"] = [e for e in data["entries"] if e["case_id"] in first_cases]
  b["entries"] = [e for e in data["entries"] if e["case_id"] not in first_cases]
  for shard in (a, b):
    ids = {e["entry_id"] for e in shard["entries"]}
    shard["skips"] = [s for s in data["skips"] if s["what"] in ids]
    shard["drift"] = [d for d in data["drift"] if d["entry_id"] in ids]
  return RunReport.from_json(a, "a.json"), RunReport.from_json(b, "b.json")


def test_merge_of_shards_recomputes_counts_and_coverage():
  data = helpers.run_report()
  a, b = _shards(data, {"qr_f32", "cholesky_f32"})
  merged = merge_reports([b, a])
  assert merged.to_json() == data
  assert merged.source == "b.json + a.json"


def test_merge_refuses_overlapping_or_foreign_shards():
  data = helpers.run_report()
  a, b = _shards(data, {"qr_f32"})
  with pytest.raises(ReportError, match="is in both a.json and a.json"):
    merge_reports([a, a])
  other_day = RunReport.from_json({**copy.deepcopy(data), "today": "2026-11-23"}, "c.json")
  with pytest.raises(ReportError, match=r"a.json and c.json are not shards of one run: their today"):
    merge_reports([a, other_day])
  with pytest.raises(ReportError, match="nothing to merge"):
    merge_reports([])


def test_matrix_has_every_entry_and_marks_uncovered_required_targets():
  report = RunReport.from_json(helpers.run_report())
  m = _views.build_matrix(report)
  assert m.producers == ("0.4.30", "0.9.2", "0.10.2")
  rows = {r.target: r for g in m.groups for r in g.rows}
  assert {e.entry_id for r in rows.values() for c in r.cells for e in c.entries} == {
      e.entry_id for e in report.entries}
  assert [c.status for c in rows["lapack_strsm_ffi"].cells] == [_views.CellStatus.NOT_COVERED] * 3
  assert rows["lapack_sgeqrf_ffi"].cells[2].status is _views.CellStatus.FAIL
  assert rows[_views.NO_CUSTOM_CALL].cells[2].lead.case_id == "threefry_key"
  assert [g.platform for g in m.groups] == ["cpu", _views.UNLISTED_GROUP]


def test_history_finds_the_first_run_where_a_target_changed():
  runs = [RunReport.from_json(d, f"run{i}.json") for i, d in enumerate(helpers.history())]
  ordered = _views.order_runs(runs[-1], [runs[2], runs[0], runs[1]])
  h = _views.build_history(ordered)
  changed = {r.target: helpers.RUN_DATES[r.first_change] for r in h.changed}
  assert changed == {"lapack_sgeqrf_ffi": "2026-11-15", "lapack_sorgqr_ffi": "2026-11-15",
                     "lapack_sgesdd_ffi": "2026-11-22"}
  with pytest.raises(ReportError, match="dated 2026-11-22, after the current run"):
    _views.order_runs(runs[0], [runs[3]])


def test_harness_summary_derives_the_warning_from_the_counts_not_the_report():
  root = str(Path(__file__).resolve().parents[2])
  if root not in sys.path:
    sys.path.insert(0, root)
  from jaxport.harness._controller import _reporter as reporter
  data = helpers.run_report()
  assert data["session_warnings"] == [] and data["summary"]["warn"] == 1
  assert ("session warning: 1 entries have drift or staleness findings; they fail with --compat-strict"
          in reporter.text_lines(RunReport.from_json(data)))


def test_harness_summary_under_strict_does_not_say_warnings_would_fail_with_strict():
  from jaxport.harness._controller import _reporter as reporter
  data = helpers.run_report()
  data["strict"] = True
  text = "\n".join(reporter.text_lines(RunReport.from_json(data)))
  assert "fail with --compat-strict" not in text
  assert "1 entries have findings that stay warnings under --compat-strict" in text
