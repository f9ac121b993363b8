"""``jaxport record/replay --with-jax`` and ``jaxport matrix``: every project, this repository
included, goes through ``jaxport.multirelease``."""

import json
import sys
from pathlib import Path

import _report_helpers as helpers

from jaxport.cli import main


REPOSITORY = Path(__file__).resolve().parents[2]


def _simulated_release_env(monkeypatch, version: str, report_entries: list) -> tuple[list, list]:
  """Stand in for the release environment of ``version``: building it is recorded, and the
  harness run there writes a report of ``report_entries`` under that jax."""
  from jaxport.multirelease import _with_jax
  built, ran = [], []
  monkeypatch.setattr(_with_jax, "ensure_project_env",
                      lambda v, p: built.append((v, p)) or Path("/envs/py"))
  report = json.dumps({**helpers.run_report(entries=report_entries),
                       "versions": {"jax": version, "jaxlib": version, "jaxport": "0.1.0"}})

  def harness(cmd, cwd, env):
    ran.append((cmd, cwd, env))
    written = [a.split("=", 1)[1] for a in cmd if a.startswith("--compat-report=")]
    Path(written[0]).write_text(report)
    return 0

  monkeypatch.setattr(_with_jax, "run_forwarding_signals", harness)
  return built, ran


def test_replay_with_jax_in_this_repository_runs_its_harness_through_multirelease(
    monkeypatch, tmp_path):
  from jaxport.multirelease import _measured
  built, ran = _simulated_release_env(monkeypatch, "0.11.2", [])
  kept = []
  monkeypatch.setattr(_measured, "remember", lambda *a, **k: kept.append((a, k)))
  assert main(["replay", "--with-jax", "0.11.2", "--project", str(REPOSITORY),
               "--compat-report", str(tmp_path / "r.json")]) == 0
  assert built == [("0.11.2", REPOSITORY)]
  (cmd, cwd, _), = ran
  assert cmd[:5] == ["/envs/py", "-m", "pytest", str(REPOSITORY), "--compat-only"]
  assert cwd == REPOSITORY
  assert not any("harness/tools" in a for a in cmd)
  (args, _), = kept  # what it measured is kept in the repository's store, as in any project
  assert args[1] == REPOSITORY / "compat_data" and args[2] == "0.11.2"
  assert json.loads((tmp_path / "r.json").read_text())["versions"]["jax"] == "0.11.2"


def test_record_with_jax_records_the_release_cases_the_project_lists(monkeypatch, capsys):
  from jaxport.multirelease import _record
  from jaxport.multirelease._staging import ImportResult
  seen = []
  monkeypatch.setattr(_record, "record", lambda version, store, files, cases: seen.append(
      (version, store, files, cases)) or ImportResult([], ["cpu/f/c/d"], {"release_x": "why"}))
  assert main(["record", "--with-jax", "0.9.2", "--project", str(REPOSITORY), "--",
               "--case", "release_lu_f32", "--case=release_qr_f32"]) == 0
  (version, store, files, cases), = seen
  assert (version, store) == ("0.9.2", REPOSITORY / "compat_data")
  assert files == [REPOSITORY / "harness" / "cases" / "release_cases.py"]
  assert cases == ["release_lu_f32", "release_qr_f32"]
  assert capsys.readouterr().out == "exists  cpu/f/c/d\nskipped release_x: why\n"


def test_record_with_jax_of_release_cases_refuses_pytest_arguments(capsys):
  assert main(["record", "--with-jax", "0.9.2", "--project", str(REPOSITORY), "--",
               "-k", "lu"]) == 2
  assert "takes only --case ID" in capsys.readouterr().err


def test_an_older_release_replays_this_repository_with_its_effect_modules(monkeypatch, tmp_path):
  from jaxport.multirelease import _with_jax
  from jaxport.golden import GoldenStore

  class Listed:
    entry_id = "cpu/fam/case/2026-01-01_jax-0.10.2"

  monkeypatch.setattr(GoldenStore, "entries", lambda self, platform: [Listed()])
  monkeypatch.setattr(_with_jax._envs, "ensure_venv", lambda v: Path(f"/envs/{v}/python"))
  seen = []
  monkeypatch.setattr(_with_jax, "replay_with", lambda python, store, ids, work, effects: seen.append(
      effects) or [{"entry_id": ids[0], "outcome": "pass", "stage": "compare"}])
  assert main(["replay", "--with-jax", "0.8.3", "--project", str(REPOSITORY), "--",
               f"--compat-cache-dir={tmp_path}"]) == 0
  assert seen == [{"harness.cases._effects":
                   str(REPOSITORY / "harness" / "cases" / "_effects.py")}]


