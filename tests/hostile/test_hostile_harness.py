"""The compat harness facing hostile stores and options: the worker never outlives pytest, a
store that cannot be written loses no recording, bad options are usage errors, and an entry
dated in the future is a finding."""

from __future__ import annotations

import dataclasses
import datetime
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from _build import REAL_ENTRIES, copy_entry, loops_forever, npz_bomb, replace_files, write_entry
from _sandbox import CHILD_TIME_LIMIT_S, ROOT
import _judging as judging
from jaxport._vocabulary import RecordAction
from jaxport.golden import EntryId
from jaxport.report._sections import Recorded
from jaxport.errors import SettingsError
from jaxport.harness._controller import _settings
from jaxport.harness._protocol._requests import ReplayRequest
from jaxport.harness._controller._session import HarnessSession
from jaxport.harness._controller._settings import Options, Settings
from jaxport.report import FindingKind
from jaxport.harness._controller._worker_client import WorkerClient
from jaxport.golden._manifest import INPUTS_FILE, Manifest
from jaxport.harness._protocol._answers import (FailureKind, Numerics, ReaderResult, ReplayAnswer,
                                                Stage, TodayResult, WorkerFailure)
from jaxport.golden._store import GoldenStore

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _harness_paths import repo_project  # noqa: E402
from _python_child import running  # noqa: E402

pytest_plugins = ["pytester"]

HARNESS_TESTS = ROOT / "harness" / "test_replay.py"


