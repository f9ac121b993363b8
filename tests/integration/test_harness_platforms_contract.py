"""The platforms a case is exported for are part of its calling contract. Two cases recorded for
``("cpu", "tpu")``: one then exports for ``("cpu",)`` (the TPU fleet can no longer load it), a
``signature_change`` naming tpu that fails; the other for ``("cpu", "tpu", "cuda")``, a
``platforms_added`` warning that passes, and fails under ``--compat-strict``. A same-day
``--compat-record`` (what ``jaxport record`` runs) calls both a conflict, ``--compat-update``
records both anew, and the replay after it passes."""

import shutil
import textwrap

import pytest

from _downstream_project import recorded_project, session_with_report

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

SHRINKS, GROWS = {shrinks!r}, {grows!r}


def vector():
  return (random_matrix(0, (3,), np.float32),), {{}}


def score(x):
  return jnp.tanh(x) * 2


def cases():
  return [Case("fleet_shrinks", "serving", score, vector, platforms=SHRINKS),
          Case("fleet_grows", "serving", score, vector, platforms=GROWS)]
"""

BOTH = ("cpu", "tpu")


def _cases(shrinks=BOTH, grows=BOTH) -> str:
  return textwrap.dedent(CASES.format(shrinks=shrinks, grows=grows))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
  """The project with both cases recorded for ("cpu", "tpu"), once for the module
  (``record_once``: a module-scoped fixture has no pytester); the tests' sessions run on a
  copy."""
  return recorded_project(tmp_path_factory.mktemp("platforms"), _cases(), TODAY)


def _changed(pytester, recorded, **platforms):
  """A copy of the recorded project in ``pytester.path``, its cases exporting for
  ``platforms``."""
  for name in ("pyproject.toml", "test_golden.py"):
    shutil.copy(recorded / name, pytester.path / name)
  shutil.copytree(recorded / "golden", pytester.path / "golden")
  (pytester.path / "mycases.py").write_text(_cases(**platforms))


def _run(pytester, tmp_path, name, *args):
  return session_with_report(pytester, tmp_path / f"{name}.json", TODAY, *args)


def _by_case(report):
  return {e["case_id"]: e for e in report["entries"]}


def test_a_platform_removed_fails_and_one_added_warns_failing_only_when_strict(
    pytester, tmp_path, recorded):
  _changed(pytester, recorded, shrinks=("cpu",), grows=("cpu", "tpu", "cuda"))
  result, report = _run(pytester, tmp_path, "replay")
  entries = _by_case(report)
  shrunk, grown = entries["fleet_shrinks"], entries["fleet_grows"]
  assert shrunk["status"] == "fail" and shrunk["kinds"] == ["signature_change"], shrunk
  text = "\n".join(shrunk["messages"])
  assert ("calling contract of case fleet_shrinks: platforms: ['tpu'] removed "
          "(['cpu', 'tpu'] became ['cpu'])") in text, text
  assert grown["status"] == "warn" and grown["kinds"] == ["platforms_added"], grown
  assert "platforms: ['cuda'] added" in "\n".join(grown["messages"])
  result.assert_outcomes(passed=1, failed=1)

  result, report = _run(pytester, tmp_path, "strict", "--compat-strict")
  assert _by_case(report)["fleet_grows"]["status"] == "fail", report["entries"]
  result.assert_outcomes(failed=2)


def test_record_calls_a_platforms_change_a_conflict_and_update_records_it(
    pytester, tmp_path, recorded):
  _changed(pytester, recorded, shrinks=("cpu",), grows=("cpu", "tpu", "cuda"))
  result, report = _run(pytester, tmp_path, "record", "--compat-record")
  assert sorted((r["case_id"], r["action"]) for r in report["recorded"]) == [
      ("fleet_grows", "conflict"), ("fleet_shrinks", "conflict")], report["recorded"]

  result, report = _run(pytester, tmp_path, "update", "--compat-update")
  updated = {u["case_id"]: u for u in report["updated"]}
  assert {c: u["action"] for c, u in updated.items()} == {"fleet_grows": "written",
                                                          "fleet_shrinks": "written"}
  assert any("['tpu'] removed" in s for s in updated["fleet_shrinks"]["signature_changes"])
  assert any("['cuda'] added" in s for s in updated["fleet_grows"]["signature_changes"])
  assert "updated 2 case(s)" in result.stdout.str()

  result, report = _run(pytester, tmp_path, "after", "--compat-strict")
  assert result.ret == 0, result.stdout.str()
