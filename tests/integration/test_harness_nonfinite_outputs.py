"""Outputs holding NaN or infinities replay as passes when they are reproduced: non-finite
values compare as values; recording them says how many of each every output holds."""

import json
import textwrap

import pytest

from _downstream_project import CASE_PRELUDE, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = CASE_PRELUDE + """

def cases():
  return [Case("all_nan", "mine", lambda a: jnp.log(a - 10.0), square),
          Case("minus_inf", "mine", lambda a: jnp.log(a * 0.0), square),
          Case("finite", "mine", lambda a: jnp.cos(a), square)]
"""

RUN = ("-p", "no:cacheprovider", "--compat-today=2026-12-01")


def test_reproduced_non_finite_outputs_pass_and_their_counts_are_recorded(pytester, tmp_path):
  write_project(pytester, textwrap.dedent(CASES))
  record_report = tmp_path / "record.json"
  recorded = pytester.runpytest(*RUN, "--compat-record",
                                           f"--compat-report={record_report}")
  assert recorded.ret == 0, recorded.stdout.str()[-3000:]
  text = " ".join(recorded.stdout.str().split())
  assert "written cpu/mine/all_nan/2026-12-01" in text
  assert "recorded non-finite values: output 0: 9 NaN" in text
  assert "recorded non-finite values: output 0: 9 -inf" in text
  messages = {r["case_id"]: r["message"]
              for r in json.loads(record_report.read_text())["recorded"]}
  assert messages["all_nan"] == "recorded non-finite values: output 0: 9 NaN"
  assert messages["finite"] == ""

  report_file = tmp_path / "report.json"
  replayed = pytester.runpytest(*RUN, f"--compat-report={report_file}")
  assert replayed.ret == 0, replayed.stdout.str()[-3000:]
  entries = {e["case_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  assert {c: e["status"] for c, e in entries.items()} == {
      "all_nan": "pass", "minus_inf": "pass", "finite": "pass"}
