"""The expected-status table, the compat window, and the data recorded by older releases."""

import datetime
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.cases import release_cases  # noqa: E402
from harness.tools import expected_status  # noqa: E402
from jaxport.golden import EntryId
from jaxport.harness._judge import _releases  # noqa: E402
from jaxport.harness._judge._expectations import Expectation, parse_table  # noqa: E402
from jaxport.harness._judge import _release  # noqa: E402
import _judging as judging  # noqa: E402
from jaxport._jaxcompat._version import installed_jax_version  # noqa: E402
from jaxport.harness._judge._release import expectation_judgement  # noqa: E402
from jaxport._vocabulary import Subject as S  # noqa: E402
from jaxport.golden._manifest import Comparison, ImportSource, Manifest, Producer  # noqa: E402
from jaxport.report._entries import EntryResult  # noqa: E402
from jaxport.report import Finding, FindingKind as K, Status, load_report  # noqa: E402
from jaxport.report._markdown import window_table  # noqa: E402
from jaxport.report._views import window_rows  # noqa: E402
import _report_helpers as report_helpers  # noqa: E402

TODAY = datetime.date(2026, 11, 29)
READER_FAILED = "jaxport reader: run failed: JaxRuntimeError: "


def _break(text: str, reader: str | None = "jaxport") -> Finding:
  """A compatibility break; a reader's failure to run unless ``reader`` is None."""
  return Finding(K.COMPATIBILITY_BREAK, S.READER if reader else S.GOLDEN_DATA,
                 (READER_FAILED if reader else "") + text, reader)


def _table(**overrides):
  data = {"format_version": 1, "releases": ["0.5.3", "0.10.0"], "expected_failures": [],
          "unrecordable": []}
  data.update(overrides)
  return data


def test_parse_version_and_unknown_release_message():
  assert _releases.parse_version("0.10.2") == (0, 10, 2)
  assert _releases.parse_version("0.9.0.1") == (0, 9, 0, 1)
  with pytest.raises(ValueError, match="MAJOR.MINOR.PATCH"):
    _releases.parse_version("0.10")
  with pytest.raises(ValueError, match="release table does not list it.*--releases 0.0.1 --date"):
    _releases.release_date("0.0.1")


def test_window_position_backward_and_forward():
  inside = _releases.window_position("0.9.2", "0.10.2", TODAY)
  assert (inside.direction, inside.gap_days, inside.inside_window) == ("backward", 91, True)
  assert inside.age_days == (TODAY - datetime.date(2026, 3, 18)).days
  outside = _releases.window_position("0.7.2", "0.10.2", TODAY)
  assert outside.gap_days > _releases.BACKWARD_WINDOW_DAYS and not outside.inside_window
  forward = _releases.window_position("0.11.0", "0.10.2", TODAY)
  assert forward.direction == "forward" and forward.gap_days == -29 and not forward.inside_window
  # The boundary itself is inside: 183 days.
  edge = _releases.window_position("0.8.2", "0.10.2", TODAY)
  assert edge.gap_days == 181 and edge.inside_window


@pytest.mark.parametrize("change, message", [
    ({"format_version": 2}, "format_version: expected 1, got 2"),
    ({"releases": []}, "non-empty list"),
    ({"releases": ["0.0.9"]}, "No release date known"),
    ({"expected_failures": [{"producer": "0.5.3", "reason": "a good long reason", "match": "("}]},
     "not a regular expression"),
    ({"expected_failures": [{"producer": "0.6.2", "reason": "a good long reason", "match": "x"}]},
     "not in releases"),
    ({"expected_failures": [{"producer": "0.5.3", "reason": "short", "match": "x"}]},
     "must say why"),
    ({"expected_failures": [{"producer": "0.5.3", "match": "x"}]},
     r"expected_failures\[0\]: missing reason"),
    ({"unrecordable": [{"producer": "0.5.3", "case": "c"}]}, r"unrecordable\[0\]: missing reason"),
    ({"unrecordable": [{"producer": "0.5.3", "case": 3, "reason": "r"}]},
     r"unrecordable\[0\].case: expected str, got 3"),
    ({"expected_failures": 7}, "expected_failures: expected list, got 7"),
])
def test_malformed_tables_are_refused_with_the_field(change, message):
  with pytest.raises(expected_status.ExpectedStatusError, match=message):
    parse_table(_table(**change), "t.json")


