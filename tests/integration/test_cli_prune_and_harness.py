"""`jaxport prune`, `jaxport record`/`replay`, and the installed console script."""

import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from jaxport.golden import EntryId
from jaxport.cli import _harness_run, main
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.golden._store import GoldenStore
from _python_child import run_cli

REPO = Path(__file__).resolve().parents[2]
TODAY = datetime.date(2026, 6, 1)
JAX = jax.__version__  # entries are named after the recording jax


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def _entry(store, case_id, days_ago):
  m = Manifest(case_id=case_id, family="f", platform="cpu",
               record_date=TODAY - datetime.timedelta(days=days_ago),
               producer=Producer.current(), calling_convention_version=10, serialization_version=3,
               custom_call_targets=(), polymorphic_shapes=None, constraints=None,
               lowering_only=True, comparison=Comparison("none"))
  return store.write_entry(m, b"blob", [], None, "module {}")


@pytest.fixture
def store(tmp_path):
  s = GoldenStore(tmp_path / "compat_data")
  _entry(s, "old", 400)
  _entry(s, "edge", 180)
  _entry(s, "new", 3)
  return s


def test_prune_is_a_dry_run_by_default(store, capsys):
  rc, out, _ = run(capsys, "prune", "--older-than-days", "180", "--root", str(store.root),
                   "--today", TODAY.isoformat())
  assert rc == 0
  assert out.splitlines() == [
      f"would remove cpu/f/old/2025-04-27_jax-{JAX}",
      "1 entry older than 180 days as of 2026-06-01; pass --yes to remove them."]
  assert len(store.entries()) == 3


def test_prune_yes_removes_and_reports_json(store, capsys):
  rc, out, _ = run(capsys, "prune", "--older-than-days", "100", "--root", str(store.root),
                   "--today", TODAY.isoformat(), "--yes", "--json")
  report = json.loads(out)
  assert rc == 0 and report["dry_run"] is False
  assert report["removed"] == [f"cpu/f/edge/2025-12-03_jax-{JAX}", f"cpu/f/old/2025-04-27_jax-{JAX}"]
  assert [e.entry_id.case_id for e in store.entries()] == ["new"]
  assert not (store.root / "cpu" / "f" / "old").exists()


def test_prune_superseded_removes_what_an_update_left_behind(store, capsys):
  new = store.entry(EntryId.parse(f"cpu/f/new/{(TODAY - datetime.timedelta(days=3)).isoformat()}_jax-{JAX}"))
  m = new.manifest
  updated = store.write_entry(store.next_revision(m), new.blob(), new.inputs(),
                              new.expected_outputs(), new.module_text())
  rc, out, _ = run(capsys, "prune", "--older-than-days", "365", "--superseded", "--root",
                   str(store.root), "--today", TODAY.isoformat())
  assert rc == 0
  assert out.splitlines() == [
      f"would remove {new.entry_id}", f"would remove cpu/f/old/2025-04-27_jax-{JAX}",
      "2 entries older than 365 days as of 2026-06-01 or superseded; pass --yes to remove them."]
  rc, out, _ = run(capsys, "prune", "--older-than-days", "365", "--superseded", "--root",
                   str(store.root), "--today", TODAY.isoformat(), "--yes")
  assert [list(e.entry_id.parts[2:]) for e in store.entries()] == [
      ["edge", f"2025-12-03_jax-{JAX}"], ["new", updated.entry_id.folder]]


def test_prune_superseded_alone_needs_no_age_rule(store, capsys):
  new = store.entry(EntryId.parse(f"cpu/f/new/{(TODAY - datetime.timedelta(days=3)).isoformat()}_jax-{JAX}"))
  store.write_entry(store.next_revision(new.manifest), new.blob(), new.inputs(),
                    new.expected_outputs(), new.module_text())
  rc, out, _ = run(capsys, "prune", "--superseded", "--root", str(store.root),
                   "--today", TODAY.isoformat())
  assert rc == 0
  assert out.splitlines() == [f"would remove {new.entry_id}",
                              "1 entry superseded; pass --yes to remove them."]


def test_prune_one_case_removes_every_entry_of_it_and_narrows_the_other_rules(store, capsys):
  rc, out, _ = run(capsys, "prune", "--case", "new", "--root", str(store.root),
                   "--today", TODAY.isoformat(), "--yes")
  assert rc == 0 and out.splitlines()[-1] == "1 entry of case new."
  assert sorted(e.entry_id.case_id for e in store.entries()) == ["edge", "old"]
  rc, out, _ = run(capsys, "prune", "--case", "edge", "--older-than-days", "0", "--root",
                   str(store.root), "--today", TODAY.isoformat())
  assert out.splitlines() == [f"would remove cpu/f/edge/2025-12-03_jax-{JAX}",
                              "1 entry older than 0 days as of 2026-06-01, of case edge; pass "
                              "--yes to remove them."]


def test_prune_without_a_rule_is_a_usage_error_naming_the_rules(store, capsys):
  with pytest.raises(SystemExit) as exc:
    main(["prune", "--root", str(store.root)])
  assert exc.value.code == 2
  err = capsys.readouterr().err
  assert "say which entries to remove" in err and "--case CASE_ID" in err
  assert "jaxport prune: error:" in err and "usage: jaxport prune" in err
  assert len(store.entries()) == 3


def test_prune_rejects_bad_arguments(store, capsys):
  with pytest.raises(SystemExit) as exc:
    main(["prune", "--older-than-days", "-3", "--root", str(store.root)])
  assert exc.value.code == 2
  assert "expected a non-negative integer, got '-3'" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    main(["prune", "--older-than-days", "3", "--bogus"])
  err = capsys.readouterr().err
  assert "jaxport prune: error: unrecognized arguments: --bogus" in err
  assert "usage: jaxport prune" in err


