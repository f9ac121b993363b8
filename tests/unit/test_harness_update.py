"""``--compat-update``'s decisions: which cases changed, what changed, statuses and coverage."""

import pytest

import _judging as judging
from jaxport.golden import EntryId
from jaxport.harness._controller import _update
from jaxport._vocabulary import RecordAction
from jaxport.harness._controller._update import CaseChange, Update
from jaxport.report._entries import EntryResult
from jaxport.report import Finding, FindingKind as K, Subject
from jaxport.report import PlatformTargets, Skip, Status, Targets

OLD = EntryId.parse("cpu/mine/gram/2026-11-29_jax-0.10.2")
NEW = EntryId.parse("cpu/mine/gram/2026-11-30_jax-0.10.2")
REVISED = EntryId.parse("cpu/mine/gram/2026-11-30.2_jax-0.10.2")


def outcome(entry_id, *kinds, targets=("a",), current=("a",)):
  family, case_id = entry_id.family, entry_id.case_id
  return EntryResult(entry_id=entry_id, case_id=case_id, family=family, record_date=None,
                 days_to_expiry=None, lowering_only=False, targets=tuple(targets),
                 current_targets=tuple(current),
                 findings=tuple(Finding(k, Subject.TODAY, f"current lowering: {k} of {entry_id}",
                                        detail=f"{k} of {entry_id}") for k in kinds))


def test_the_newest_entry_of_a_case_goes_by_date_revision_then_release():
  ids = [REVISED, EntryId.parse("cpu/mine/gram/2026-11-30_jax-0.9.2"), NEW, OLD,
         EntryId.parse("cpu/mine/other/2026-01-01_jax-0.4.30"),
         EntryId.parse("cpu/mine/gram/2026-11-30.10_jax-0.10.2")]
  assert _update.newest_entries(ids) == {
      "gram": EntryId.parse("cpu/mine/gram/2026-11-30.10_jax-0.10.2"),
      "other": EntryId.parse("cpu/mine/other/2026-01-01_jax-0.4.30")}
  assert _update.newest_entries([NEW, EntryId.parse("cpu/mine/gram/2026-11-30_jax-0.9.2")]) == {
      "gram": NEW}


def test_a_case_changed_when_its_newest_entry_differs_from_todays_function():
  present = [OLD, NEW]
  changed = {OLD: outcome(OLD, K.LOWERING_DRIFT),
             NEW: outcome(NEW, K.NUMERICS_CHANGE, K.NUMERICS_DRIFT)}
  (change,) = _update.changed_cases(changed, present, ["gram"], include_new=False)
  assert change.case_id == "gram" and change.since == NEW
  assert change.numerics == (f"numerics_change of {NEW}",) and change.signature_changes == ()
  # Only an older entry differs (the newest matches today): nothing to record.
  settled = {OLD: outcome(OLD, K.LOWERING_DRIFT), NEW: outcome(NEW)}
  assert _update.changed_cases(settled, present, ["gram"], include_new=True) == []
  # Breaks, staleness and drift within tolerance are not changes of the function.
  other = {NEW: outcome(NEW, K.COMPATIBILITY_BREAK, K.EXPIRED, K.NUMERICS_DRIFT)}
  assert _update.changed_cases(other, present, ["gram"], include_new=True) == []
  # The newest entry was not replayed (a narrowed selection): nothing known, nothing recorded.
  assert _update.changed_cases({OLD: changed[OLD]}, present, ["gram"], include_new=True) == []


def test_new_cases_only_when_asked_and_unregistered_cases_never():
  present = [NEW, EntryId.parse("cpu/mine/gone/2026-11-30_jax-0.10.2")]
  outcomes = {p: outcome(p, K.LOWERING_DRIFT) for p in present}
  got = _update.changed_cases(outcomes, present, ["gram", "fresh"], include_new=True)
  assert [(c.case_id, c.since) for c in got] == [("fresh", None), ("gram", NEW)]
  got = _update.changed_cases(outcomes, present, ["gram", "fresh"], include_new=False)
  assert [c.case_id for c in got] == ["gram"]


def test_what_changed_names_targets_added_and_removed_and_the_signature_lines():
  o = outcome(NEW, K.LOWERING_DRIFT, targets=("a", "b"), current=("b", "c"))
  change = CaseChange.from_outcome(o)
  assert change.targets_added == ("c",) and change.targets_removed == ("a",)
  assert change.signature_changes == (f"lowering_drift of {NEW}",)
  assert change.summary() == ["targets added ['c'], removed ['a']",
                              f"signature: lowering_drift of {NEW}"]
  assert CaseChange("fresh", None).summary() == ["a new case: it had no entry"]


