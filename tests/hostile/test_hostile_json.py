"""JSON from files anyone may edit: refused in time linear in its size, with the file and
the limit named, however it is built to hurt the parser."""

import datetime
import json
import sys
from pathlib import Path

import pytest

from _build import REAL_ENTRIES, copy_entry
from jaxport import _json
from jaxport.cli import main
from jaxport.errors import GoldenDataError, ReportError
from jaxport.golden._manifest import MANIFEST_FILE, Manifest
from jaxport.harness._controller._session import HarnessSession
from jaxport.harness._controller._settings import Options, Settings
from jaxport.harness._project import ProjectTargets
from jaxport.report import FindingKind, load_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from _harness_paths import repo_project  # noqa: E402


def test_many_keys_are_checked_for_duplicates_in_linear_time():
  # 200,000 distinct keys: a set checks them in milliseconds, where counting each key's
  # occurrences in the list (the quadratic check) would not finish within the CI run.
  text = json.dumps({f"k{i}": i for i in range(200_000)})
  assert len(_json.parse(text)) == 200_000
  with pytest.raises(_json.JsonError, match=r"duplicate key\(s\) \['k1'\]"):
    _json.parse(text[:-1] + ', "k1": 0}')


def test_escaped_quotes_and_brackets_in_strings_do_not_count_as_nesting():
  text = json.dumps({"s": '\\"[' * 200_000 + "{" * 1000})
  assert _json.nesting(text) == 1
  assert _json.parse(text)["s"].startswith('\\"[')
  assert _json.nesting('[[["]]]"]') == 3


@pytest.mark.parametrize("text, message", [
    ('{"n": ' + "9" * 5000 + "}", "an integer of 5000 digits, more than the 100 allowed"),
    ('{"x": 1e999}', "the number 1e999 is not finite"),
    ('{"x": -Infinity}', "non-standard JSON constant -Infinity"),
    ("[" * 5000 + "]" * 5000, "nested 5000 levels deep, more than the limit "
                              "jaxport._limits.MAX_JSON_NESTING"),
])
def test_numbers_and_nesting_beyond_bounds_are_refused_naming_why(text, message):
  with pytest.raises(_json.JsonError, match=message):
    _json.parse(text)


def test_each_reader_names_its_file_and_raises_its_own_error(tmp_path):
  huge = '{"cpu": [' + "1" * 5000 + "]}"
  targets = tmp_path / "stable_targets.json"
  targets.write_text(huge)
  with pytest.raises(GoldenDataError, match=f"stable-targets file {targets}: an integer of 5000"):
    ProjectTargets.read(targets)
  targets.write_text("[" * 5000 + "]" * 5000)
  with pytest.raises(GoldenDataError, match="nested 5000 levels deep"):
    ProjectTargets.read(targets)
  report = tmp_path / "report.json"
  report.write_text('{"format": 1, "today": 1e999}')
  with pytest.raises(ReportError, match=f"{report}: the number 1e999 is not finite"):
    load_report(report)
  with pytest.raises(GoldenDataError, match="m.json: an integer of 5000 digits"):
    Manifest.from_json('{"format_version": ' + "1" * 5000 + "}", "m.json")
  with pytest.raises(GoldenDataError, match="m.json: the number 1e999 is not finite"):
    Manifest.from_json('{"imported_from": {"details": {"x": 1e999}}}', "m.json")


# --- in a store: one entry's problem, never a stopped run --------------------------------------

# Each puts a placeholder where the hostile number goes; the number is spliced into the text.
_UNREADABLE_NUMBERS = {
    "huge-integer": (lambda m: {**m, "format_version": "@"}, "1" * 5000),
    "infinite-detail": (lambda m: {**m, "imported_from": {"details": {"x": "@"}}}, "1e999"),
}


def _spoil_manifest(entry, name: str) -> None:
  path = entry.path / MANIFEST_FILE
  spoil, number = _UNREADABLE_NUMBERS[name]
  path.write_text(json.dumps(spoil(json.loads(path.read_text()))).replace('"@"', number))


@pytest.mark.parametrize("name", sorted(_UNREADABLE_NUMBERS))
def test_an_unreadable_number_in_a_manifest_is_one_entry_problem_in_audit(tmp_path, capsys, name):
  root = tmp_path / "store"
  bad = copy_entry(root, REAL_ENTRIES[0])
  copy_entry(root, REAL_ENTRIES[1])
  _spoil_manifest(bad, name)
  rc = main(["audit", str(root), "--json", "--no-drift", "--today", "2026-12-01"])
  records = {r["artifact"]: r for r in json.loads(capsys.readouterr().out)["artifacts"]}
  assert rc == 1
  assert not records[str(bad.entry_id)]["ok"]
  assert any("digits" in p or "not finite" in p for p in records[str(bad.entry_id)]["problems"])
  assert records[REAL_ENTRIES[1]]["ok"], records[REAL_ENTRIES[1]]


@pytest.mark.parametrize("name", sorted(_UNREADABLE_NUMBERS))
def test_an_unreadable_number_in_a_manifest_fails_only_that_entry_in_the_harness(tmp_path, name):
  root = tmp_path / "store"
  bad = copy_entry(root, REAL_ENTRIES[0])
  good = copy_entry(root, REAL_ENTRIES[1])
  _spoil_manifest(bad, name)
  session = HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date.today()),
      golden_root=root, partial=True),
      repo_project(root))
  try:
    assert FindingKind.GOLDEN_DATA_ERROR in session.replay(bad.entry_id).kinds
    assert FindingKind.GOLDEN_DATA_ERROR not in session.replay(good.entry_id).kinds
  finally:
    session.close()
