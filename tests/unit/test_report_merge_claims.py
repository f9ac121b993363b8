"""``jaxport report merge`` claims only what it checked: without ``--project`` it fails a run
with a failing entry and says, in its output and in the merged report, what it did not check
against a store; with ``--project``, an entry the store does not hold, or whose blob there is
not the one the shard replayed, fails the merge."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import _report_helpers as helpers
from jaxport.cli import main
from jaxport.cli._report import NOT_CHECKED
from jaxport.report import load_report

ROOT = Path(__file__).resolve().parents[2]


def _shards(tmp_path: Path, entries: list[dict]) -> list[str]:
  """Reports of shards 1/N..N/N of one run, one entry each."""
  doc = helpers.run_report(entries=entries)
  paths = []
  for i, entry in enumerate(doc["entries"], 1):
    shard = {**doc, "entries": [entry], "shard": {"index": i, "count": len(entries)},
             "skips": [s for s in doc["skips"] if s["what"] == entry["entry_id"]],
             "drift": [d for d in doc["drift"] if d["entry_id"] == entry["entry_id"]]}
    path = tmp_path / f"shard-{i}.json"
    path.write_text(json.dumps(shard))
    paths.append(str(path))
  return paths


def _entry(case: str, status: str, **extra) -> dict:
  messages = ["[compatibility_break] jax reader: run failed: refused"] if status == "fail" else []
  return helpers._entry("fam", case, "0.10.2", status, [], messages, **extra)


@pytest.mark.parametrize("failing, code", [(False, 0), (True, 1)])
def test_a_merge_without_the_project_fails_a_failing_entry_and_says_what_it_did_not_check(
    tmp_path, caplog, failing, code):
  shards = _shards(tmp_path, [_entry("a", "pass"), _entry("b", "fail" if failing else "pass")])
  out = tmp_path / "merged.json"
  assert main(["report", "merge", *shards, "-o", str(out)]) == code
  assert NOT_CHECKED in caplog.text
  merged = load_report(out)
  assert NOT_CHECKED in merged.session_warnings
  for unchecked in ("coverage", "tripwire", "missing cases", "entries themselves",
                    "not checked against a store"):
    assert unchecked in NOT_CHECKED


def _project(root: Path) -> tuple[Path, str, str]:
  """A project holding one of jaxport's CPU entries: the project, the entry id, its blob's sha."""
  source = sorted((ROOT / "compat_data" / "cpu" / "feature_vjp" / "release_vjp_tanh_f32").iterdir())[-1]
  entry_id = "/".join(source.parts[-4:])
  project = root / "project"
  shutil.copytree(source, project / "golden" / entry_id)
  (project / "pyproject.toml").write_text(
      '[tool.pytest.ini_options]\njaxport_cases = ["cases"]\njaxport_store = "golden"\n'
      'pythonpath = ["."]\n')
  (project / "cases.py").write_text("def cases():\n  return []\n")
  sha = hashlib.sha256((source / "exported.bin").read_bytes()).hexdigest()
  return project, entry_id, sha


def _merge_against(project: Path, tmp_path: Path, entry: dict) -> tuple[int, list[str]]:
  shards = _shards(tmp_path, [entry])
  out = tmp_path / "merged.json"
  code = main(["report", "merge", "--project", str(project), *shards, "-o", str(out)])
  return code, list(load_report(out).session_failures)


def test_a_merge_against_the_project_fails_an_entry_the_store_does_not_hold(tmp_path):
  project, entry_id, sha = _project(tmp_path)
  forged = entry_id.replace("release_vjp_tanh_f32", "not_in_the_store")
  code, failures = _merge_against(project, tmp_path, _entry("x", "pass", entry_id=forged,
                                                            blob_sha256=sha))
  assert code == 1
  assert any(f"entry {forged} is in the shards' reports but not in the store" in f
             for f in failures), failures


def test_a_merge_against_the_project_fails_an_entry_whose_blob_differs(tmp_path):
  project, entry_id, sha = _project(tmp_path)
  code, failures = _merge_against(project, tmp_path, _entry("x", "pass", entry_id=entry_id,
                                                            blob_sha256="0" * 64))
  assert code == 1
  assert any(f"entry {entry_id}: the shard replayed the blob {'0' * 64}, the store holds {sha}"
             in f for f in failures), failures
  _, failures = _merge_against(project, tmp_path, _entry("x", "pass", entry_id=entry_id,
                                                         blob_sha256=sha))
  assert not any(entry_id in f and "blob" in f for f in failures), failures
  assert NOT_CHECKED not in load_report(tmp_path / "merged.json").session_warnings


def test_a_merge_against_the_project_fails_an_entry_that_names_no_blob(tmp_path):
  project, entry_id, _ = _project(tmp_path)
  code, failures = _merge_against(project, tmp_path, _entry("x", "pass", entry_id=entry_id))
  assert code == 1
  assert any(f"entry {entry_id}: the shard's report names no blob_sha256" in f
             for f in failures), failures