@pytest.mark.parametrize("argv, command", [
    (["report", "render", "run.json", "-o", "page.html"], "jaxport report render"),
    (["report", "merge", "a.json", "-o", "run.json", "--bogus"], "jaxport report merge"),
    (["inspect", "x.bin", "--bogus"], "jaxport inspect"),
])
def test_an_unknown_argument_is_refused_with_its_own_commands_usage(argv, command, capsys):
  with pytest.raises(SystemExit) as exc:
    main(argv)
  assert exc.value.code == 2
  err = capsys.readouterr().err
  unknown = "--bogus" if argv[-1] == "--bogus" else "-o page.html"
  assert f"{command}: error: unrecognized arguments: {unknown}" in err
  assert f"usage: {command} " in err


def test_prune_with_project_prunes_the_store_its_configuration_names(tmp_path, monkeypatch,
                                                                    capsys):
  project = tmp_path / "proj"
  project.mkdir()
  (project / "pyproject.toml").write_text(
      '[tool.pytest.ini_options]\njaxport_cases = ["mycases"]\njaxport_store = "golden"\n')
  store = GoldenStore(project / "golden")
  _entry(store, "old", 400)
  _entry(store, "new", 3)
  monkeypatch.chdir(tmp_path)  # no compat_data here: the store comes from the project
  rc, out, _ = run(capsys, "prune", "--project", str(project), "--older-than-days", "180",
                   "--today", TODAY.isoformat(), "--yes")
  assert rc == 0
  assert out.splitlines() == [f"removed cpu/f/old/2025-04-27_jax-{JAX}",
                              "1 entry older than 180 days as of 2026-06-01."]
  assert [e.entry_id.case_id for e in store.entries()] == ["new"]
  # --root still names another store; a project without a recorded store says how to get one.
  rc, out, _ = run(capsys, "prune", "--project", str(project), "--root", str(store.root),
                   "--older-than-days", "1", "--today", TODAY.isoformat())
  assert rc == 0 and "would remove cpu/f/new/" in out
  shutil.rmtree(store.root)
  rc, _, err = run(capsys, "prune", "--project", str(project), "--older-than-days", "1")
  assert rc == 2 and f"jaxport_store of the project in {project} names {store.root}" in err
  assert "jaxport record --project" in err


def test_record_and_replay_run_the_golden_items_of_the_named_project_never_one_above(
    monkeypatch, tmp_path, fake_harness_run):
  calls = fake_harness_run(returncode=3)
  sub = tmp_path / "compat_data" / "cpu"
  sub.mkdir(parents=True)
  monkeypatch.chdir(sub)
  assert main(["record", "--platform", "cpu", "-k", "qr", "-x"]) == 3
  assert main(["replay", "--project", str(tmp_path), "--compat-report", "r.json", "--",
               "-k", "eig"]) == 3
  (rec_cmd, rec_cwd), (rep_cmd, rep_cwd) = calls
  assert rec_cwd == sub and rep_cwd == tmp_path
  progress = list(_harness_run.PROGRESS_ARGS)
  assert rec_cmd[1:] == ["-m", "pytest", str(sub), "--compat-only", "--compat-platform=cpu",
                         *progress, "--compat-record", "-k", "qr", "-x"]
  assert rep_cmd[1:] == ["-m", "pytest", str(tmp_path), "--compat-only", "--compat-platform=cpu",
                         *progress, f"--compat-report={sub / 'r.json'}", "-k", "eig"]
  assert rec_cmd[0] == sys.executable


def test_a_double_dash_anywhere_only_separates_pytests_arguments(monkeypatch, tmp_path,
                                                                 fake_harness_run):
  calls = fake_harness_run(returncode=0)
  monkeypatch.chdir(tmp_path)
  assert main(["replay", "-k", "eig", "--", "-x"]) == 0
  assert main(["replay", "--project", str(tmp_path), "-x", "--", "-k", "eig", "--"]) == 0
  (first, _), (second, _) = calls
  assert "--" not in first and "--" not in second
  assert first[-3:] == ["-k", "eig", "-x"] and second[-3:] == ["-x", "-k", "eig"]


def test_a_project_that_does_not_exist_is_an_error_naming_it(monkeypatch, tmp_path, capsys):
  monkeypatch.chdir(tmp_path)
  assert main(["replay", "--project", str(tmp_path / "nowhere")]) == 2
  assert f"--project {tmp_path / 'nowhere'}: no such directory" in capsys.readouterr().err


@pytest.mark.slow
def test_replay_reaches_the_real_harness_with_its_flags(monkeypatch, capsys):
  monkeypatch.chdir(REPO / "compat_data")
  proc = run_cli(["record", "--", "--help"], cwd=REPO / "compat_data", timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  for flag in (_harness_run.RECORD_FLAG, _harness_run.PLATFORM_FLAG, _harness_run.REPORT_FLAG):
    assert flag in proc.stdout


def test_console_script_runs(tmp_path):
  script = shutil.which("jaxport", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                          os.environ.get("PATH", "")]))
  assert script is not None, "the jaxport console script is not installed"
  store = GoldenStore(tmp_path / "compat_data")
  _entry(store, "old", 400)
  proc = subprocess.run([script, "prune", "--older-than-days", "30", "--root", str(store.root),
                         "--today", TODAY.isoformat(), "--json"],
                        capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  assert json.loads(proc.stdout)["would_remove"] == [f"cpu/f/old/2025-04-27_jax-{JAX}"]