def test_rules_select_by_producer_and_case():
  table = parse_table(_table(expected_failures=[
      {"producer": "0.5.3", "case": "c1", "reason": "c1 breaks on 0.5.3", "match": "x"},
      {"producer": "0.10.0", "reason": "everything breaks", "match": "y"}]))
  assert table.expectation("0.5.3", "c1") == Expectation("fail", "c1 breaks on 0.5.3", "x")
  assert table.expectation("0.5.3", "c2").status == "pass"
  assert table.expectation("0.10.0", "c2").match == "y"
  assert table.expectation(None, "c1").status == "pass"


def _window(producer):
  return _releases.window_position(producer, "0.10.2", TODAY)


def test_judge_every_verdict():
  fail = Expectation("fail", "target removed long ago", "No registered implementation")
  ok = Expectation("pass")
  removed = _break("No registered implementation for custom call to lapack_spotrf for Host").text
  old, recent = _window("0.5.3"), _window("0.10.0")
  assert expectation_judgement(ok, [], recent).verdict == "pass"
  assert expectation_judgement(fail, [removed, removed], old).verdict == "expected_failure"
  assert expectation_judgement(fail, [removed, _break("Wrong number of arguments").text], old).verdict == "wrong_failure"
  assert expectation_judgement(fail, [], old).verdict == "unexpected_pass"
  assert expectation_judgement(ok, [removed], old).verdict == "unexpected_failure"
  # Inside the 6-month window a failure, or a row expecting one, breaks the policy.
  assert expectation_judgement(ok, [removed], recent).verdict == "policy_violation"
  assert expectation_judgement(fail, [removed], recent).verdict == "policy_violation"
  # Unknown release dates (a pre-release consumer) cannot be judged against the window.
  assert expectation_judgement(ok, [removed], None).verdict == "unexpected_failure"


def _outcome(*findings, **more):
  return EntryResult(EntryId.parse("cpu/f/c1/2026-01-01_jax-0.5.3"), "c1", "f", datetime.date(2026, 1, 1), 100, False, (),
                 findings=tuple(findings), **more)


def _manifest(producer, source="jax.export"):
  return Manifest(case_id="c1", family="f", platform="cpu", record_date=datetime.date(2026, 1, 1),
                  producer=Producer(jax=producer, jaxlib=producer, jaxport=None, numpy=None,
                                    scipy=None, python=None),
                  calling_convention_version=9, serialization_version=6, custom_call_targets=(),
                  polymorphic_shapes=None, constraints=None, lowering_only=False,
                  comparison=Comparison("allclose", 1e-5, 1e-5),
                  imported_from=ImportSource(source, {}))


def test_annotate_marks_expected_failures_and_keeps_window_facts():
  table = parse_table(_table(expected_failures=[
      {"producer": "0.5.3", "case": "c1", "reason": "operands changed in 0.6", "match": "Wrong number"}]))
  drift = Finding(K.LOWERING_DRIFT, S.TODAY, "current lowering: target changed signature")
  out = judging.annotate(
      _outcome(_break("Wrong number of arguments"), drift),
      _manifest("0.5.3"), today=TODAY, consumer="0.10.2", table=table)
  assert out.expected_failure == "operands changed in 0.6"
  assert out.release.verdict == "expected_failure"
  assert out.release.window.inside_window is False
  assert out.release.window.producer_date == datetime.date(2025, 3, 19)
  # Drift against today's lowering is the release difference itself for such entries.
  assert K.LOWERING_DRIFT not in out.kinds and K.PRODUCER_DRIFT in out.kinds
  assert out.of_kind(K.PRODUCER_DRIFT)[0].message == drift.message


