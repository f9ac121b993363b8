"""A measured record only from a run that measured: ``replay --with-jax`` in a project, with the
release environment simulated (its harness run replaced by one that writes the report a run under
that release would, or none), keeps a record only from the report this run wrote under that
release; an entry whose files did not read, or whose project kernel did not register there, is
not measured; each record names the jaxport release that judged it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import _report_helpers as helpers
from jaxport.cli import main
from jaxport.golden import EntryId
from jaxport.multirelease import _with_jax
from jaxport.multirelease import _measured as keeping
from jaxport.releases import read_measured

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "0.11.2"
KERNEL = "myproject_softsign"


def _project(root: Path) -> tuple[Path, str]:
  """A downstream project holding one of jaxport's CPU entries in its store; its entry id."""
  source = sorted((ROOT / "compat_data" / "cpu" / "feature_vjp" / "release_vjp_tanh_f32").iterdir())[-1]
  entry_id = "/".join(source.parts[-4:])
  project = root / "project"
  shutil.copytree(source, project / "golden" / entry_id)
  (project / "pyproject.toml").write_text(
      '[project]\nname = "downstream"\n\n[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
      'jaxport_store = "golden"\n')
  return project, entry_id


def _report(entry_id: str, jax: str, status: str = "pass", messages: list[str] | None = None,
            targets: list[str] | None = None) -> dict:
  entry = helpers._entry("feature_vjp", "release_vjp_tanh_f32", "0.10.2", status, targets or [],
                         messages, entry_id=entry_id)
  doc = helpers.run_report(entries=[entry])
  doc["versions"] = {**doc["versions"], "jax": jax, "jaxlib": jax}
  return doc


def _simulate(monkeypatch, writes: dict | None, code: int = 0) -> list[str]:
  """The release environment of ``RELEASE``, simulated: its harness run writes ``writes`` as
  its report (None: it dies before writing one) and exits ``code``."""
  reports: list[str] = []

  def run(cmd, cwd, env):
    (flag,) = [a for a in cmd if a.startswith("--compat-report=")]
    path = flag.split("=", 1)[1]
    reports.append(path)
    if writes is not None:
      Path(path).write_text(json.dumps(writes))
    return code

  monkeypatch.setattr(_with_jax, "ensure_project_env", lambda v, p: Path("/envs/py"))
  monkeypatch.setattr(_with_jax, "run_forwarding_signals", run)
  return reports


def _replay(project: Path, report: Path) -> int:
  return main(["replay", "--with-jax", RELEASE, "--project", str(project),
               "--compat-report", str(report)])


def test_a_report_left_by_an_earlier_run_is_not_taken_for_the_releases(monkeypatch, tmp_path):
  project, entry_id = _project(tmp_path)
  report = tmp_path / "with-release.json"
  # A real measured failure under the release first.
  _simulate(monkeypatch, _report(entry_id, RELEASE, "fail", [
      "[compatibility_break] jax reader: run failed: refused here"]), code=1)
  assert _replay(project, report) == 1
  (kept,) = read_measured(project).entries[EntryId.parse(entry_id)].values()
  assert kept.runs is False and "refused here" in kept.detail
  # An earlier run under another jax left a passing report at the same path; this run dies
  # before writing one.
  report.write_text(json.dumps(_report(entry_id, "0.12.0.1")))
  written = _simulate(monkeypatch, None, code=-9)
  assert _replay(project, report) != 0
  assert Path(written[0]) != report  # the harness wrote into a folder of this run's own
  (still,) = read_measured(project).entries[EntryId.parse(entry_id)].values()
  assert still == kept


def test_a_report_of_a_run_under_another_jax_is_refused(monkeypatch, tmp_path, capsys):
  project, entry_id = _project(tmp_path)
  _simulate(monkeypatch, _report(entry_id, "0.12.0.1"))
  assert _replay(project, tmp_path / "r.json") != 0
  assert "is the report of a run under jax 0.12.0.1, not 0.11.2" in capsys.readouterr().err
  assert read_measured(project).entries == {}


