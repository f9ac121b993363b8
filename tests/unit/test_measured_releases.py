"""What replays under other jax releases measured for a project's entries: kept as strict data,
tied to the entry's blob, and taking precedence over the release table's prediction."""

from __future__ import annotations

import datetime
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

import jaxport.releases as rel
from jaxport.errors import JaxportError, ReleaseTableError
from jaxport.golden import EntryId
from jaxport.harness._judge import _consumers
from jaxport.multirelease import _measured as keeping
from jaxport.multirelease._measured import write_measured
from jaxport.releases import MeasuredRun, MeasuredRuns, MeasuredServe, read_measured
from _artifact_features import artifact_features
from jaxport.releases._runs_on import CustomCall

ROOT = Path(__file__).resolve().parents[2]
DAY = datetime.date(2026, 12, 4)
ENTRY = EntryId.parse("cpu/fam/case/2026-12-01_jax-0.10.2")


def _id(case: str) -> str:
  """The text of an entry id of case ``case``."""
  return f"cpu/fam/{case}/2026-12-01_jax-0.10.2"


def _run(release: str, runs: bool, sha: str = "s1", detail: str = "") -> MeasuredRun:
  return MeasuredRun(release, runs, detail or ("ran" if runs else "deserialize: refused"), DAY, sha,
                     "0.1.0")


def test_measurements_round_trip_through_the_project_file(tmp_path):
  assert read_measured(tmp_path) == MeasuredRuns()  # none yet
  kept = MeasuredRuns().with_runs(ENTRY, [_run("0.11.2", True), _run("0.8.3", False)])
  path = write_measured(tmp_path, kept)
  assert path == tmp_path / rel.MEASURED_FILE
  assert read_measured(tmp_path) == kept
  newer = kept.with_runs(ENTRY, [_run("0.8.3", True)])
  assert [r.runs for r in newer.of(ENTRY, "s1")] == [True, True]  # the newer one wins


def _serve(release: str, served: bool, sha: str = "s1") -> MeasuredServe:
  return MeasuredServe(release, served, None if served else "calling_convention",
                       "served" if served else "calling convention 10 is outside 4 to 9", DAY,
                       sha, "0.1.0")


def test_tensorflow_records_round_trip_beside_the_jax_ones_and_an_older_file_reads(tmp_path):
  kept = MeasuredRuns().with_runs(ENTRY, [_run("0.11.2", True)]).with_served(
      ENTRY, [_serve("2.21.0", True), _serve("2.19.1", False), _serve("2.20.0", True, "old")])
  write_measured(tmp_path, kept)
  back = read_measured(tmp_path)
  assert back == kept and back.of(ENTRY, "s1") == kept.of(ENTRY, "s1")
  assert [(r.release, r.served) for r in back.served_by(ENTRY, "s1")] == [
      ("2.19.1", False), ("2.21.0", True)]  # oldest first; another blob's not taken
  assert back.without_served(ENTRY, "2.19.1").served_by(ENTRY, "s1")[0].release == "2.21.0"
  # A file of format 2 (before TensorFlow's records) reads, with none of them.
  doc = json.loads((tmp_path / rel.MEASURED_FILE).read_text())
  assert doc["format"] == 3
  (tmp_path / rel.MEASURED_FILE).write_text(json.dumps({"format": 2, "entries": doc["entries"]}))
  older = read_measured(tmp_path)
  assert older.tf == {} and older.of(ENTRY, "s1") == kept.of(ENTRY, "s1")


def test_measurements_of_another_blob_are_not_taken_and_come_oldest_release_first():
  kept = MeasuredRuns().with_runs(ENTRY, [_run("0.11.2", True), _run("0.9.2", True),
                                          _run("0.10.0", True, sha="old")])
  assert [r.release for r in kept.of(ENTRY, "s1")] == ["0.9.2", "0.11.2"]
  assert kept.of(ENTRY, None) == () and kept.of(EntryId.parse("cpu/other/x/2026-01-01_jax-0.9.2"), "s1") == ()


