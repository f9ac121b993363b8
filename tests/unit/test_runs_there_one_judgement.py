"""Whether an entry runs under a release is one judgement: the release replayer's row and a
harness replay's report entry that found the same thing get the same answer."""

from __future__ import annotations

import types

import pytest

from jaxport._vocabulary import Finding, FindingKind as K, Subject
from jaxport.harness._judge._release_runs import judge_report_entry, judge_row

RELEASE = "0.10.2"


def _entry(*findings: Finding, lowering_only: bool = False, platform: str = "cpu"):
  """A report entry as ``judge_report_entry`` reads one: platform, lowering-only, findings."""
  return types.SimpleNamespace(findings=tuple(findings), lowering_only=lowering_only,
                               platform=platform)


def _report_answer(entry) -> tuple[bool, str] | None:
  return judge_report_entry(entry, "cpu", ("jaxport", "jax"), RELEASE)


def _row_answer(row: dict) -> tuple[bool, str] | None:
  run = judge_row({"entry_id": "cpu/case/2026-01-01/x_jax-0.10.2", **row}, RELEASE)
  return None if run.runs is None else (run.runs, run.detail)


@pytest.mark.parametrize("row, finding", [
    ({"stage": "run", "error": "no kernel"},
     Finding(K.COMPATIBILITY_BREAK, Subject.READER, "run: no kernel", "jax")),
    ({"stage": "compare", "matched": False, "problems": "off by 1"},
     Finding(K.NUMERICS_CHANGE, Subject.READER, "compare: off by 1", "jax")),
], ids=["a break", "changed numerics"])
def test_the_same_failure_does_not_run_in_a_row_or_a_report(row, finding):
  from_row = _row_answer(row)
  assert from_row is not None and from_row[0] is False
  assert from_row == _report_answer(_entry(finding))


@pytest.mark.parametrize("row, finding", [
    ({"stage": "process", "error": "died"},
     Finding(K.COMPATIBILITY_BREAK, Subject.WORKER, "process: died")),
    ({"stage": "verify", "error": "sha256"},
     Finding(K.GOLDEN_DATA_ERROR, Subject.GOLDEN_DATA, "verify: sha256")),
], ids=["a crash", "unreadable files"])
def test_the_same_unmeasured_replay_measures_nothing_in_a_row_or_a_report(row, finding):
  assert _row_answer(row) is None
  assert _report_answer(_entry(finding)) is None


def test_a_finding_of_jaxports_own_reader_says_nothing_of_the_release_in_either():
  ours = Finding(K.COMPATIBILITY_BREAK, Subject.READER, "run: refused", "jaxport")
  assert _report_answer(_entry(ours))[0] is True
  assert _row_answer({"stage": "compare", "matched": True})[0] is True


def test_an_entry_only_read_measures_nothing_in_either():
  assert _row_answer({"stage": "deserialize"}) is None
  assert _report_answer(_entry(lowering_only=True)) is None
