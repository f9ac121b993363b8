"""The per-release suite runner: JUnit counts and the release x passed/failed table."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.tools import suites_with_jax  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.unit.test_a" name="test_ok" />
<testcase classname="tests.unit.test_a" name="test_bad"><failure message="boom" /></testcase>
<testcase classname="tests.unit.test_b" name="test_setup"><error message="fixture" /></testcase>
<testcase classname="tests.unit.test_b" name="test_skip"><skipped message="needs jax" /></testcase>
<testcase classname="tests.unit.test_b" name="test_ok_too" />
</testsuite></testsuites>
"""


def test_junit_counts_and_failing_ids(tmp_path: Path):
  (tmp_path / "j.xml").write_text(JUNIT)
  r = suites_with_jax.read_junit(tmp_path / "j.xml", "tests", 1)
  assert (r.passed, r.failed, r.errors, r.skipped) == (2, 1, 1, 1)
  assert r.failures == ("tests.unit.test_a::test_bad", "tests.unit.test_b::test_setup")
  assert not r.ok


def test_a_missing_report_is_an_error_not_a_pass(tmp_path: Path):
  r = suites_with_jax.read_junit(tmp_path / "absent.xml", "harness", 0)
  assert not r.ok and r.errors == 1


def test_table_has_a_row_per_release_and_lists_failures():
  ok = suites_with_jax.SuiteResult("tests", 10, 0, 0, 2, 0)
  replay = suites_with_jax.SuiteResult("harness", 5, 0, 0, 0, 0)
  bad = suites_with_jax.SuiteResult("tests", 9, 1, 0, 2, 1, ("tests.unit.test_a::test_bad",))
  text = suites_with_jax.table({"0.9.2": [bad, replay], "0.10.2": [ok, replay]})
  assert "| 0.9.2 | 9 | 1 | 2 | 5 | 0 | 0 | FAIL |" in text
  assert "| 0.10.2 | 10 | 0 | 2 | 5 | 0 | 0 | pass |" in text
  assert "- jax 0.9.2: tests.unit.test_a::test_bad" in text