def _record(**changes) -> dict:
  return {"runs": True, "detail": "", "date": "2026-12-04", "blob_sha256": "s",
          "judged_by": "0.1.0", **changes}


def _served(**changes) -> dict:
  return {"served": False, "reason": "custom_call", "detail": "refused", "date": "2026-12-04",
          "blob_sha256": "s", "judged_by": "0.1.0", **changes}


@pytest.mark.parametrize("doc, where", [
    ({"format": 4, "entries": {}, "tf": {}}, "format: expected 3 (or 2)"),
    ({"format": 1, "entries": {}, "tf": {}},
     "format: expected 3 (or 2), got 1 (its records do not name the jaxport release that judged "
     "them)"),
    ({"format": 2}, "missing entries"),
    ({"format": 3, "entries": {}}, "missing tf"),
    ({"format": 2, "entries": {}, "tf": {}}, "unknown key 'tf'"),
    ({"format": 3, "entries": {}, "tf": {str(ENTRY): {"2.21.0": _record()}}},
     f"tf.{ENTRY}.2.21.0: missing served"),
    ({"format": 3, "entries": {}, "tf": {str(ENTRY): {"2.21.0": _served(reason="no way")}}},
     f"tf.{ENTRY}.2.21.0.reason: expected a refusal's name"),
    ({"format": 3, "entries": {}, "tf": {str(ENTRY): {"2.21.0": _served(served=True)}}},
     f"tf.{ENTRY}.2.21.0.reason: a served entry has no refusal"),
    ({"format": 3, "entries": {}, "tf": {str(ENTRY): {"latest": _served()}}},
     f"tf.{ENTRY}: 'latest' is not a TensorFlow release"),
    ({"format": 2, "entries": {str(ENTRY): {"0.11.2": _record(runs="yes")}}},
     f"entries.{ENTRY}.0.11.2.runs: expected bool"),
    ({"format": 2, "entries": {str(ENTRY): {"0.11.2": _record(date="today")}}},
     "0.11.2.date: expected a date"),
    ({"format": 2, "entries": {str(ENTRY): {"0.11.2": {k: v for k, v in _record().items()
                                                  if k != "judged_by"}}}},
     "missing judged_by"),
    ({"format": 2, "entries": [], "extra": 1}, "unknown key 'extra'"),
    ({"format": 2, "entries": {str(ENTRY): {"latest": _record()}}},
     f"entries.{ENTRY}: 'latest' is not a jax release")])
def test_a_malformed_measurements_file_is_refused_naming_the_key(tmp_path, doc, where):
  path = tmp_path / rel.MEASURED_FILE
  path.parent.mkdir()
  path.write_text(json.dumps(doc))
  with pytest.raises(ReleaseTableError, match=re.escape(where)) as e:
    read_measured(tmp_path)
  assert str(e.value).startswith(str(rel.MEASURED_FILE)) and "remove the file" in str(e.value)
  assert issubclass(ReleaseTableError, JaxportError)


def test_a_measurement_takes_precedence_over_the_prediction_both_ways():
  own = artifact_features(custom_calls=(CustomCall("tinyops_scaled_add", 2),))
  predicted = rel.runs_on(own)  # a target no release registers: no release, predicted
  assert predicted.releases["cpu"] == ()
  measured = predicted.with_measured("cpu", [_run("0.11.2", True), _run("0.12.0.1", True)])
  assert measured.releases["cpu"] == ("0.11.2", "0.12.0.1")
  assert measured.why_not("cpu", "0.11.2") is None
  assert ("measured, taking precedence over the table: 0.11.2 runs (judged by jaxport 0.1.0), "
          "0.12.0.1 runs (judged by jaxport 0.1.0)") in measured.summary("cpu")
  plain = rel.runs_on(artifact_features())
  assert plain.covers("cpu", "0.10.2")
  refused = plain.with_measured("cpu", [_run("0.10.2", False, detail="run: wrong operands")])
  assert not refused.covers("cpu", "0.10.2")
  assert refused.why_not("cpu", "0.10.2") == "measured: run: wrong operands"
  assert set(plain.releases["cpu"]) - set(refused.releases["cpu"]) == {"0.10.2"}
  assert plain.with_measured("cpu", []) is plain


