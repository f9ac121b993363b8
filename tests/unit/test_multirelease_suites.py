"""The per-release suite runner: JUnit counts and the release x passed/failed table."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.multirelease import _suites  # noqa: E402
from tools.release_suites import suites_with_jax  # noqa: E402

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
  r = _suites.read_junit(tmp_path / "j.xml", "tests", 1)
  assert (r.passed, r.failed, r.errors, r.skipped) == (2, 1, 1, 1)
  assert r.failures == ("tests.unit.test_a::test_bad", "tests.unit.test_b::test_setup")
  assert not r.ok


def test_a_missing_report_is_an_error_not_a_pass(tmp_path: Path):
  r = _suites.read_junit(tmp_path / "absent.xml", "harness", 0)
  assert not r.ok and r.errors == 1


def test_table_has_a_row_per_release_and_lists_failures():
  ok = _suites.SuiteResult("tests", 10, 0, 0, 2, 0)
  replay = _suites.SuiteResult("harness", 5, 0, 0, 0, 0)
  bad = _suites.SuiteResult("tests", 9, 1, 0, 2, 1, ("tests.unit.test_a::test_bad",))
  text = _suites.table({"0.9.2": [bad, replay], "0.10.2": [ok, replay]})
  assert "| 0.9.2 | 9 | 1 | 2 | 5 | 0 | 0 | FAIL |" in text
  assert "| 0.10.2 | 10 | 0 | 2 | 5 | 0 | 0 | pass |" in text
  assert "- jax 0.9.2: tests.unit.test_a::test_bad" in text


def test_list_prints_each_releases_python_and_fails_when_one_is_missing(monkeypatch, tmp_path, capsys):
  def find(version):
    if version == "0.12.0.1":
      raise _suites._envs.VenvError("No Python 3.12 or newer found for the venv of jax 0.12.0.1")
    return "/usr/bin/python3.11"

  monkeypatch.setattr(_suites._envs, "find_python", find)
  argv = ["--list", "--venvs", str(tmp_path), "--jax", "0.9.2", "--jax", "0.12.0.1"]
  assert suites_with_jax.main(argv) == 1
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].split() == ["0.9.2", "Python", "3.11", "venv", "to", "build", "with",
                              "/usr/bin/python3.11"]
  assert lines[1].startswith("0.12.0.1   Python 3.12 or newer   MISSING: No Python 3.12 or newer")
  monkeypatch.setattr(_suites._envs, "find_python", lambda version: "/p")
  assert suites_with_jax.main(["--list", "--venvs", str(tmp_path)]) == 0
  listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
  assert tuple(listed) == _suites.supported_releases()


def test_a_release_whose_venv_cannot_be_built_fails_its_row_and_the_others_run(monkeypatch, tmp_path):
  def ensure(version, checkout, root=None):
    if version == "0.11.0":
      raise _suites._envs.VenvError("No Python 3.12 or newer found for the venv of jax 0.11.0")
    return Path(f"/venvs/{version}/bin/python")

  ran = []

  def run(python, suite, out, label, workers, extra, checkout):
    ran.append((label, suite))
    return _suites.SuiteResult(suite, 1, 0, 0, 0, 0)

  monkeypatch.setattr(_suites._test_venvs, "ensure_test_venv", ensure)
  monkeypatch.setattr(_suites, "run_suite", run)
  out = tmp_path / "out"
  assert suites_with_jax.main(["--jax", "0.10.2", "--jax", "0.11.0", "--jax", "0.12.0.1",
                               "--suite", "tests", "--out", str(out)]) == 1
  assert ran == [("0.10.2", "tests"), ("0.12.0.1", "tests")]
  text = (out / "releases.md").read_text()
  rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| 0.")]
  assert rows == ["| 0.10.2", "| 0.11.0", "| 0.12.0.1"]
  assert "| 0.11.0 | 0 | 1 | 0 | FAIL |" in text
  assert "- jax 0.11.0: no venv: No Python 3.12 or newer found for the venv of jax 0.11.0" in text