def test_annotate_turns_a_stale_row_into_unexpected_pass_and_a_wrong_failure_into_a_break():
  table = parse_table(_table(expected_failures=[
      {"producer": "0.5.3", "case": "c1", "reason": "operands changed in 0.6", "match": "Wrong number"}]))
  passed = judging.annotate(_outcome(), _manifest("0.5.3"), today=TODAY,
                                    consumer="0.10.2", table=table)
  assert K.UNEXPECTED_PASS in passed.kinds and passed.expected_failure is None
  wrong = _outcome(_break("segfault"), expected_failure="set by another rule reader")
  wrong = judging.annotate(wrong, _manifest("0.5.3"), today=TODAY, consumer="0.10.2",
                                   table=table)
  assert wrong.expected_failure is None and wrong.release.verdict == "wrong_failure"
  assert K.COMPATIBILITY_BREAK in wrong.kinds


def test_annotate_leaves_jaxport_entries_drift_alone():
  out = judging.annotate(
      _outcome(Finding(K.LOWERING_DRIFT, S.TODAY, "x")), _manifest("0.10.2", source="x"),
      today=TODAY, consumer="0.10.2", table=parse_table(_table()))
  assert out.kinds == (K.LOWERING_DRIFT,) and out.release.verdict == "pass"


def test_window_table_of_a_report(tmp_path):
  def entry(case, producer, verdict):
    window = _releases.window_position(producer, "0.10.2", TODAY).to_dict()
    release = {"producer": producer, "consumer": "0.10.2", "expected": "pass", "reason": None,
               "window": window, "verdict": verdict}
    return report_helpers._entry("f", case, "0.10.2", "pass", [], release=release,
                                 entry_id=f"cpu/f/{case}/2026-10-01_jax-{producer}")
  entries = [entry("a", "0.5.3", "pass"), entry("b", "0.5.3", "expected_failure"),
             entry("c", "0.10.0", "policy_violation")]
  path = tmp_path / "run.json"
  path.write_text(json.dumps(report_helpers.run_report(entries=entries)))
  report = load_report(path)
  rows = window_rows(report)
  assert [r.producer for r in rows] == ["0.5.3", "0.10.0"]
  assert rows[0].verdicts == {"expected_failure": 1, "pass": 1} and rows[0].inside_window is False
  assert [r.policy_violations for r in rows] == [0, 1]
  text = window_table(report)
  assert "| 0.5.3 | 2025-03-19 | 620 | 0.10.2 | 455 | no | 2 | expected_failure 1, pass 1 | yes |" in text
  assert "| 0.10.0 | 2026-04-16 | 227 | 0.10.2 | 62 | yes | 1 | policy_violation 1 | NO |" in text
  assert expected_status.main([str(path)]) == 1  # a release's verdicts disagree with the policy


# --- the committed table and data -------------------------------------------------

def _recorded():
  """(producer, case id) of every entry recorded by an older release under compat_data/cpu."""
  found = set()
  for manifest in (ROOT / "compat_data" / "cpu").glob("*/release_*/*/manifest.json"):
    m = json.loads(manifest.read_text())
    if (m.get("imported_from") or {}).get("source") == _release.RELEASE_SOURCE:
      found.add((m["producer"]["jax"], m["case_id"]))
  return found


def test_the_committed_table_is_valid_and_policy_consistent():
  table = expected_status.load_table()
  assert len(table.releases) >= 6
  dates = sorted(_releases.release_date(v) for v in table.releases)
  assert (dates[-1] - dates[0]).days >= 365, "releases should spread over more than a year"
  ids = set(release_cases.SPECS)
  pinned = installed_jax_version()
  for rule in table.rules:
    assert rule.cases is not None and set(rule.cases) <= ids, f"rule for unknown cases {rule}"
    if rule.consumers is None or pinned in rule.consumers:
      assert not _releases.window_position(rule.producer, pinned, TODAY).inside_window, (
          f"{rule.producer} is inside the window of jax {pinned}; its entries must pass")
  for (producer, case), reason in table.unrecordable.items():
    assert case in ids and reason


