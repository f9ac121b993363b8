"""The harness's terminal summary says what the run found in words that cannot mislead."""

import _report_helpers as helpers
from jaxport.harness._controller import _reporter
from jaxport.report import RunReport


def test_the_targets_line_counts_the_required_targets_covered_and_names_the_missing_ones():
  data = helpers.run_report()
  data["targets"] = {"required": ["a", "b"], "reachable": ["a", "c"], "covered": ["a", "c"],
                     "missing_required": ["b"], "missing_reachable": []}
  (line,) = [x for x in _reporter.text_lines(RunReport.from_json(data))
             if x.startswith("targets:")]
  assert line == ("targets: 1 of 2 required covered (missing b), 2 covered in all, 2 reached by "
                  "today's lowering")
