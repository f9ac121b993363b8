"""A project's malformed harness configuration stops the run with a usage error naming the key."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def _project(pytester, ini: str, **files: str) -> None:
  pytester.makefile(".ini", pytest=f"[pytest]\naddopts = -p no:cacheprovider\n{ini}\n")
  for name, text in files.items():
    pytester.path.joinpath(name).write_text(text)
  pytester.makepyfile(test_golden="from jaxport.harness.testing import test_replay  # noqa: F401\n")
  (pytester.path / "golden").mkdir(exist_ok=True)


@pytest.mark.parametrize("ini, files, message", [
    ("jaxport_cases = mycases\njaxport_store = golden\njaxport_on_change = sometimes", {},
     "jaxport_on_change = 'sometimes': expected one of ['fail', 'warn']"),
    ("jaxport_cases = mycases\njaxport_store = golden\njaxport_stable_targets = targets.json",
     {"targets.json": "{not json"}, "targets.json: invalid JSON at line 1 column 2"),
    ("jaxport_cases = mycases\njaxport_store = golden\njaxport_stable_targets = targets.json",
     {"targets.json": '{"gpu": ["k"]}'}, "unknown key 'gpu'"),
    ("jaxport_cases = my-cases!\njaxport_store = golden", {},
     "'my-cases!' is not a module name"),
    ("jaxport_cases = mycases", {}, "jaxport_cases is set but jaxport_store is not"),
], ids=["on-change", "targets-not-json", "targets-unknown-platform", "cases-not-a-module",
        "no-store"])
def test_a_malformed_configuration_is_a_usage_error_naming_the_key(pytester, ini, files, message):
  _project(pytester, ini, **files)
  result = pytester.runpytest()
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  assert message in result.stderr.str(), result.stderr.str()[-2000:]


def test_a_case_module_that_cannot_be_imported_fails_the_run_naming_it(pytester):
  _project(pytester, "jaxport_cases = nowhere_cases\njaxport_store = golden")
  result = pytester.runpytest("--compat-record")
  out = result.stdout.str() + result.stderr.str()
  assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
  assert "case module(s) ['nowhere_cases'] of jaxport_cases cannot be found" in out, out[-3000:]
  assert "Traceback" not in out


def test_a_store_given_as_a_list_is_a_usage_error_naming_the_key(pytester):
  pytester.makepyprojecttoml('[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n'
                             'jaxport_cases = ["mycases"]\njaxport_store = ["a", "b"]\n')
  pytester.makepyfile(test_golden="from jaxport.harness.testing import test_replay  # noqa: F401\n")
  result = pytester.runpytest()
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  err = result.stderr.str()
  assert "jaxport_store = ['a', 'b']: expected one path (a string)" in err, err[-2000:]
  assert "INTERNALERROR" not in result.stdout.str() + err