def test_without_the_flag_the_harness_runs_as_before(monkeypatch, tmp_path, fake_harness_run):
  calls = fake_harness_run()
  monkeypatch.chdir(tmp_path)
  assert main(["replay", "--platform", "cpu"]) == 0
  assert calls[0][0][1:5] == ["-m", "pytest", str(tmp_path), "--compat-only"]


def _project(root: Path) -> Path:
  """A downstream project (not a jaxport checkout) with one CPU entry in its store."""
  (root / "pyproject.toml").write_text('[project]\nname = "downstream"\n\n'
                                       '[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
                                       'jaxport_store = "golden"\n')
  entry = root / "golden" / "cpu" / "fam" / "case" / "2026-01-01_jax-0.10.2"
  entry.mkdir(parents=True)
  return root


def test_in_a_project_a_served_release_runs_its_harness_in_the_release_environment(
    monkeypatch, tmp_path):
  from jaxport.multirelease import _with_jax
  project = _project(tmp_path)
  built, ran = [], []
  monkeypatch.setattr(_with_jax, "ensure_project_env",
                      lambda v, p: built.append((v, p)) or Path("/envs/py"))
  report = json.dumps({**helpers.run_report(entries=[]),
                       "versions": {"jax": "0.11.2", "jaxlib": "0.11.2", "jaxport": "0.1.0"}})

  def harness(cmd, cwd, env):  # the run under the release writes its report
    ran.append((cmd, cwd, env))
    Path(cmd[-3].split("=", 1)[1]).write_text(report)
    return 0

  monkeypatch.setattr(_with_jax, "run_forwarding_signals", harness)
  monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
  assert main(["replay", "--with-jax", "0.11.2", "--project", str(project), "--", "-n", "2"]) == 0
  assert built == [("0.11.2", project)]
  (cmd, cwd, env), = ran
  assert cmd[:5] == ["/envs/py", "-m", "pytest", str(project), "--compat-only"]
  assert cmd[-2:] == ["-n", "2"] and cwd == project
  assert "PYTHONPATH" not in env and env["JAX_PLATFORMS"] == "cpu"


def test_in_a_project_an_older_release_replays_with_its_own_export(monkeypatch, tmp_path, capsys):
  from jaxport.multirelease import _with_jax
  from jaxport.golden import GoldenStore
  project = _project(tmp_path)

  class Listed:
    entry_id = "cpu/fam/case/2026-01-01_jax-0.10.2"

  monkeypatch.setattr(GoldenStore, "entries", lambda self, platform: [Listed()])
  monkeypatch.setattr(_with_jax._envs, "ensure_venv", lambda v: Path(f"/envs/{v}/python"))
  rows = {"pass": {"stage": "compare", "matched": True},
          "fail": {"stage": "deserialize", "error": "too old"}}
  for outcome, code in (("pass", 0), ("fail", 1)):
    seen = []
    monkeypatch.setattr(_with_jax, "replay_with", lambda python, store, ids, work, effects: seen.append(
        (python, store, ids, effects)) or [{"entry_id": ids[0], **rows[outcome]}])
    report = tmp_path / f"{outcome}.json"
    assert main(["replay", "--with-jax", "0.8.3", "--project", str(project),
                 "--compat-report", str(report)]) == code
    assert seen == [("/envs/0.8.3/python", project / "golden", [Listed.entry_id], {})]
    out = capsys.readouterr().out
    # The judge's status of each entry, counted.
    assert f"jax 0.8.3: 1 entries: 1 {outcome}\n" in out
    assert ("at deserialize: too old" in out) == bool(code)
    assert '"status": "%s"' % outcome in report.read_text()


def test_the_matrix_plan_is_a_ci_job_matrix_of_releases_and_shards(capsys):
  import json
  assert main(["matrix", "--releases", "0.8.3..0.11.0", "--shards", "2", "--plan", "--json"]) == 0
  cells = json.loads(capsys.readouterr().out)["include"]
  by_release: dict = {}
  for c in cells:
    by_release.setdefault(c["jax"], []).append(c)
  assert list(by_release) == ["0.8.3", "0.9.0", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.2",
                              "0.11.0"]
  # Before jaxport's oldest jax: one cell, replayed by the release's own jax.export.
  assert [c["shard"] for c in by_release["0.8.3"]] == [None]
  assert [c["shard"] for c in by_release["0.9.2"]] == ["1/2", "2/2"]
  assert {c["python"] for c in by_release["0.10.2"]} == {"3.11"}
  assert {c["python"] for c in by_release["0.11.0"]} == {"3.13"}
  last = by_release["0.11.0"][1]
  assert last["report"] == "reports/jax-0.11.0-shard-2-of-2.json"
  assert last["command"] == ("jaxport replay --with-jax 0.11.0 --project . --compat-report "
                             "reports/jax-0.11.0-shard-2-of-2.json -- --compat-shard=2/2")
  assert main(["matrix", "--releases", "0.11.0..0.11.0", "--plan"]) == 0
  assert capsys.readouterr().out == ("jaxport replay --with-jax 0.11.0 --project . "
                                     "--compat-report reports/jax-0.11.0.json\n")


