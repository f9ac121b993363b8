"""``tools/compare_reports.py`` takes out the keys a change alters on purpose, at any depth,
and still finds every other difference."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from tools import compare_reports  # noqa: E402

BEFORE = {"format": 2, "entries": [
    {"id": "a", "release": {"verdict": "pass", "policy_ok": True}, "findings": ["x"]},
    {"id": "b", "release": None, "findings": []}]}


def _after(**changed):
  after = json.loads(json.dumps(BEFORE))
  after["format"] = 3
  del after["entries"][0]["release"]["policy_ok"]
  after["entries"][1].update(changed)
  return after


def test_a_dropped_nested_key_and_the_format_are_ignored_and_nothing_else(tmp_path, capsys):
  paths = [tmp_path / "before.json", tmp_path / "same.json", tmp_path / "other.json"]
  for path, report in zip(paths, [BEFORE, _after(), _after(id="c")]):
    path.write_text(json.dumps(report))
  ignored = ["--ignore", "format", "--ignore", "entries[].release.policy_ok"]
  assert compare_reports.main([str(paths[0]), str(paths[1]), *ignored]) == 0
  assert compare_reports.main([str(paths[0]), str(paths[2]), *ignored]) == 1
  assert ".entries[1].id" in capsys.readouterr().out
  # Without the ignores the dropped key is a difference.
  assert compare_reports.main([str(paths[0]), str(paths[1])]) == 1
