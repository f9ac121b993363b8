"""A worker whose memory grows past the limit is killed and its entry fails with the limit named:
polled RSS, not RLIMIT_AS (which breaks XLA's address-space reservations). Linux only, where
``/proc/PID/statm`` gives the resident memory."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from _sandbox import CHILD_TIME_LIMIT_S, ROOT
from jaxport import _limits
from jaxport.errors import SettingsError
from jaxport.golden import EntryId
from jaxport._isolation._process import rss_bytes
from jaxport.harness._controller import _settings
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import FailureKind, RecordAnswer, dump_answer
from jaxport.harness._protocol._requests import RecordRequest
from jaxport.harness._controller._worker_client import WorkerClient

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _downstream_project import write_project  # noqa: E402

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(),
                                reason="resident memory is read from /proc, which only Linux has")

MiB = 2**20
# A child that reads one request, then grows to about 1 GiB in 64 MiB steps (each byte
# written, so it is resident) and sleeps; it answers only if nothing stopped it.
GROWING_CHILD = textwrap.dedent("""
  import sys, time
  sys.stdin.readline()
  chunks = []
  for _ in range(16):
    chunks.append(b"\\x01" * (64 << 20))
    time.sleep(0.05)
  time.sleep(600)
  print("{}", flush=True)
""")
# A child that answers one request at once, as a worker writes a record answer, echoing the
# request's id.
ANSWERED = RecordAnswer(EntryId.parse("cpu/mine/sines_f32/2026-12-01_jax-0.10.2"))
ANSWERING_CHILD = ("import json, sys; rid = json.loads(sys.stdin.readline())['request_id']; "
                   f"answer = {dump_answer(ANSWERED, [], request_id=None)!r}; "
                   "print(json.dumps({**answer, 'request_id': rid}), flush=True)\n")
# Requests the fake children take: each answers a record request as a worker would.
RECORD = RecordRequest("sines_f32", "2026-12-01", "staging")


class _ChildClient(WorkerClient):
  """A WorkerClient whose "worker" is a small Python child running ``source``."""

  def __init__(self, source: str, **kwargs):
    super().__init__(Project(case_modules=(), store="."), **kwargs)
    self.source = source

  def _start(self) -> None:
    self._stderr = tempfile.TemporaryFile(mode="w+b")
    self._proc = subprocess.Popen([sys.executable, "-c", self.source], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self._stderr, text=True)
    self._answers = self._proc.stdout  # the child answers on its stdout
    self._requests = self._proc.stdin  # and reads its requests on stdin


def test_a_worker_growing_past_its_memory_limit_is_killed_with_the_limit_named():
  client = _ChildClient(GROWING_CHILD, timeout_s=CHILD_TIME_LIMIT_S, max_rss_bytes=512 * MiB)
  try:
    started = time.monotonic()
    answer = client.request(RECORD).answer
    waited = time.monotonic() - started
    assert answer.kind is FailureKind.CRASHED, answer
    assert answer.why.startswith(
        "its memory (RSS) passed the limit --compat-worker-memory-mb=512 (536870912 bytes; "
        f"without the option jaxport._limits.MAX_WORKER_RSS_BYTES = "
        f"{_limits.MAX_WORKER_RSS_BYTES})"), answer.why
    assert answer.returncode < 0  # killed by a signal, not exited
    assert waited < CHILD_TIME_LIMIT_S  # not the time-out
    assert client.pid is None  # the next request starts a fresh process
  finally:
    client.close()


# A child that answers its first request at once, then grows past 512 MiB on its second.
ANSWERING_THEN_GROWING_CHILD = ANSWERING_CHILD + textwrap.dedent("""
  import time
  sys.stdin.readline()
  chunks = [b"\\x01" * (64 << 20) for _ in range(16)]
  time.sleep(600)