def test_the_matrix_runs_each_cell_here_and_fails_with_any(monkeypatch, tmp_path, capsys):
  from jaxport.multirelease import _with_jax
  (tmp_path / "p").mkdir()
  project = _project(tmp_path / "p")
  ran = []

  def fake_run(action, *, version, platform, report, project, config, extra, pytest_command):
    ran.append((version, report, extra, pytest_command("/py", report)[0]))
    return 1 if version == "0.12.0" and extra else 0

  monkeypatch.setattr(_with_jax, "run", fake_run)
  out = tmp_path / "reports"
  assert main(["matrix", "--releases", "0.12.0..0.12.0.1", "--shards", "2", "--project",
               str(project), "--out", str(out)]) == 1
  assert [(v, e) for v, _, e, _ in ran] == [
      ("0.12.0", ["--compat-shard=1/2"]), ("0.12.0", ["--compat-shard=2/2"]),
      ("0.12.0.1", ["--compat-shard=1/2"]), ("0.12.0.1", ["--compat-shard=2/2"])]
  assert ran[0][1] == f"{out}/jax-0.12.0-shard-1-of-2.json" and ran[0][3] == "/py"
  text = capsys.readouterr().out
  assert "jax 0.12.0 shard 1/2: failed (exit 1)" in text and "jax 0.12.0.1 shard 2/2: passed" in text


def test_the_matrix_plan_takes_tensorflow_releases_as_consumers(capsys):
  import json
  assert main(["matrix", "--releases", "0.11.0..0.11.0", "--tf-releases", "2.19,2.21,2.21.0",
               "--plan", "--json"]) == 0
  cells = json.loads(capsys.readouterr().out)["include"]
  assert [c.get("jax") or f"tf {c['tf']}" for c in cells] == ["0.11.0", "tf 2.19.1", "tf 2.21.0"]
  assert cells[2]["command"] == ("jaxport replay --with-tf 2.21.0 --project . --compat-report "
                                 "reports/tf-2.21.0.json")
  assert cells[2]["python"] == "3.13" and cells[1]["python"] == "3.11"
  assert main(["matrix", "--tf-releases", "2.17", "--plan"]) == 2
  err = capsys.readouterr().err
  assert "--tf-releases" in err and "2.21.0" in err  # the served releases named


def test_the_matrix_refuses_no_shards(capsys):
  assert main(["matrix", "--releases", "0.11.0..0.11.0", "--shards", "0", "--plan"]) == 2
  assert "--shards 0: expected a whole number of 1 or more" in capsys.readouterr().err


def test_the_matrix_refuses_an_empty_range(capsys):
  assert main(["matrix", "--releases", "0.12.0..0.11.0", "--plan"]) == 2
  assert "the range holds no installable release" in capsys.readouterr().err


def test_with_a_cache_dir_the_measurements_go_there_not_into_the_project(monkeypatch, tmp_path):
  from jaxport.multirelease import _with_jax
  from jaxport.golden import GoldenStore
  from jaxport.releases import measured_path
  project = _project(tmp_path)

  class Listed:
    entry_id = "cpu/fam/case/2026-01-01_jax-0.10.2"

  monkeypatch.setattr(GoldenStore, "entries", lambda self, platform: [Listed()])
  monkeypatch.setattr(_with_jax._envs, "ensure_venv", lambda v: Path(f"/envs/{v}/python"))
  monkeypatch.setattr(_with_jax, "replay_with", lambda python, store, ids, work, effects: [
      {"entry_id": ids[0], "stage": "compare", "matched": True}])
  cache = tmp_path / "elsewhere" / "cache"
  for extra in ([f"--compat-cache-dir={cache}"], ["--compat-cache-dir", str(cache)]):
    assert main(["replay", "--with-jax", "0.8.3", "--project", str(project), "--", *extra]) == 0
    assert (cache / "measured-releases.json").is_file()
    assert not (project / ".jaxport_cache").exists()
  assert measured_path(project, cache) == cache / "measured-releases.json"
  assert main(["replay", "--with-jax", "0.8.3", "--project", str(project)]) == 0
  assert measured_path(project).is_file()