def test_min_consumer_follows_the_measurement():
  own = artifact_features(custom_calls=(CustomCall("tinyops_scaled_add", 2),))
  measured = _consumers.measured_releases()
  predicted = rel.runs_on(own)
  found = _consumers.min_consumer_findings("0.12.0.1", "cpu", predicted, measured, "0.12.0.1")
  assert [f.kind for f in found] == ["below_min_consumer"]
  ran = predicted.with_measured("cpu", [_run("0.12.0.1", True)])
  assert _consumers.min_consumer_findings("0.12.0.1", "cpu", ran, measured, "0.12.0.1") == []
  failed = rel.runs_on(artifact_features()).with_measured("cpu", [_run("0.11.2", False, detail="x: y")])
  found = _consumers.min_consumer_findings("0.11.2", "cpu", failed, measured, "0.11.2")
  assert "does not run on jax 0.11.2 (cpu): measured: x: y" in found[0].message


def test_replayer_rows_become_measurements():
  rows = [{"entry_id": _id("a"), "stage": "compare", "matched": True},
          {"entry_id": _id("b"), "stage": "deserialize", "error": "too old"},
          {"entry_id": _id("c"), "stage": "devices", "not_replayable": "two devices"},
          {"entry_id": _id("d"), "stage": "compare", "not_compared": "own"},
          {"entry_id": _id("e"), "stage": "process", "error": "died"},
          {"entry_id": _id("f"), "stage": "verify", "error": "sha256"},
          {"entry_id": _id("g"), "stage": "compare", "matched": False, "problems": "off by 1"},
          {"entry_id": _id("h"), "stage": "teleport"}]
  got = keeping.verdicts_of_rows(rows, "0.8.3")
  assert {e.case_id: v for e, v in got.items()} == {
      "a": (True, "replayed by jax 0.8.3's own jax.export"),
      "b": (False, "[compatibility_break] deserialize: too old"), "c": None,
      "d": (True, "run by jax 0.8.3's own jax.export: own"), "e": None, "f": None,
      "g": (False, "[numerics_change] compare: off by 1"), "h": None}


def test_a_measured_release_record_takes_the_judges_status():
  from jaxport._vocabulary import Status
  from jaxport.harness._judge._release_runs import judge_row
  rows = {"reproduced": ({"entry_id": _id("a"), "stage": "compare", "matched": True}, Status.PASS),
          "own checker": ({"entry_id": _id("b"), "stage": "compare", "not_compared": "own"},
                          Status.PASS),
          "broke": ({"entry_id": _id("c"), "stage": "run", "error": "no kernel"}, Status.FAIL),
          "crashed": ({"entry_id": _id("d"), "stage": "process", "error": "died"}, Status.FAIL),
          "not replayable": ({"entry_id": _id("e"), "stage": "devices", "not_replayable": "2"}, None),
          "unreadable row": ({"entry_id": _id("f"), "stage": 3}, Status.FAIL)}
  for name, (row, status) in rows.items():
    run = judge_row(row, "0.8.3")
    assert run.status is status, (name, run)
    # What is kept as measured is what the judge says of the row, and nothing else.
    kept = keeping.verdicts_of_rows([row], "0.8.3")[EntryId.parse(row["entry_id"])]
    assert kept == (None if run.runs is None else (run.runs, run.detail)), name
    assert (kept is not None and kept[0]) == (status is Status.PASS), name