""")


def test_an_answer_in_the_pipe_is_read_before_the_memory_of_a_worker_gone_on_to_grow():
  client = _ChildClient(ANSWERING_THEN_GROWING_CHILD, timeout_s=CHILD_TIME_LIMIT_S,
                        max_rss_bytes=512 * MiB)
  try:
    first, second = RECORD, dataclasses.replace(RECORD, case_id="other")
    assert client.send_ahead(first, most=2) and client.send_ahead(second, most=2)
    deadline = time.monotonic() + CHILD_TIME_LIMIT_S
    while (rss_bytes(client.pid) or 0) <= 512 * MiB:  # past the limit on the second
      assert time.monotonic() < deadline, "the child did not grow"
      time.sleep(0.05)
    assert client.request(first) == (ANSWERED, (), "")
    grown = client.request(second).answer
    assert grown.kind is FailureKind.CRASHED and "its memory (RSS) passed" in grown.why
  finally:
    client.close()


def test_a_worker_within_its_memory_limit_answers():
  client = _ChildClient(ANSWERING_CHILD, timeout_s=CHILD_TIME_LIMIT_S, max_rss_bytes=512 * MiB)
  try:
    assert client.request(RECORD) == (ANSWERED, (), "")
  finally:
    client.close()


def test_the_default_limit_is_named_by_its_constant():
  client = WorkerClient(Project(case_modules=(), store="."))
  why = client._memory_why(9 * 2**30)
  assert why.startswith(
      f"its memory (RSS) passed the limit jaxport._limits.MAX_WORKER_RSS_BYTES = "
      f"{_limits.MAX_WORKER_RSS_BYTES}: 9216 MiB resident"), why
  assert 2 * _limits.MAX_WORKER_RSS_BYTES <= 24 * 10**9  # two workers fit in 24 GB


def test_resident_memory_is_read_and_a_gone_process_has_none():
  own = rss_bytes(os.getpid())
  assert own is not None and 10 * MiB < own < 64 * 2**30
  proc = subprocess.Popen([sys.executable, "-c", "pass"])
  proc.wait()
  assert rss_bytes(proc.pid) is None


@pytest.mark.parametrize("value", ["0", "63", "-5", "nan", "1.5", "lots", "1e9", str(2**30 + 1)])
def test_a_worker_memory_limit_out_of_range_is_a_usage_error(value):
  with pytest.raises(SettingsError, match="--compat-worker-memory-mb=.*expected a whole number"):
    _settings.resolve({"worker_memory_mb": value})


def test_a_sensible_worker_memory_limit_is_accepted():
  assert _settings.resolve({"worker_memory_mb": "512"}).worker_max_rss_bytes == 512 * MiB
  assert _settings.resolve({}).worker_max_rss_bytes == _limits.MAX_WORKER_RSS_BYTES


# A case whose module keeps a 576 MiB operand (12288 x 12288 float32, past the 512 MiB limit
# alone) alive for a second or more: built by a loop fusion (nothing folds it away) and read
# by twenty matrix-vector products.
CASES = """
import jax
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

N = 12288


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}


def big(a):
  x = jnp.sin(jax.lax.iota(jnp.float32, N * N).reshape(N, N) * a[0, 0])
  v = jax.lax.fori_loop(0, 20, lambda i, v: jnp.tanh(x @ v), jnp.ones((N,), jnp.float32))
  return a * v[0]


def cases():
  return [Case("sines_f32", "mine", lambda a: jnp.sin(a) * 3, square),
          Case("big_operand_f32", "mine", big, square)]
"""


@pytest.mark.slow
def test_an_entry_past_the_memory_limit_fails_with_it_and_the_next_entry_replays(pytester):
  write_project(pytester, CASES)
  run = ("-p", "no:cacheprovider", "--compat-today=2026-12-01")
  recorded = pytester.runpytest(*run, "--compat-record")
  assert recorded.ret == 0, recorded.stdout.str()
  result = pytester.runpytest(*run, "--compat-worker-memory-mb=512", "-rA")
  text = result.stdout.str() + result.stderr.str()
  assert "its memory (RSS) passed the limit --compat-worker-memory-mb=512" in text, text
  outcomes = result.parseoutcomes()
  assert outcomes.get("failed") == 1 and outcomes.get("passed", 0) >= 1, text
  # The big entry sorts first, so the entry after it replays in a fresh worker.
  assert "FAILED test_golden.py::test_replay[cpu/mine/big_operand_f32/" in text, text
  assert "PASSED test_golden.py::test_replay[cpu/mine/sines_f32/" in text, text