def test_every_release_recorded_every_case_it_can_express():
  table = expected_status.load_table()
  recorded = _recorded()
  cases = {c.case_id: c for c in release_cases.all_cases()}
  for producer in table.releases:
    for case in release_cases.SPECS:
      want = table.recordable(producer, case) and cases[case].recordable_by(producer)
      assert ((producer, case) in recorded) == want, (
          f"jax {producer} / {case}: recorded={not want}, but the table says recordable={want}; "
          f"run jaxport record --with-jax {producer}")
  for rule in table.rules:
    for case in rule.cases:
      assert (rule.producer, case) in recorded, f"a row for a missing entry: {rule}"


def test_a_newer_producer_outside_the_forward_window_is_reported_not_failed():
  outcome = judging.annotate(
      _outcome(_break("Side-effect ops cannot be replicated"),
               Finding(K.EXPORT_ERROR, S.TODAY, "the case cannot be exported today: boom")),
      _manifest("0.10.2", source="x"), today=TODAY, consumer="0.10.1",
      table=parse_table(_table()))
  assert outcome.release.verdict == "outside_forward_window"
  assert "0.10.2 is 28 days newer than jax 0.10.1" in outcome.expected_failure
  assert K.EXPORT_ERROR not in outcome.kinds
  assert judging.status(outcome, strict=True) is Status.XFAIL


CELL = {"producer": "0.10.0", "consumer": "0.5.3", "passed": 2, "replayed": 16,
        "measured": "2026-12-01"}
FORWARD_ROW = {"producer": "0.10.0", "cases": ["c1"], "consumers": ["0.5.3"],
               "reason": "0.5.3 cannot read newer StableHLO", "match": "Failed to deserialize",
               "matrix_cell": CELL}


@pytest.mark.parametrize("change, message", [
    ({"matrix_cell": None}, "cites its measured matrix cell"),
    ({"matrix_cell": {**CELL, "consumer": "0.6.2"}}, "not the row's pair"),
    ({"matrix_cell": {**CELL, "passed": 16}}, "no failure to cite"),
    ({"matrix_cell": {**CELL, "measured": "yesterday"}},
     "matrix_cell.measured: expected a date YYYY-MM-DD"),
    ({"consumers": []}, "non-empty list of names"),
    ({"case": "c1"}, "case or cases, not both"),
])
def test_a_row_limited_to_consumers_cites_a_well_formed_cell_of_its_pair(change, message):
  row = {**FORWARD_ROW, **change}
  with pytest.raises(expected_status.ExpectedStatusError, match=message):
    parse_table(_table(expected_failures=[row]), "t.json")


def test_a_row_limited_to_consumers_judges_its_message_there_and_nothing_elsewhere():
  table = parse_table(_table(expected_failures=[FORWARD_ROW]))
  assert table.rules[0].matrix_cell.replayed == 16
  manifest = _manifest("0.10.0")
  # On the row's consumer, outside the forward window: an expected failure by the row's reason.
  out = judging.annotate(_outcome(_break("Failed to deserialize StableHLO")), manifest,
                                 today=TODAY, consumer="0.5.3", table=table)
  assert out.release.verdict == "expected_failure"
  assert out.expected_failure == "0.5.3 cannot read newer StableHLO"
  assert judging.status(out, strict=True) is Status.XFAIL
  # The row's message is checked there, although the forward gap alone would excuse it.
  out = judging.annotate(_outcome(_break("segfault in the kernel")), manifest,
                                 today=TODAY, consumer="0.5.3", table=table)
  assert out.release.verdict == "wrong_failure"
  # Another consumer is not the row's: the entry must pass there.
  out = judging.annotate(_outcome(), manifest, today=TODAY, consumer="0.10.0", table=table)
  assert out.release.verdict == "pass"


