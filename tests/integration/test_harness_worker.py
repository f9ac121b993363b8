"""The replay worker isolates native crashes and hangs: one request fails, the next one works."""

import dataclasses
import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.golden import EntryId  # noqa: E402
from jaxport.harness._protocol._answers import FailureKind  # noqa: E402
from jaxport.harness._protocol._requests import CasesRequest, ReplayRequest  # noqa: E402
from jaxport.harness._controller._worker_client import WorkerClient  # noqa: E402
from _harness_paths import repo_project  # noqa: E402
from _judging import reproduced  # noqa: E402

pytestmark = pytest.mark.slow

ENTRY = next(p for p in sorted((ROOT / "compat_data/cpu/lapack_potrf/cholesky_f32").iterdir()))
REQUEST = ReplayRequest(str(ROOT / "compat_data"), EntryId.from_folder(ENTRY),
                        ("jaxport", "jax"))


class _UnknownOp:
  """A request of an op no worker serves, sent as the client sends any request."""
  op = "nope"
  entry_id = None

  def to_json(self):
    return {}


MISSING = dataclasses.replace(
    REQUEST, entry_id=EntryId.parse("cpu/lapack_potrf/cholesky_f32/2000-01-01_jax-0.1"))


def test_a_worker_killed_between_requests_is_replaced_without_failing_the_next():
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    first = client.request(REQUEST).answer
    assert [reproduced(r) for r in first.readers] == [True, True]
    pid = client.pid
    os.kill(pid, signal.SIGKILL)
    client._proc.wait()  # dead before the next request (one killed with a request is below)
    again = client.request(REQUEST).answer
    assert client.pid != pid
    assert [reproduced(r) for r in again.readers] == [True, True]
  finally:
    client.close()


def test_a_stuck_worker_fails_one_request_and_is_replaced():
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    client.request(REQUEST)
    pid = client.pid
    os.kill(pid, signal.SIGSTOP)  # it takes the request and never answers
    client.timeout_s = 0.5
    stuck = client.request(REQUEST).answer
    assert stuck.kind is FailureKind.CRASHED and "no answer within" in stuck.why
    client.timeout_s = 120
    again = client.request(REQUEST).answer
    assert client.pid != pid
    assert [reproduced(r) for r in again.readers] == [True, True]
  finally:
    client.close()


def test_unknown_requests_and_missing_entries_are_answers_not_crashes():
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    unknown = client.request(_UnknownOp()).answer
    assert unknown.kind is FailureKind.HARNESS and "unknown request op" in unknown.why
    missing = client.request(MISSING).answer
    assert missing.kind is FailureKind.GOLDEN_DATA and "no such entry" in missing.why
  finally:
    client.close()



UNKNOWN = _UnknownOp()


def test_a_request_sent_ahead_is_answered_and_another_request_keeps_the_answers_ahead():
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    assert client.send_ahead(REQUEST)
    assert not client.send_ahead(MISSING)  # one ahead at most by default: not sent
    first = client.request(REQUEST).answer
    assert [reproduced(r) for r in first.readers] == [True, True]
    # Another request than the one ahead is answered after it: the answer ahead is read and
    # kept, and each request gets its own answer.
    assert client.send_ahead(REQUEST)
    unknown = client.request(UNKNOWN).answer
    assert unknown.kind is FailureKind.HARNESS and "unknown request op" in unknown.why
    again = client.request(REQUEST).answer
    assert [reproduced(r) for r in again.readers] == [True, True]
  finally:
    client.close()


def test_requests_ahead_are_answered_in_order_and_those_passed_over_are_dropped():
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    assert client.send_ahead(MISSING, most=2) and client.send_ahead(REQUEST, most=2)
    assert client.send_ahead(MISSING, most=2)  # ahead already
    assert not client.send_ahead(UNKNOWN, most=2)
    replayed = client.request(REQUEST).answer  # MISSING's answer, before it, is dropped
    assert [reproduced(r) for r in replayed.readers] == [True, True]
    missing = client.request(MISSING).answer  # asked again
    assert missing.kind is FailureKind.GOLDEN_DATA and "no such entry" in missing.why
  finally:
    client.close()


@pytest.fixture
def killed_with_request_ahead():
  """A client whose worker was killed with REQUEST sent ahead, and that worker's pid."""
  client = WorkerClient(repo_project(), timeout_s=120)
  try:
    client.request(REQUEST)
    pid = client.pid
    # Stopped first, so that it cannot answer the request sent next before it is killed (a
    # worker whose executables are warm answers within milliseconds).
    os.kill(pid, signal.SIGSTOP)
    client.send_ahead(REQUEST)
    os.kill(pid, signal.SIGKILL)
    yield client, pid
  finally:
    client.close()


def test_a_worker_that_dies_on_the_request_ahead_fails_that_request_only(
    killed_with_request_ahead):
  client, pid = killed_with_request_ahead
  crashed = client.request(REQUEST).answer
  assert crashed.kind is FailureKind.CRASHED and crashed.returncode == -signal.SIGKILL
  again = client.request(REQUEST).answer
  assert client.pid != pid and [reproduced(r) for r in again.readers] == [True, True]


def test_a_request_behind_one_the_worker_died_on_goes_to_a_fresh_worker(
    killed_with_request_ahead):
  client, pid = killed_with_request_ahead
  missing = client.request(MISSING).answer
  assert missing.kind is FailureKind.GOLDEN_DATA and client.pid != pid
  crashed = client.request(REQUEST).answer  # the failure it was read with
  assert crashed.kind is FailureKind.CRASHED and crashed.returncode == -signal.SIGKILL


def test_closing_with_a_request_ahead_does_not_wait_for_its_answer():
  client = WorkerClient(repo_project(), timeout_s=120)
  client.request(REQUEST)
  proc = client._proc
  client.send_ahead(REQUEST)
  client.close()
  assert proc.returncode == -signal.SIGKILL
