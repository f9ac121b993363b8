"""A downstream project's sharded run gets the session-level checks of an unsharded one:
``jaxport report merge --project`` of its four shards prints the same session failures
(a case without an entry, a declared target no entry covers) as the run in one piece."""

import json
import textwrap

import pytest

from _python_child import run_cli

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-11-30"
PYPROJECT = """
[tool.pytest.ini_options]
jaxport_cases = ["mycases"]
jaxport_store = "golden"
jaxport_stable_targets = "targets.json"
"""
CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix


def _inputs(seed):
  return lambda: ((random_matrix(seed, (3, 3), np.float32),), {})


def cases():
  out = [Case(f"scaled_{k}", "scale", lambda a, k=k: a * (k + 1), _inputs(k)) for k in range(6)]
  if ADD_NEW:
    out.append(Case("newcomer", "scale", lambda a: a - 1, _inputs(9)))
  return out
"""


def _cases(pytester, add_new: bool) -> None:
  pytester.makepyfile(mycases=f"ADD_NEW = {add_new}\n" + textwrap.dedent(CASES))


def _run(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", "-rN",
                                       f"--compat-today={TODAY}", *args)


def test_merged_shards_print_the_unsharded_session_failures(pytester):
  pytester.makepyprojecttoml(PYPROJECT)
  pytester.makepyfile(test_golden="from jaxport.harness.testing import test_record, "
                                  "test_replay  # noqa: F401\n")
  # A target the project declares stable on cpu: no entry can cover it.
  (pytester.path / "targets.json").write_text(json.dumps({"cpu": ["my_declared_target"]}))
  _cases(pytester, add_new=False)
  _run(pytester, "--compat-record").assert_outcomes(passed=6, deselected=1)
  _cases(pytester, add_new=True)

  whole = _run(pytester, "--compat-report=whole.json")
  assert whole.ret != 0
  expected = json.loads((pytester.path / "whole.json").read_text())["session_failures"]
  assert any("newcomer" in f for f in expected), expected
  assert any("my_declared_target" in f for f in expected), expected

  shards = []
  for i in range(1, 5):
    _run(pytester, f"--compat-shard={i}/4", f"--compat-report=shard{i}.json")
    report = json.loads((pytester.path / f"shard{i}.json").read_text())
    assert report["session_failures"] == [], (i, report["session_failures"])
    shards.append(f"shard{i}.json")

  merged = run_cli(["report", "merge", "--project", ".", *shards, "-o", "merged.json"],
                   cwd=pytester.path, timeout=600)
  assert merged.returncode == 1, merged.stderr
  printed = [line.split("SESSION FAIL ", 1)[1] for line in merged.stderr.splitlines()
             if "SESSION FAIL " in line]
  assert printed == expected
  report = json.loads((pytester.path / "merged.json").read_text())
  assert report["session_failures"] == expected
  assert report["summary"]["replayed"] == 6 and report["summary"]["present"] == 6
