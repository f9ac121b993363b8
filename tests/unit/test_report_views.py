"""What the report pages show from the project's declarations, release dates and runs of one day."""

import copy
import datetime

import pytest

import _report_helpers as helpers
from jaxport.errors import ReportError
from jaxport.harness._judge import _expectations as expected_status
from jaxport.report import RunReport, merge_reports, render_html, render_markdown
from jaxport.report import _views

OWN = "mylib_kernel"


def _own_target_report(**top) -> dict:
  """A run whose entries include one of a target only the project declares stable."""
  entries = helpers._entries()
  entries.append(helpers._entry("mylib", "kernel_f32", "0.10.2", "pass", [OWN]))
  data = helpers.run_report(entries=entries)
  data["targets"]["required"] = sorted([*data["targets"]["required"], OWN])
  data.update(top)
  return data


def _groups(report: RunReport) -> dict[str, list[str]]:
  return {g.platform: [r.target for r in g.rows] for g in _views.build_matrix(report).groups}


def test_a_target_the_project_declares_stable_is_filed_under_its_platform():
  report = RunReport.from_json(_own_target_report(declared_targets={"cpu": [OWN]}))
  assert report.declared_targets == {"cpu": (OWN,)}
  groups = _groups(report)
  assert OWN in groups["cpu"] and OWN not in groups.get(_views.UNLISTED_GROUP, [])
  # A target off every table stays unlisted.
  assert groups[_views.UNLISTED_GROUP] == ["lapack_sgetrf"]
  page = render_html(report)
  unlisted = page.index(f">{_views.UNLISTED_GROUP}</th>")
  assert page.index(f"<code>{OWN}</code>") < unlisted
  history = _views.build_history([report])
  assert {r.target: r.platform for r in history.rows}[OWN] == "cpu"


def test_a_target_declared_for_another_platform_or_any_is_filed_there():
  data = _own_target_report(declared_targets={"cuda": [OWN]})
  data["targets"]["required"].remove(OWN)
  assert _views.target_platform(OWN, "cpu", RunReport.from_json(data)) == "cuda"
  data["declared_targets"] = {"any": [OWN]}
  assert _views.target_platform(OWN, "cpu", RunReport.from_json(data)) == "any"
  data["declared_targets"] = {}
  assert _views.target_platform(OWN, "cpu", RunReport.from_json(data)) == _views.UNLISTED_GROUP


def test_a_report_without_declarations_counts_its_required_targets_as_declared(tmp_path):
  data = _own_target_report()
  report = RunReport.from_json(data)
  assert report.declared_targets is None and report.release_windows is None
  assert report.to_json() == data
  assert OWN in _groups(report)["cpu"]


def test_declarations_and_windows_round_trip_and_are_typed():
  window = expected_status.release_windows(["0.10.2", "0.9.2", "not-a-release"],
                                           datetime.date(2026, 11, 22), consumer="0.10.2")
  assert sorted(window) == ["0.10.2", "0.9.2"]
  data = _own_target_report(declared_targets={"cpu": [OWN]}, release_windows=window)
  report = RunReport.from_json(data)
  assert report.to_json() == data
  assert report.release_windows["0.9.2"].producer_date == datetime.date(2026, 3, 18)
  bad = copy.deepcopy(data)
  bad["release_windows"]["0.9.2"]["age_days"] = "old"
  with pytest.raises(ReportError, match=r"release_windows\.0\.9\.2\.age_days: expected int"):
    RunReport.from_json(bad)
  bad = copy.deepcopy(data)
  bad["declared_targets"]["cpu"] = "mylib_kernel"
  with pytest.raises(ReportError, match=r"declared_targets\.cpu: expected list"):
    RunReport.from_json(bad)


def test_a_known_release_without_an_expectations_table_shows_its_date_and_age():
  entries = helpers._entries()
  for e in entries:
    e["release"] = None        # a project without jaxport_expectations: no release annotation
    e["expected_failure"] = None
  today = datetime.date(2026, 11, 22)
  windows = expected_status.release_windows(
      {e["entry_id"].rsplit("_jax-", 1)[1] for e in entries}, today, consumer="0.10.2")
  report = RunReport.from_json(helpers.run_report(entries=entries) | {"release_windows": windows})
  rows = {w.producer: w for w in _views.window_rows(report)}
  assert (rows["0.10.2"].producer_date, rows["0.10.2"].age_days, rows["0.10.2"].gap_days,
          rows["0.10.2"].inside_window) == ("2026-06-17", 158, 0, True)
  assert rows["0.4.30"].inside_window is False
  page = render_html(report)
  assert "<tr><td>0.10.2</td><td>2026-06-17</td><td>158</td><td>0</td><td>yes</td>" in page
  assert "| 0.10.2 | 2026-06-17 | 158 | yes |" in render_markdown(report)


def test_the_window_of_a_release_comes_from_any_of_its_entries():
  data = helpers.run_report()
  first = next(e for e in data["entries"] if e["entry_id"].endswith("_jax-0.10.2"))
  first["release"] = None
  rows = {w.producer: w for w in _views.window_rows(RunReport.from_json(data))}
  assert rows["0.10.2"].producer_date == "2026-06-17"


