"""A nightly's report: what its jax build is beside the release table, and, with the earlier
nights' reports, the first build that showed each failure."""

import datetime

import pytest

import _report_helpers as helpers
from jaxport.releases import build_of, releases
from jaxport.report import RunReport, render_html, render_markdown
from jaxport.report import _views

NIGHTLIES = ("0.12.1.dev20261031", "0.12.1.dev20261107", "0.12.1.dev20261114",
             "0.12.1.dev20261121")


def _nights() -> list[RunReport]:
  runs = []
  for i, data in enumerate(helpers.history()):
    data["versions"] = dict(data["versions"], jax=NIGHTLIES[i], jaxlib=NIGHTLIES[i])
    runs.append(RunReport.from_json(data, f"history/night-{i}.json"))
  return runs


def test_a_nightly_build_is_newer_than_the_table_and_unmeasured():
  newest = releases()[-1].version
  build = build_of("0.12.1.dev20261202")
  assert build.nightly and build.built == datetime.date(2026, 12, 2)
  assert not build.measured and build.newer_than_table and build.runs_on == "unmeasured"
  assert f"newer than the newest measured release {newest}" in build.describe()
  measured = build_of(newest)
  assert measured.measured and not measured.nightly and measured.runs_on == "measured"
  assert not measured.newer_than_table
  # A release past the table is unmeasured too; a bad date or version is named.
  assert build_of("99.0.0").newer_than_table and build_of("99.0.0").runs_on == "unmeasured"
  with pytest.raises(ValueError, match="dev20261399"):
    build_of("0.12.1.dev20261399")
  with pytest.raises(ValueError, match="nightly"):
    build_of("nightly")


def test_each_failure_names_the_first_nightly_that_showed_it():
  runs = _nights()
  onsets = {o.entry_id: o for o in _views.failure_onsets(runs)}
  failing_now = {e.entry_id for e in runs[-1].entries if e.status.value == "fail"}
  assert set(onsets) == failing_now and failing_now
  qr = next(i for i in onsets if i.case_id == "qr_f32")
  # QR passed the first two nights and fails from the third on.
  assert onsets[qr].first_jax == NIGHTLIES[2] and not onsets[qr].new
  md = render_markdown(runs[-1], runs[:-1])
  assert f"`{qr}`: failing in every run since; first shown by jax {NIGHTLIES[2]}" in md
  assert f"jax {NIGHTLIES[3]}: a nightly build of 2026-11-21, newer than the newest measured" in md
  assert "runs_on: unmeasured" in md
  assert f"jax {NIGHTLIES[3]}: a nightly build of 2026-11-21" in render_html(runs[-1])


def test_a_failure_the_previous_night_did_not_show_is_new_in_this_run():
  runs = _nights()
  last = runs[-1].to_json()
  before = runs[-2].to_json()
  for e in before["entries"]:
    if e["status"] == "fail":
      e.update(status="pass", kinds=[], messages=[], findings=[])
  md = render_markdown(RunReport.from_json(last, "tonight.json"),
                       [RunReport.from_json(before, "last-night.json")])
  assert f"new in this run; first shown by jax {NIGHTLIES[3]}" in md
  assert "failing in every run since" not in md