def test_remembering_ties_each_measurement_to_the_entrys_blob(tmp_path):
  source = next((ROOT / "compat_data" / "cpu").glob("*/*/*_jax-0.10.2"))
  entry_id = EntryId.from_folder(source)
  store = tmp_path / "store"
  shutil.copytree(source, store / str(entry_id))
  missing = EntryId.parse("cpu/no/such/2026-01-01_jax-0.9.2")
  assert keeping.remember(tmp_path, store, "0.11.2", {entry_id: (True, "ran"),
                                                      missing: (True, "")}) == 1
  sha = json.loads((source / "manifest.json").read_text())["files"]["exported.bin"]
  (run,) = read_measured(tmp_path).of(entry_id, sha)
  assert (run.release, run.runs, run.detail) == ("0.11.2", True, "ran")
  # A later replay there that could not measure it takes the old measurement away.
  assert keeping.remember(tmp_path, store, "0.11.2", {entry_id: None}) == 0
  assert read_measured(tmp_path).of(entry_id, sha) == ()


def _under(jax: str, doc: dict) -> dict:
  """A run report ``doc`` as a run under jax ``jax`` writes it."""
  doc["versions"] = {**doc["versions"], "jax": jax, "jaxlib": jax}
  return doc


def test_a_harness_report_becomes_measurements_from_its_readers_findings_only(tmp_path):
  import _report_helpers as helpers
  path = tmp_path / "run.json"
  path.write_text(json.dumps(_under("0.11.2", helpers.run_report())))
  got = keeping.verdicts_of_report(path, "0.11.2")
  by_case = {entry_id.case_id + "@" + str(entry_id).rsplit("-", 1)[1]: v
             for entry_id, v in got.items()}
  # The release's own reader's break: it does not run there. jaxport's reader's break, and a
  # lowering drift of today's export, say nothing of the release.
  assert by_case["qr_f32@0.10.2"][0] is False
  assert by_case["qr_f32@0.10.2"][1].startswith("[compatibility_break] jax reader: output 0")
  assert by_case["release_lu_f32@0.4.30"][0] is True
  assert by_case["svd_f32@0.9.2"] == (True, "replayed by the harness under jax 0.11.2")
  assert by_case["eigh_f32@0.10.2"][0] is True and by_case["cholesky_f32@0.10.2"][0] is True
  # A worker's failure, or a run without the release's reader, measured nothing.
  doc = _under("0.11.2", helpers.run_report())
  doc["entries"][0]["findings"] = [{"kind": "compatibility_break", "subject": "worker",
                                    "message": "the case modules did not import", "reader": None,
                                    "detail": None}]
  path.write_text(json.dumps(doc))
  assert keeping.verdicts_of_report(path, "0.11.2")[EntryId.parse(doc["entries"][0]["entry_id"])] is None
  doc["readers"] = ["jaxport"]
  path.write_text(json.dumps(doc))
  assert set(keeping.verdicts_of_report(path, "0.11.2").values()) == {None}


@pytest.mark.slow  # the release replayer in a child interpreter, with this jax
def test_the_release_replayer_runs_an_entry_of_a_projects_own_checker_without_comparing(tmp_path):
  from jaxport.multirelease._replay import replay_with
  source = sorted((ROOT / "compat_data" / "cpu" / "feature_vjp" / "release_vjp_tanh_f32").iterdir())[-1]
  entry_id = "/".join(source.parts[-4:])
  shutil.copytree(source, tmp_path / "store" / entry_id)
  manifest = tmp_path / "store" / entry_id / "manifest.json"
  doc = json.loads(manifest.read_text())
  doc["comparison"]["mode"] = "my_projects_checker"
  manifest.write_text(json.dumps(doc))
  work = tmp_path / "work"
  work.mkdir()
  (row,) = replay_with(sys.executable, tmp_path / "store", [EntryId.parse(entry_id)], work)
  assert (row["stage"], row["error"], row.get("matched")) == ("compare", None, None), row
  assert "checker 'my_projects_checker' is the project's own" in row["not_compared"]
  assert keeping.verdicts_of_rows([row], "0.10.2")[EntryId.parse(entry_id)][0] is True


