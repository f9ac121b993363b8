"""The producer x consumer matrix and the crash-tolerant replay driver, on small fixtures."""

import datetime
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.multirelease import _matrix as matrix  # noqa: E402
from jaxport.multirelease import _producers  # noqa: E402
from jaxport.multirelease import _replay  # noqa: E402

# The measured matrix kept in the repository: what expected-status rows cite and the
# multi-release page shows.
SUMMARY = ROOT / "harness" / "release_matrix.json"
TODAY = datetime.date(2026, 11, 29)
OLD = {"jax": "0.5.3", "jaxlib": "0.5.3", "jaxport": None}
CURRENT = {"jax": "0.10.2", "jaxlib": "0.10.2", "jaxport": "0.1.0"}


# What the release replayer writes of an entry that reproduced, failed, took its process down,
# or could not be replayed there (results only: the judge makes the status).
_RESULTS = {"pass": lambda why: {"stage": "compare", "matched": True},
            "fail": lambda why: {"stage": "run", "error": why},
            "crash": lambda why: {"stage": "process", "error": why},
            "skip": lambda why: {"stage": "devices", "not_replayable": why}}


def _row(entry, producer, result="pass", why=None):
  return {"entry_id": f"cpu/fam/{entry}/2026-11-29_jax-{producer['jax']}", "producer": producer,
          **_RESULTS[result](why)}


@pytest.fixture
def results():
  return {
      "0.10.2": [_row("a", OLD), _row("b", OLD, "fail", "Wrong number of arguments: expected 2"),
                 _row("a", CURRENT), _row("b", CURRENT)],
      "0.9.2": [_row("a", OLD), _row("b", OLD), _row("a", CURRENT),
                _row("b", CURRENT, "crash", "the replaying process died on this entry")],
  }


def test_matrix_counts_orders_and_judges_the_window(results):
  m = matrix.build_matrix(results, TODAY)
  assert m["producers"] == ["jax 0.5.3", "jaxport 0.1.0 / jax 0.10.2"]
  assert m["consumers"] == ["0.9.2", "0.10.2"]
  old_on_pinned = m["cells"]["jax 0.5.3"]["0.10.2"]
  assert (old_on_pinned["pass"], old_on_pinned["fail"], old_on_pinned["total"]) == (1, 1, 2)
  # 0.5.3 -> 0.10.2 is more than six months: failures are allowed by the policy.
  assert old_on_pinned["must_pass"] is False and old_on_pinned["status"] == "warn"
  assert old_on_pinned["window"]["gap_days"] == 455
  # Same release: inside the window, all pass.
  same = m["cells"]["jaxport 0.1.0 / jax 0.10.2"]["0.10.2"]
  assert same["must_pass"] and same["status"] == "pass"
  # A consumer 91 days older is outside the 3-week forward window: the crash is reported, not a violation.
  forward = m["cells"]["jaxport 0.1.0 / jax 0.10.2"]["0.9.2"]
  assert forward["window"]["direction"] == "forward" and not forward["must_pass"]
  assert forward["fail"] == 1 and forward["failures"][0]["stage"] == "process"
  assert forward["status"] == "warn" and not matrix.violates_policy(forward)


def test_a_failure_inside_the_window_is_a_policy_violation():
  m = matrix.build_matrix({"0.10.2": [_row("a", {"jax": "0.10.0"}, "fail", "boom")]}, TODAY)
  cell = m["cells"]["jax 0.10.0"]["0.10.2"]
  assert cell["must_pass"] and cell["status"] == "fail" and matrix.violates_policy(cell)
  assert "1 POLICY" not in matrix.render_text(m) and "0/1 * POLICY" in matrix.render_text(m)


def test_skipped_entries_are_counted_apart():
  rows = [_row("a", CURRENT), _row("s", CURRENT, "skip", "exported for 8 devices")]
  m = matrix.build_matrix({"0.10.2": rows}, TODAY)
  cell = m["cells"]["jaxport 0.1.0 / jax 0.10.2"]["0.10.2"]
  assert (cell["pass"], cell["not_replayed"], cell["total"], cell["status"]) == (1, 1, 2, "pass")
  assert cell["failures"] == [] and cell["skipped"][0]["why"] == "exported for 8 devices"
  assert "| 1/1 (+1 skipped) * |" in matrix.render_text(m)


def test_a_matrix_cell_takes_the_judges_status():
  from jaxport.harness._judge._release_runs import cell_status, judge_row
  rows = [_row("a", {"jax": "0.10.0"}), _row("b", {"jax": "0.10.0"}, "crash", "died"),
          _row("c", {"jax": "0.10.0"}, "skip", "8 devices")]
  for inside, consumer in ((True, "0.10.2"), (False, "0.20.0")):
    cell = matrix.build_matrix({consumer: rows}, TODAY)["cells"]["jax 0.10.0"][consumer]
    judged = cell_status([judge_row(r, consumer) for r in rows], cell["must_pass"])
    assert cell["must_pass"] is inside and cell["status"] == str(judged)
    assert cell["status"] == ("fail" if inside else "warn")
    # The counts are the judge's statuses of the rows, and nothing else.
    assert (cell["pass"], cell["fail"], cell["not_replayed"]) == (1, 1, 1)


def test_failures_are_grouped_without_function_names():
  rows = [_row(c, OLD, "fail", f"ValueError: Function {c}_fn was exported for 0 devices") for c in "abc"]
  text = matrix.render_text(matrix.build_matrix({"0.7.2": rows}, TODAY))
  assert "- jax 0.5.3 on jax 0.7.2: 3 x ValueError: Function <f> was exported for 0 devices (a, b, c)" in text