def test_runs_of_one_day_get_distinct_labels_in_both_pages():
  day = helpers.RUN_DATES[-1]
  runs = [RunReport.from_json(d | {"today": day}, f"history/run-{i}.json")
          for i, d in enumerate(helpers.history())]
  runs.insert(0, RunReport.from_json(helpers.run_report("2026-11-01"), "history/older.json"))
  ordered = _views.order_runs(runs[-1], runs[:-1])
  labels = _views.run_labels(ordered)
  assert labels == ("2026-11-01", f"{day} #1", f"{day} #2", f"{day} #3", f"{day} #4")
  page = render_html(runs[-1], runs[:-1])
  for label, run in zip(labels, ordered):
    assert f'<th title="{_views.source_name(run)}">{label}</th>' in page
  md = render_markdown(runs[-1], runs[:-1])
  assert f"| {day} #4 | `run-3.json` | " in md
  assert f"| `lapack_sgeqrf_ffi` | {day} #1 | " in md   # it passed that run, failed before


def test_merge_unites_the_shards_release_windows_and_refuses_other_declarations():
  today = datetime.date(2026, 11, 22)
  a, b = helpers.run_report(), helpers.run_report()
  a["entries"], b["entries"] = a["entries"][:3], b["entries"][3:]
  for shard, producers in ((a, ["0.10.2"]), (b, ["0.9.2", "0.4.30"])):
    shard["declared_targets"] = {"cpu": [OWN]}
    shard["release_windows"] = expected_status.release_windows(producers, today, "0.10.2")
  merged = merge_reports([RunReport.from_json(a, "a.json"), RunReport.from_json(b, "b.json")])
  assert sorted(merged.release_windows) == ["0.10.2", "0.4.30", "0.9.2"]
  assert merged.declared_targets == {"cpu": (OWN,)}
  b["declared_targets"] = {}
  with pytest.raises(ReportError, match="declared_targets differ"):
    merge_reports([RunReport.from_json(a, "a.json"), RunReport.from_json(b, "b.json")])


def test_merge_refuses_more_entries_than_the_store_holds_and_shards_of_two_splits():
  a, b = helpers.run_report(), helpers.run_report()
  a["entries"], b["entries"] = a["entries"][:3], b["entries"][3:]
  forged = helpers._entry("extra", "forged", "0.10.2", "pass", ["lapack_sgetrf"])
  b["entries"] = b["entries"] + [forged]
  with pytest.raises(ReportError, match=r"replay \d+ entries of a store that holds \d+"):
    merge_reports([RunReport.from_json(a, "a.json"), RunReport.from_json(b, "b.json")])
  b["entries"] = b["entries"][:-1]
  a["shard"], b["shard"] = {"index": 1, "count": 2}, {"index": 2, "count": 3}
  with pytest.raises(ReportError, match=r"splits into \[2, 3\] shards"):
    merge_reports([RunReport.from_json(a, "a.json"), RunReport.from_json(b, "b.json")])


def test_a_cell_judges_each_of_its_entries_once(monkeypatch):
  report = RunReport.from_json(helpers.run_report(entries=[
      helpers._entry("big", f"case_{i}", "0.10.2", "fail" if i == 700 else "pass", ["lapack_sgetrf"])
      for i in range(1_000)]))
  cell = next(c for g in _views.build_matrix(report).groups for r in g.rows for c in r.cells
              if c.entries)
  judged = []
  real = _views.entry_status
  monkeypatch.setattr(_views, "entry_status", lambda e: judged.append(e) or real(e))
  assert cell.lead.case_id == "case_700"
  for _ in range(3):
    assert cell.status is _views.CellStatus.FAIL and cell.lead.case_id == "case_700"
  assert len(judged) <= 2 * len(cell.entries)


def test_the_matrix_shows_each_row_s_computed_range_beside_the_measured_cells():
  entries = helpers._entries()
  for e in entries:
    if e["case_id"] == "cholesky_f32":
      newest = e["entry_id"].endswith("0.10.2")
      e["runs_on"] = {"cpu": ["0.8.3", "0.9.2", "0.10.2"] if newest else ["0.9.2", "0.10.2"]}
  report = RunReport.from_json(helpers.run_report(entries=entries), "r.json")
  got = {str(e.entry_id): e.runs_on for e in report.entries}
  assert got["cpu/lapack_potrf/cholesky_f32/2026-10-01_jax-0.10.2"] == {
      "cpu": ("0.8.3", "0.9.2", "0.10.2")}
  page = render_html(report)
  assert "runs on (computed)</th>" in page
  row = page[page.index('<code>lapack_spotrf_ffi</code>'):]
  row = row[:row.index("</tr>")]
  assert ">0.8.3 to 0.10.2 (3)</td>" in row
  assert "jax 0.9.2: 0.9.2 to 0.10.2 (2)" in row


def test_a_report_without_computed_ranges_still_loads_and_says_so():
  report = RunReport.from_json(helpers.run_report(), "r.json")
  assert all(e.runs_on is None for e in report.entries)
  assert ">not computed</td>" in render_html(report)