def test_inspect_of_a_projects_entry_shows_what_its_replays_measured(tmp_path, capsys):
  from jaxport.cli import main
  source = sorted((ROOT / "compat_data" / "cpu" / "feature_vjp" / "release_vjp_tanh_f32").iterdir())[-1]
  entry_id = "/".join(source.parts[-4:])
  project = tmp_path / "project"
  shutil.copytree(source, project / "golden" / entry_id)
  (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
                                          'jaxport_store = "golden"\npythonpath = ["."]\n')
  (project / "cases.py").write_text("def cases():\n  return []\n")
  sha = json.loads((source / "manifest.json").read_text())["files"]["exported.bin"]
  predicted = "0.11.2"
  write_measured(project, MeasuredRuns().with_runs(EntryId.parse(entry_id), [_run(predicted, False, sha=sha,
                                                                   detail="run: refused here")])
                 .with_served(EntryId.parse(entry_id), [_serve("2.21.0", True, sha),
                                                        _serve("2.19.1", False, sha)]))
  assert main(["inspect", str(project / "golden" / entry_id), "--project", str(project),
               "--json"]) == 0
  info = json.loads(capsys.readouterr().out)
  # What --with-tf runs measured, beside the jax releases' range.
  assert info["serves_on_tf"]["2.21.0"]["served"] is True
  assert info["serves_on_tf"]["2.19.1"]["reason"] == "calling_convention"
  assert predicted not in info["runs_on"]["cpu"]
  assert info["runs_on_limits"]["cpu"]["refused"][predicted] == "measured: run: refused here"
  assert f"{predicted} does not run (judged by jaxport 0.1.0)" in info["runs_on_summary"]["cpu"]
  # What a --with-jax replay measured marks the platform's range measured; without it, predicted.
  assert info["runs_on_basis"] == {"cpu": "measured"}
  assert main(["audit", str(project / "golden"), "--project", str(project)]) in (0, 1)
  out = capsys.readouterr().out
  assert f"{predicted} does not run (judged by jaxport 0.1.0)" in out
  assert "runs on cpu (measured by --with-jax replays; other releases predicted): " in out
  assert ("serves on TensorFlow (measured by --with-tf replays): 2.19.1 does not serve "
          "(calling_convention: calling convention 10 is outside 4 to 9), measured 2026-12-04 by "
          "jaxport 0.1.0; 2.21.0 serves, measured") in out
  assert main(["audit", str(project / "golden"), "--project", str(project), "--json"]) in (0, 1)
  (record,) = json.loads(capsys.readouterr().out)["artifacts"]
  assert [(v, r["served"]) for v, r in record["serves_on_tf"].items()] == [
      ("2.19.1", False), ("2.21.0", True)]
  # A new measurement there, by another jaxport, replaces it.
  write_measured(project, read_measured(project).with_runs(EntryId.parse(entry_id), [MeasuredRun(
      predicted, True, "ran", DAY, sha, "0.2.0")]))
  assert main(["inspect", str(project / "golden" / entry_id), "--project", str(project),
               "--json"]) == 0
  summary = json.loads(capsys.readouterr().out)["runs_on_summary"]["cpu"]
  assert f"{predicted} runs (judged by jaxport 0.2.0)" in summary and "0.1.0" not in summary
  assert main(["inspect", str(project / "golden" / entry_id), "--json"]) == 0
  info = json.loads(capsys.readouterr().out)
  assert predicted in info["runs_on"]["cpu"]  # the table's answer
  assert info["serves_on_tf"] == {}  # without the project, nothing measured
  assert info["runs_on_basis"] == {"cpu": "predicted"}
  assert main(["audit", str(project / "golden")]) in (0, 1)
  assert "runs on cpu (predicted from the release table, not run): " in capsys.readouterr().out