def test_render_and_write(results, tmp_path):
  m = matrix.build_matrix(results, TODAY)
  text = matrix.render_text(m)
  assert "| producer | jax 0.9.2 | jax 0.10.2 |" in text
  assert "| jax 0.5.3 | 2/2 | 1/2 |" in text
  assert "| jaxport 0.1.0 / jax 0.10.2 | 1/2 | 2/2 * |" in text
  assert "- jax 0.5.3 on jax 0.10.2: 1 x Wrong number of arguments: expected 2 (b)" in text
  json_path, text_path = matrix.write(m, tmp_path / "out")
  assert json.loads(json_path.read_text())["cells"]["jax 0.5.3"]["0.9.2"]["pass"] == 2
  assert text_path.read_text() == text


def _store(root: Path):
  for producer, case in ((OLD, "a"), (CURRENT, "a"), (CURRENT, "b")):
    d = root / "cpu" / "fam" / case / f"2026-11-29_jax-{producer['jax']}"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"producer": producer}))
  return root


def test_select_entries_keeps_the_current_build_for_the_forward_check(tmp_path):
  root = _store(tmp_path / "store")
  assert len(_producers.select_entries(root, "cpu", False)) == 3
  assert [str(e) for e in _producers.select_entries(root, "cpu", True)] == [
      "cpu/fam/a/2026-11-29_jax-0.10.2", "cpu/fam/b/2026-11-29_jax-0.10.2"]


FAKE_REPLAYER = '''
import argparse, json, os, sys
p = argparse.ArgumentParser()
for a in ("--root", "--entries", "--out"):
  p.add_argument(a)
p.add_argument("--effects", action="append")
a = p.parse_args()
ids = [l.strip() for l in open(a.entries) if l.strip()]
with open(a.out, "a") as out:
  for i in ids:
    out.write(json.dumps({"entry_id": i, "started": True}) + "\\n"); out.flush()
    if "/b/" in i:
      os._exit(139)
    out.write(json.dumps({"entry_id": i, "stage": "compare", "matched": True}) + "\\n")
'''


def test_replay_driver_survives_a_native_crash(tmp_path, monkeypatch):
  root = _store(tmp_path / "store")
  fake = tmp_path / "fake_replayer.py"
  fake.write_text(FAKE_REPLAYER)
  monkeypatch.setattr(_replay, "REPLAYER", fake)
  ids = _producers.select_entries(root, "cpu", False)
  work = tmp_path / "work"
  work.mkdir()
  rows = _replay.replay_with(sys.executable, root, ids, work)
  assert [r["entry_id"] for r in rows] == [str(e) for e in ids]
  by_case = {r["entry_id"].split("/")[2] + r["entry_id"][-6:]: r["stage"] for r in rows}
  assert by_case == {"a0.10.2": "compare", "a-0.5.3": "compare", "b0.10.2": "process"}
  # Producers come from the manifests when the replayer could not say.
  assert rows[-1]["producer"] == CURRENT


@pytest.mark.slow  # runs the recorder (and replayer) in a child interpreter
def test_the_producer_matrix_end_to_end_with_this_interpreter(tmp_path, monkeypatch):
  from jaxport.cli import main
  from jaxport.multirelease import _envs, _record
  project = tmp_path / "project"
  project.mkdir()
  (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
                                          'jaxport_store = "store"\n')
  store = project / "store"
  monkeypatch.setattr(_envs, "ensure_venv", lambda v, root=None: Path(sys.executable))
  _record.record("0.10.2", store, [ROOT / "harness" / "cases" / "release_cases.py"],
                 cases=["release_cholesky_f32"], date="2026-02-03")
  out = tmp_path / "matrix"
  assert main(["matrix", "--producers", "--current", "--project", str(project), "--out", str(out),
               "--today", "2026-11-29"]) == 0
  m = json.loads((out / "matrix.json").read_text())
  (producer,) = m["producers"]
  cell = m["cells"][producer][m["consumers"][0]]
  assert (cell["pass"], cell["total"], cell["must_pass"], cell["status"]) == (1, 1, True, "pass")
  assert "1/1 *" in (out / "matrix.md").read_text()


def test_a_summary_keeps_counts_and_failing_cases_without_messages(results):
  summary = matrix.summarize(matrix.build_matrix(results, TODAY))
  assert summary["measured"] == TODAY.isoformat()
  cell = summary["cells"]["jax 0.5.3"]["0.10.2"]
  assert cell == {"passed": 1, "replayed": 2, "skipped": 0, "must_pass": False,
                  "failing_cases": ["b"]}
  table = matrix.summary_table(summary)
  assert "| jax 0.5.3 | 2/2 | 1/2 |" in table


def test_every_row_for_some_consumers_cites_its_cell_of_the_committed_matrix():
  from harness.tools import expected_status
  summary = matrix.load_summary(SUMMARY)
  table = expected_status.load_table()
  cited = [r for r in table.rules if r.consumers is not None]
  for rule in cited:
    cell = rule.matrix_cell
    measured = summary["cells"][f"jax {cell.producer}"][cell.consumer]
    assert (cell.passed, cell.replayed, cell.measured) == (
        measured["passed"], measured["replayed"], summary["measured"]), rule
    # The row's cases are the entries that failed in the cell it cites.
    assert set(rule.cases) <= set(measured["failing_cases"]), rule


def test_the_multi_release_page_shows_the_committed_matrix():
  page = (ROOT / "docs" / "multi-release.md").read_text()
  assert matrix.summary_table(matrix.load_summary(SUMMARY)) in page
