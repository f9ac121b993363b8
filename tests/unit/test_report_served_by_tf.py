"""A tf reader's report adds a "served by TF X" column to the page and the job summary, and
each entry's verdict to its card; a file that is not such a report is refused naming the key."""

import json

import pytest

import _report_helpers as helpers
from jaxport.cli import main
from jaxport.errors import ReportError
from jaxport.report import RunReport, load_served, render_html, render_markdown
from jaxport.report._served import read_served


def _tf_report(report: dict, verdicts: dict[str, tuple]) -> dict:
  """A tf reader's report over the run's entries: entry id -> (status, reason, detail)."""
  return {"tf": "2.21.0", "entries": [
      {"entry_id": e, "stage": "compare", "status": s, "reason": r, "detail": d}
      for e, (s, r, d) in verdicts.items()]}


def test_the_served_column_shows_each_rows_newest_entry_as_tensorflow_judged_it(tmp_path):
  data = helpers.run_report()
  report = RunReport.from_json(data)
  ids = [e["entry_id"] for e in data["entries"]]
  refused = ids[0]
  verdicts = {i: ("pass", None, "served by TensorFlow 2.21.0's XlaCallModule") for i in ids}
  verdicts[refused] = ("fail", "custom_call", "custom call 'lapack_ssyevd_ffi' has no handler")
  path = tmp_path / "tf.json"
  path.write_text(json.dumps(_tf_report(data, verdicts)))
  served = load_served(path)
  assert served.reader == "TF 2.21.0" and len(served.entries) == len(ids)
  page = render_html(report, (), [served])
  assert "served by TF 2.21.0</th>" in page and ">served</td>" in page
  markdown = render_markdown(report, (), [served])
  header = next(line for line in markdown.splitlines() if line.startswith("| target |"))
  assert header.endswith("| served by TF 2.21.0 |")
  # Without a tf report the page has no such column.
  assert "served by" not in render_html(report)
  # The command line takes the file, repeatable.
  out = tmp_path / "page.html"
  run = tmp_path / "run.json"
  run.write_text(json.dumps(data))
  assert main(["report", "render", str(run), "--html", str(out), "--served-by", str(path),
               "--markdown", str(tmp_path / "s.md")]) == 0
  assert "served by TF 2.21.0" in out.read_text()


@pytest.mark.parametrize("change, named", [
    (lambda d: d.pop("tf"), "missing tf"),
    (lambda d: d["entries"][0].pop("status"), r"entries\[0\]: missing status"),
    (lambda d: d["entries"][0].update(status="maybe"), r"entries\[0\].status: expected one of"),
    (lambda d: d["entries"][0].update(entry_id="x"), r"entries\[0\].entry_id: expected an entry"),
    (lambda d: d["entries"].append(dict(d["entries"][0])), r"entries\[1\].entry_id: .* twice"),
], ids=["no release", "no status", "a status of no verdict", "no entry id", "an entry twice"])
def test_a_file_that_is_not_a_tf_readers_report_is_refused_naming_the_key(change, named):
  data = _tf_report({}, {"cpu/f/c/2026-10-01_jax-0.10.2": ("pass", None, "served")})
  change(data)
  with pytest.raises(ReportError, match=named):
    read_served(data, "tf.json")