def test_a_run_under_the_release_keeps_its_record_with_the_judge_and_copies_its_report(
    monkeypatch, tmp_path):
  project, entry_id = _project(tmp_path)
  report = tmp_path / "out" / "r.json"
  doc = _report(entry_id, RELEASE)
  _simulate(monkeypatch, doc)
  assert _replay(project, report) == 0
  assert json.loads(report.read_text()) == doc
  (kept,) = read_measured(project).entries[EntryId.parse(entry_id)].values()
  from jaxport import __version__
  assert (kept.release, kept.runs, kept.judged_by) == (RELEASE, True, __version__)


def test_an_entry_whose_files_do_not_read_is_not_measured(monkeypatch, tmp_path):
  project, entry_id = _project(tmp_path)
  blob = project / "golden" / entry_id / "exported.bin"
  good = blob.read_bytes()
  blob.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # damaged during the run
  damaged = _report(entry_id, RELEASE, "fail", [
      "[golden_data_error] golden data error: exported.bin: sha256 mismatch"])
  damaged["entries"][0]["findings"][0].update(subject="golden_data", reader=None)
  assert keeping.verdicts_of_report(_write(tmp_path, damaged), RELEASE) == {EntryId.parse(entry_id): None}
  _simulate(monkeypatch, damaged, code=1)
  assert _replay(project, tmp_path / "r.json") == 1
  blob.write_bytes(good)  # restored: nothing was kept that would count for it now
  assert read_measured(project).entries == {}


def test_an_entry_whose_checker_raised_is_not_measured(tmp_path):
  entry_id = "cpu/feature_vjp/release_vjp_tanh_f32/2026-05-01_jax-0.10.2"
  raised = _report(entry_id, RELEASE, "fail", [
      "[checker_error] checker 'eigh' raised ValueError: x judging the jax reader's outputs"])
  raised["entries"][0]["findings"][0].update(subject="checker", reader=None)
  assert keeping.verdicts_of_report(_write(tmp_path, raised), RELEASE) == {EntryId.parse(entry_id): None}


def test_a_record_is_keyed_by_the_blob_as_read_not_the_manifests_claim(tmp_path):
  project, entry_id = _project(tmp_path)
  blob = project / "golden" / entry_id / "exported.bin"
  key = EntryId.parse(entry_id)
  assert keeping.remember(project, project / "golden", RELEASE, {key: (True, "ran")}) == 1
  (kept,) = read_measured(project).entries[EntryId.parse(entry_id)].values()
  assert kept.blob_sha256 == hashlib.sha256(blob.read_bytes()).hexdigest()
  # A run that replayed another blob than the store holds now keeps nothing for it.
  other = "0" * 64
  assert keeping.remember(project, project / "golden", RELEASE, {key: (False, "x")},
                          {key: other}) == 0
  assert read_measured(project).entries == {}
  assert keeping.remember(project, project / "golden", RELEASE, {key: (True, "ran")},
                          {key: kept.blob_sha256}) == 1
  # Bytes that are not the manifest's: nothing is kept, and the earlier record goes.
  blob.write_bytes(b"not the recorded blob")
  assert keeping.remember(project, project / "golden", RELEASE, {key: (False, "x")}) == 0
  assert read_measured(project).entries == {}


def _write(tmp_path: Path, doc: dict) -> Path:
  path = tmp_path / "report.json"
  path.write_text(json.dumps(doc))
  return path


@pytest.mark.parametrize("error", [
    f"run failed: NOT_FOUND: No FFI handler registered for {KERNEL} on a platform Host",
    f"run failed: No registered implementation for FFI custom call to {KERNEL} for Host",
    # What jax 0.11.2's jaxlib says of a kernel built against jax 0.12.0.1's FFI headers (API
    # 0.5 where it takes 0.4), the reader's whole message as the harness reports it.
    f"run failed: JaxRuntimeError: NOT_FOUND: No FFI handler registered for {KERNEL} on a "
    "platform Host (canonical host)",
])
def test_a_project_kernel_that_does_not_register_is_skipped_not_measured(
    monkeypatch, tmp_path, capsys, error):
  project, entry_id = _project(tmp_path)
  doc = _report(entry_id, RELEASE, "fail", [f"[compatibility_break] jax reader: {error}"],
                targets=[KERNEL])
  (why,) = keeping.kernel_skips(_write(tmp_path, doc), RELEASE).values()
  assert f"native kernel {KERNEL} does not register under jax {RELEASE}" in why
  assert keeping.verdicts_of_report(_write(tmp_path, doc), RELEASE) == {EntryId.parse(entry_id): None}
  # Every entry skipped so: nothing was measured, which is not a pass; nothing is kept.
  _simulate(monkeypatch, doc, code=1)
  assert _replay(project, tmp_path / "r.json") == 1
  assert f"skip  {entry_id}: {why}" in capsys.readouterr().out
  assert read_measured(project).entries == {}


