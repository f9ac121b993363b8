"""A reader's failure keeps jax's whole error, up to the bound, in the JSON report and the
page; the terminal summary shows its first line and points there."""

import dataclasses
import datetime
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import _report_helpers as helpers  # noqa: E402
from _harness_paths import repo_project  # noqa: E402
from jaxport import _limits  # noqa: E402
from jaxport.golden import GoldenStore  # noqa: E402
from jaxport.harness._controller import _reporter  # noqa: E402
from jaxport.harness._judge._entry import EntryContext, RunContext, judge  # noqa: E402
from jaxport.harness._protocol._answers import ReplayAnswer  # noqa: E402
from jaxport.harness._protocol._requests import ReplayRequest  # noqa: E402
from jaxport.harness._worker import _engine, _error_text, _module_reads  # noqa: E402
from jaxport.harness._worker import _reference as _api  # noqa: E402
from jaxport.report import RunReport, Status  # noqa: E402
from jaxport.report._html import render_html  # noqa: E402

VERIFIER_LINES = ["Cannot lower jaxpr with verifier errors:",
                  "\t'stablehlo.custom_call' op should have a sharding attribute",
                  "\t\tat loc(\"jit(call_exported)/call_exported\")",
                  "\tsee current operation: %0 = stablehlo.custom_call @Sharding(%arg0)"]


@pytest.fixture(scope="module")
def engine():
  replay = _engine.ReplayEngine(repo_project())
  yield replay
  replay.close()


def _failed_replay(engine, raising, message: str):
  """The judged entry, as the report keeps it, of a replay whose jax reader raised
  ``ValueError(message)`` reading a small entry of this repository."""
  store = GoldenStore(ROOT / "compat_data")
  entry = next(e for e in store.entries(platform="cpu")
               if e.entry_id.case_id == "kwargs_pytree").snapshot()
  raising(message)
  m = entry.manifest
  results = tuple(engine._read(r, entry.blob(), entry.inputs(), entry.expected_outputs(), m,
                               _module_reads.ModuleReads(), None) for r in _api.readers())
  answer = ReplayAnswer(readers=results, today=None, host=None, seconds=0.0, timings={})
  asked = ReplayRequest("compat_data", entry.entry_id, _api.readers(), current=False)
  run = RunContext(today=m.record_date + datetime.timedelta(days=1), window_days=180,
                   consumer=m.producer.jax)
  return judge(entry.entry_id, answer, asked, EntryContext(m, newest=True), run)


def _reader_message(outcome) -> str:
  (message,) = [x for x in outcome.to_json()["messages"] if "jax reader" in x]
  return message


def test_a_multi_line_error_is_whole_in_the_report_and_the_page_and_one_line_in_the_summary(
    engine, reference_reader_raising):
  outcome = _failed_replay(engine, reference_reader_raising, "\n".join(VERIFIER_LINES))
  assert outcome.status is Status.FAIL
  message = _reader_message(outcome)
  assert message.endswith("ValueError: " + "\n".join(VERIFIER_LINES))
  report = dataclasses.replace(RunReport.from_json(helpers.run_report()), entries=(outcome,))
  page = render_html(RunReport.from_json(report.to_json()))
  assert "see current operation: %0 = stablehlo.custom_call @Sharding(%arg0)" in page
  summary = [x for x in _reporter.text_lines(report) if "jax reader" in x]
  assert summary == [f"      [compatibility_break] jax reader: deserialize failed: ValueError: "
                     f"{VERIFIER_LINES[0]} [3 more lines of this error in the JSON report "
                     "(--compat-report) and its page (jaxport report render)]"]


def test_an_error_past_the_bound_is_cut_with_a_marker_in_the_report(engine,
                                                                    reference_reader_raising):
  n = 2 * _limits.MAX_ERROR_LINES
  lines = [VERIFIER_LINES[0]] + [f"\terror {i}" for i in range(n)]
  message = _reader_message(_failed_replay(engine, reference_reader_raising, "\n".join(lines)))
  kept = message.splitlines()
  assert len(kept) == _limits.MAX_ERROR_LINES + 1
  assert "\terror 0" in kept and f"\terror {n - 1}" not in message
  assert kept[-1].startswith("[... cut: ")
  assert f"on {n + 1 - _limits.MAX_ERROR_LINES} more lines" in kept[-1]


@pytest.mark.parametrize("text", ["x" * (2 * _limits.MAX_ERROR_CHARS),
                                  "\n".join(["y" * 100] * (_limits.MAX_ERROR_CHARS // 50))])
def test_the_character_bound_holds_for_long_lines_and_many_short_ones(text):
  cut = _error_text.bounded(text)
  body, marker = cut.rsplit("\n", 1)
  assert len(body) <= _limits.MAX_ERROR_CHARS and text.startswith(body)
  assert marker.startswith("[... cut: ") and "MAX_ERROR_CHARS" in marker


def test_an_error_within_the_bound_is_kept_as_it_is():
  text = "\n".join(VERIFIER_LINES)
  assert _error_text.error_text(ValueError(text)) == f"ValueError: {text}"