def _cpu_seconds(pid: int) -> float:
  with open(f"/proc/{pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
  return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(condition, limit_s: float) -> bool:
  deadline = time.monotonic() + limit_s
  while time.monotonic() < deadline:
    if condition():
      return True
    time.sleep(0.2)
  return condition()


@pytest.fixture(scope="module")
def looping_store(tmp_path_factory):
  """A store with one entry whose module never returns."""
  store = GoldenStore(tmp_path_factory.mktemp("looping"))
  x = np.ones((2,), np.float32)
  entry = write_entry(store, loops_forever, [x], case_id="loops_forever", expected=[x])
  return store.root, entry.entry_id


@pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                    reason="watching processes needs /proc, which only Linux has")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_worker_dies_with_the_process_that_started_it(looping_store, sig):
  root, entry_id = looping_store
  # The parent stands in for pytest: it starts a worker, then blocks on a
  # replay that never ends, and is killed as a CI cancellation kills pytest.
  parent = subprocess.Popen(
      [sys.executable, "-c", f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from jaxport.harness._project import Project
from jaxport.harness._protocol._requests import CasesRequest, ReplayRequest
from jaxport.harness._controller._worker_client import WorkerClient
from jaxport.golden import EntryId
client = WorkerClient(Project(("harness.cases",), {str(root)!r}, root={str(ROOT)!r},
                              paths=({str(ROOT)!r},)), timeout_s=3600)
client.request(CasesRequest())
print(client.pid, flush=True)
client.request(ReplayRequest({str(root)!r}, EntryId.parse({str(entry_id)!r}), ("jaxport", "jax")))
"""], stdout=subprocess.PIPE, text=True)
  worker = None
  try:
    worker = int(parent.stdout.readline())
    busy_from = _cpu_seconds(worker)
    # Half a second of the worker's CPU time since it answered: it is working on the replay.
    _wait(lambda: _cpu_seconds(worker) > busy_from + 0.5, CHILD_TIME_LIMIT_S)
    parent.send_signal(sig)
    parent.wait()
    assert _wait(lambda: not running(worker), 60), "the worker outlived its parent"
  finally:
    if parent.poll() is None:
      parent.kill()
      parent.wait()
    if worker is not None and running(worker):
      os.kill(worker, signal.SIGKILL)


def test_the_worker_refuses_an_npz_bomb_as_golden_data(tmp_path):
  entry = replace_files(copy_entry(tmp_path), {INPUTS_FILE: npz_bomb(2**30)})
  client = WorkerClient(repo_project(tmp_path), timeout_s=CHILD_TIME_LIMIT_S)
  try:
    answer = client.request(ReplayRequest(str(tmp_path), entry.entry_id, ("jaxport", "jax"))).answer
  finally:
    client.close()
  assert isinstance(answer, WorkerFailure) and answer.kind is FailureKind.GOLDEN_DATA, answer
  assert "refused before decompressing" in answer.why, answer


def _options(root: Path, **changes) -> Options:
  """The options of a session on ``root``; ``changes`` are settings."""
  settings = Settings(**{"platform": "cpu", "record": True, "window_days": 180,
                         "worker_timeout_s": 60.0,
                         "today": datetime.date.today(), **changes})
  return Options.for_run(settings, golden_root=root, partial=True)


def _queued_recording(store_root: Path):
  """A recording session of the store at ``store_root`` holding one staged entry queued for
  writing; the session, its staging folder and the entry's id."""
  session = HarnessSession(_options(store_root), repo_project(store_root))
  staging = session.recorder._staging_root()
  entry_id = REAL_ENTRIES[0]
  copy_entry(staging, entry_id)
  session.recorder._write_queue.append(EntryId.parse(entry_id))
  session.recorder.recorded["cholesky_f32"] = Recorded(
      "cholesky_f32", EntryId.parse(entry_id), RecordAction.WRITTEN, "")
  return session, staging, entry_id


def test_recordings_that_cannot_be_written_are_kept_and_named(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("")  # a store below a file cannot be written, whoever runs the test
  session, staging, entry_id = _queued_recording(blocker / "store")
  try:
    session.flush_writes()
    session.close()
    failures = "\n".join(session.build_report().session_failures)
    assert "cannot write into the golden store" in failures
    assert f"kept in {staging}" in failures
    GoldenStore(staging).entry(EntryId.parse(entry_id)).verify()
    assert session.build_report().recorded[0].action == "error"
  finally:
    shutil.rmtree(staging, ignore_errors=True)


def test_a_recording_another_run_wrote_meanwhile_is_named_as_such_not_as_unwritable(tmp_path):
  store_root = tmp_path / "store"
  session, staging, entry_id = _queued_recording(store_root)
  copy_entry(store_root, entry_id)  # the other recording of the store, which wrote first
  try:
    session.flush_writes()
    session.close()
    failures = "\n".join(session.build_report().session_failures)
    assert f"written meanwhile by another recording of the same store ({entry_id})" in failures
    assert "is writable" not in failures and f"kept in {staging}" in failures
    GoldenStore(staging).entry(EntryId.parse(entry_id)).verify()
  finally:
    shutil.rmtree(staging, ignore_errors=True)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "-inf", "1e999", "soon", "1e300"])
def test_a_worker_timeout_that_is_not_a_positive_finite_time_is_a_usage_error(value):
  with pytest.raises(SettingsError, match="--compat-worker-timeout=.*expected seconds above 0"):
    _settings.resolve({"worker_timeout_s": value})


def test_a_sensible_worker_timeout_is_accepted():
  assert _settings.resolve({"worker_timeout_s": "0.5"}).worker_timeout_s == 0.5


def test_a_missing_golden_root_and_a_zero_timeout_stop_the_session_with_their_reason(
    pytester, tmp_path):
  missing = tmp_path / "nowhere"
  result = pytester.runpytest(HARNESS_TESTS, f"--compat-store={missing}",
                                         "-p", "no:cacheprovider")
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  result.stderr.fnmatch_lines([f"*--compat-store={missing}: no such directory*"])
  result = pytester.runpytest(HARNESS_TESTS, "--compat-worker-timeout=0",
                                         "-p", "no:cacheprovider")
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  result.stderr.fnmatch_lines(["*--compat-worker-timeout=0: expected seconds above 0*"])


def _replayed_manifest(record_date: datetime.date) -> Manifest:
  m = GoldenStore(ROOT / "compat_data").entry(EntryId.parse(REAL_ENTRIES[0])).manifest
  return dataclasses.replace(m, record_date=record_date)


@pytest.mark.parametrize("strict,status", [(False, "warn"), (True, "fail")])
def test_an_entry_dated_in_the_future_is_a_finding_that_fails_when_strict(strict, status):
  today = datetime.date(2026, 12, 1)
  answer = ReplayAnswer(
      readers=(ReaderResult("jaxport", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=Numerics(True, True, 0.0)),),
      today=TodayResult(available=False, reason="not a registered case"), host=None,
      seconds=0.0, timings={})
  entry_id = EntryId.parse(REAL_ENTRIES[0])
  asked = ReplayRequest(str(ROOT / "compat_data"), entry_id, ("jaxport",))
  outcome = judging.findings(answer, asked, entry_id=entry_id,
                               manifest=_replayed_manifest(datetime.date(2099, 1, 1)),
                               today=today, window_days=180)
  assert FindingKind.FUTURE_DATE in outcome.kinds
  assert any("days after today (2026-12-01)" in m for m in outcome.messages)
  assert judging.status(outcome, strict) == status