@pytest.mark.parametrize("kinds,strict,status", [
    ((K.LOWERING_DRIFT,), False, Status.WARN),
    ((K.LOWERING_DRIFT, K.NUMERICS_CHANGE), True, Status.WARN),
    ((K.NUMERICS_CHANGE, K.COMPATIBILITY_BREAK), False, Status.FAIL),
    ((K.NUMERICS_CHANGE, K.EXPIRED), True, Status.FAIL),
    ((K.NUMERICS_CHANGE, K.EXPIRED), False, Status.WARN),
    ((K.NUMERICS_DRIFT,), True, Status.DRIFT),
    ((), True, Status.PASS),
])
def test_in_an_update_run_changes_do_not_fail_but_everything_else_counts(kinds, strict, status):
  assert judging.status(outcome(NEW, *kinds), strict, updating=True) == status


def test_entries_recorded_by_the_update_settle_coverage_and_missing_cases():
  targets = Targets(required=("a", "t"), reachable=("b",), covered=("a",),
                    missing_required=("t",), missing_reachable=("b",))
  other = {"cuda": PlatformTargets(required=("k",), covered=(), unreachable={}, missing=("k",))}
  updates = [Update(CaseChange("gram", NEW), RecordAction.WRITTEN, REVISED, targets=("b", "k")),
             Update(CaseChange("fresh", None), RecordAction.ERROR, None, "recording failed",
                    targets=("t",))]
  got_targets, got_other, cases, skips = _update.settled(targets, other, ["gram", "fresh", "x"],
                                                         updates)
  assert got_targets.missing_reachable == () and got_targets.missing_required == ("t",)
  assert got_targets.covered == ("a",)
  assert got_other["cuda"].missing == ()
  assert cases == ["fresh", "x"]
  assert skips == [Skip(f"replay of {REVISED}",
                        "recorded by this run (--compat-update); it is replayed from the next run")]


def test_the_hint_says_what_a_changed_entry_means_and_what_to_run():
  changed = outcome(NEW, K.NUMERICS_CHANGE)
  assert "pytest --compat-update" in _update.change_hint(changed, updating=False, newest=True)
  assert "recorded at the end of the run" in _update.change_hint(changed, updating=True, newest=True)
  assert "has a newer entry" in _update.change_hint(changed, updating=False, newest=False)
  assert _update.change_hint(outcome(NEW, K.EXPIRED), updating=False, newest=True) == ""


def test_a_broken_artifact_is_not_told_to_record_a_new_entry():
  broken = outcome(NEW, K.LOWERING_DRIFT)
  broken = broken.replace(findings=broken.findings + (Finding(
      K.COMPATIBILITY_BREAK, Subject.READER, "jax reader: run failed: no such target", "jax"),))
  hint = _update.change_hint(broken, updating=False, newest=True)
  assert "would not change that" in hint and "pinned" not in hint
  assert "record a new entry of it with pytest --compat-update" not in hint
  crashed = outcome(NEW).replace(findings=(Finding(K.COMPATIBILITY_BREAK, Subject.WORKER,
                                                   "the worker process died"),))
  assert _update.change_hint(crashed, updating=False, newest=True) == ""


def test_the_report_section_shows_in_the_text_summary():
  u = Update(CaseChange("gram", NEW, ("c",), (), ("target c is new",), ("3 of 9 differ",)),
             RecordAction.WRITTEN, REVISED)
  lines = _update.text_lines([u.report_item()])
  assert lines == ["updated 1 case(s):", f"  written   {REVISED} (since {NEW})",
                   "      targets added ['c'], removed []", "      signature: target c is new",
                   "      numerics: 3 of 9 differ"]
  assert _update.text_lines([]) == [
      "updated no case: no newest entry differs from today's function"]


def test_a_cases_jax_configuration_names_x64_always_and_the_partitioner_when_chosen():
  import numpy as np
  from jaxport.harness import Case
  from jaxport.harness._worker import _jax_setup
  def make():
    return (np.ones(2, np.float32),), {}
  plain = Case("c", "f", lambda x: x, make)
  assert _jax_setup.case_jax_config(plain) == {"jax_enable_x64": False}
  gspmd = Case("g", "f", lambda x: x, make, enable_x64=True, use_shardy=False)
  assert _jax_setup.case_jax_config(gspmd) == {"jax_enable_x64": True,
                                            "jax_use_shardy_partitioner": False}