def test_a_newer_producer_inside_the_forward_window_must_pass():
  outcome = judging.annotate(
      _outcome(_break("boom")), _manifest("0.8.3", source="x"),
      today=TODAY, consumer="0.9.0", table=parse_table(_table()))
  assert outcome.release.window.direction == "forward"
  assert outcome.release.verdict == "unexpected_failure"
  assert outcome.expected_failure is None


def test_the_forward_gap_never_excuses_damaged_golden_data():
  outcome = judging.annotate(
      _outcome(_break("golden data error: sha256 of exported.bin differs", reader=None)),
      _manifest("0.10.2", source="x"), today=TODAY, consumer="0.10.1", table=parse_table(_table()))
  assert outcome.release.verdict == "unexpected_failure"
  assert outcome.expected_failure is None


def test_no_row_ever_excuses_a_golden_data_error():
  damaged = Finding(K.GOLDEN_DATA_ERROR, S.GOLDEN_DATA,
                    "golden data error: sha256 of exported.bin differs")
  table = parse_table(_table(expected_failures=[
      {"producer": "0.5.3", "case": "c1", "reason": "a row that matches everything", "match": ""}]))
  outcome = judging.annotate(_outcome(damaged), _manifest("0.5.3"), today=TODAY,
                                     consumer="0.10.0", table=table)
  assert outcome.expected_failure is None and outcome.kinds == (K.GOLDEN_DATA_ERROR,)
  assert judging.status(outcome, strict=False) is Status.FAIL


def test_judge_an_entry_that_ran_after_upgrade():
  ok = Expectation("pass")
  fail = Expectation("fail", "target removed long ago", "No registered implementation")
  old, recent = _window("0.4.30"), _window("0.10.0")
  upgraded = expectation_judgement(ok, [], old, ("potrf",))
  assert upgraded.verdict == "upgraded" and upgraded.ok and "potrf" in upgraded.message
  # Inside the window an artifact must run as recorded: needing an upgrade breaks the policy.
  assert expectation_judgement(ok, [], recent, ("potrf",)).verdict == "policy_violation"
  # A row that still expects the failure is stale once the upgrade makes the entry pass.
  assert expectation_judgement(fail, [], old, ("potrf",)).verdict == "unexpected_pass"


def test_annotate_reports_the_upgrade_rules():
  table = parse_table(_table(releases=["0.4.30", "0.10.0"]))
  outcome = _outcome(Finding(K.UPGRADED, S.READER,
                             "jaxport reader: ran after jaxport.upgrade (rules potrf)", "jaxport"),
                     upgrade_rules=("potrf",))
  out = judging.annotate(outcome, _manifest("0.4.30"), today=TODAY, consumer="0.10.2",
                                 table=table)
  assert out.release.verdict == "upgraded" and out.release.upgrade_rules == ("potrf",)
  assert out.expected_failure is None and K.COMPATIBILITY_BREAK not in out.kinds


def test_a_min_consumer_the_table_does_not_measure_is_unknown_not_a_break():
  from jaxport.harness._judge._consumers import measured_releases, min_consumer_findings
  from jaxport.releases import runs_on
  from jaxport.releases._runs_on import ArtifactFeatures
  measured = measured_releases()
  features = ArtifactFeatures(platforms=("cpu",), calling_convention=9,
                              envelope_layout="version-12", serialization_version=12,
                              has_nr_devices=True, stablehlo_version="1.0.0",
                              vhlo_ops=frozenset({"func_v1", "return_v1"}), custom_calls=())
  (found,) = min_consumer_findings("0.3.1", "cpu", runs_on(features), measured, "0.10.2")
  assert found.kind == "min_consumer_unknown" and "not a measured release" in found.message
  (found,) = min_consumer_findings(measured[-1], "cpu", None, measured, "0.10.2", why="no blob")
  assert found.kind == "min_consumer_unknown" and "(no blob)" in found.message