def test_a_release_that_lacks_a_target_of_jaxs_own_still_does_not_run(tmp_path):
  _, entry_id = _project(tmp_path)
  doc = _report(entry_id, RELEASE, "fail", [
      "[compatibility_break] jax reader: run failed: No registered implementation for untyped "
      "custom call to lapack_sgetrf"], targets=["lapack_sgetrf"])
  assert keeping.kernel_skips(_write(tmp_path, doc), RELEASE) == {}
  assert keeping.verdicts_of_report(_write(tmp_path, doc), RELEASE)[EntryId.parse(entry_id)][0] is False


def test_kernel_skips_beside_measured_entries_are_not_failures(monkeypatch, tmp_path, capsys):
  project, entry_id = _project(tmp_path)
  source = next(p for p in sorted((ROOT / "compat_data" / "cpu" / "feature_vjp").glob("*/*"))
                if "release_vjp_tanh_f32" not in p.parts)
  other = "/".join(source.parts[-4:])
  shutil.copytree(source, project / "golden" / other)
  doc = _report(entry_id, RELEASE, "fail", [
      f"[compatibility_break] jax reader: run failed: No FFI handler registered for {KERNEL}"],
      targets=[KERNEL])
  doc["entries"].append({**_report(other, RELEASE)["entries"][0], "entry_id": other})
  _simulate(monkeypatch, doc, code=1)
  assert _replay(project, tmp_path / "r.json") == 0
  assert list(read_measured(project).entries) == [EntryId.parse(other)]
  # The summary says which python the kernel is rebuilt with to measure them.
  assert "build the kernel with /envs/py" in capsys.readouterr().out


def test_an_entry_the_release_only_read_is_not_measured_as_running(tmp_path):
  from jaxport.harness._judge._release_runs import judge_row
  _, entry_id = _project(tmp_path)
  doc = _report(entry_id, RELEASE)
  doc["entries"][0]["lowering_only"] = True
  assert keeping.verdicts_of_report(_write(tmp_path, doc), RELEASE) == {EntryId.parse(entry_id): None}
  # An accelerator's entry in a cpu run was read, not run, too.
  tpu = entry_id.replace("cpu/", "tpu/", 1)
  doc = _report(tpu, RELEASE)
  assert keeping.verdicts_of_report(_write(tmp_path, doc), RELEASE) == {EntryId.parse(tpu): None}
  # The release replayer's row of a lowering-only entry stops at reading it.
  read = judge_row({"entry_id": entry_id, "stage": "deserialize"}, RELEASE)
  assert read.runs is None and str(read.status) == "pass" and "not run" in read.detail
  ran = judge_row({"entry_id": entry_id, "stage": "compare", "matched": True}, RELEASE)
  assert ran.runs is True


def test_the_judge_weighs_a_replays_exit_status_with_its_kernel_skips():
  from types import SimpleNamespace

  from jaxport._vocabulary import Status
  from jaxport.harness._judge._release_runs import exit_status_with_skips
  def entry(case, status):
    return SimpleNamespace(entry_id=EntryId.parse(f"cpu/k/{case}/2026-01-01_jax-0.11.2"),
                           status=status)
  skipped_one, failed_other, passed = entry("a", Status.FAIL), entry("b", Status.FAIL), entry(
      "c", Status.PASS)
  skips = {skipped_one.entry_id: "its kernel does not register"}
  # Every entry skipped: nothing was measured, which is not a pass.
  assert exit_status_with_skips(0, [skipped_one], False, skips) == 1
  # The skips were the run's only failures.
  assert exit_status_with_skips(1, [skipped_one, passed], False, skips) == 0
  # Another entry failed, or the session did: pytest's status stands.
  assert exit_status_with_skips(1, [skipped_one, failed_other], False, skips) == 1
  assert exit_status_with_skips(1, [skipped_one, passed], True, skips) == 1
  assert exit_status_with_skips(3, [passed], False, {}) == 3
