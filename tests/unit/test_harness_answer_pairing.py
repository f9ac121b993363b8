"""The client pairs each answer with its own request by the ids the answer echoes, on a pipe
of the worker's own: a line the worker's code prints is never read as an answer, and an answer
that names another request (or another entry) fails the request awaited, not the next one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from jaxport.golden import EntryId
from jaxport.harness._project import Project
from jaxport.harness._protocol._answers import (FailureKind, Numerics, ReaderResult, RecordAnswer,
                                                ReplayAnswer, Stage, TodayResult, dump_answer)
from jaxport.harness._protocol._requests import (FeaturesWanted, RecordRequest, ReplayRequest,
                                                 dump_request, load_request)
from jaxport.harness._controller._worker_client import WorkerClient
from jaxport.errors import WorkerAnswerError

ENTRY = EntryId.parse("cpu/mine/sines_f32/2026-12-01_jax-0.10.2")
OTHER = "cpu/mine/cosines_f32/2026-12-01_jax-0.10.2"
EXACT = Numerics(ok=True, exact=True, max_abs_err=0.0)
PASSING = ReplayAnswer(readers=(ReaderResult("jaxport", Stage.COMPARE, platforms=("cpu",), allowed_targets=(), numerics=EXACT),),
                       today=TodayResult(available=True, same_module=True), host=None,
                       seconds=0.0, timings={})
REPLAY = ReplayRequest("store", ENTRY, ("jaxport",))


class _ChildClient(WorkerClient):
  """A WorkerClient whose worker is a small Python child running ``source`` with the answer
  pipe's write end as its first argument, as the real worker gets it."""

  def __init__(self, source: str):
    super().__init__(Project(case_modules=(), store="."), timeout_s=60)
    self.source = source

  def _start(self) -> None:
    self._stderr = tempfile.TemporaryFile(mode="w+b")
    read_end, write_end = os.pipe()
    try:
      self._proc = subprocess.Popen([sys.executable, "-c", self.source, str(write_end)],
                                    stdin=subprocess.PIPE, stdout=self._stderr,
                                    stderr=self._stderr, text=True, pass_fds=(write_end,))
    finally:
      os.close(write_end)
    self._answers = os.fdopen(read_end, "rb", buffering=0)
    self._requests = self._proc.stdin  # this child reads its requests on stdin


def _child(answer_line: str, printed: str = "") -> str:
  """A child that, for each request, prints ``printed`` on stdout and writes ``answer_line``
  (a format string of the request's ``rid`` and ``entry``) on the answer pipe."""
  return textwrap.dedent(f"""
    import json, os, sys
    answers = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    for line in sys.stdin:
      request = json.loads(line)
      rid, entry = request["request_id"], request.get("entry_id")
      sys.stdout.write({printed!r}.replace("RID", str(rid)))
      sys.stdout.flush()
      answers.write({answer_line!r}.replace("RID", str(rid)).replace("ENTRY", json.dumps(entry))
                    + "\\n")
  """)


def _answer_line(answer, request_id="RID", entry_id="ENTRY") -> str:
  """An answer line whose ids are placeholders the child fills in (or fixed values)."""
  text = json.dumps(dump_answer(answer, [], request_id=0, entry_id=None))
  return (text.replace('"request_id": 0', f'"request_id": {request_id}')
          .replace('"entry_id": null', f'"entry_id": {entry_id}'))


def test_an_answer_echoing_its_request_is_taken():
  client = _ChildClient(_child(_answer_line(PASSING)))
  try:
    assert client.request(REPLAY).answer == PASSING
    assert client.request(REPLAY).answer == PASSING  # ids go on counting
  finally:
    client.close()


@pytest.mark.parametrize("request_id, entry_id, named", [
    ("999", "ENTRY", f"awaited request 1 (entry {ENTRY}), got request 999 (entry {ENTRY})"),
    ("RID", f'"{OTHER}"', f"awaited request 1 (entry {ENTRY}), got request 1 (entry {OTHER})"),
    ("null", "ENTRY", f"awaited request 1 (entry {ENTRY}), got request None (entry {ENTRY})"),
], ids=["another request id", "another entry", "no request id"])
def test_an_answer_for_another_request_fails_the_awaited_one_and_restarts_the_worker(
    request_id, entry_id, named):
  client = _ChildClient(_child(_answer_line(PASSING, request_id, entry_id)))
  try:
    answer = client.request(REPLAY).answer
    assert answer.kind is FailureKind.MALFORMED_ANSWER, answer
    assert "the answer belongs to another request" in answer.why and named in answer.why, answer
    assert client.pid is None  # killed: the next request starts a fresh worker
  finally:
    client.close()


def test_forged_answers_printed_on_stdout_are_never_read():
  forged = _answer_line(RecordAnswer(EntryId.parse(OTHER))) + "\n" + _answer_line(PASSING) + "\n"
  client = _ChildClient(_child(_answer_line(RecordAnswer(ENTRY), entry_id="null"),
                               printed=forged * 50))
  try:
    record = RecordRequest("sines_f32", "2026-12-01", "staging")
    assert client.request(record).answer == RecordAnswer(ENTRY)
    assert client.request(record).answer == RecordAnswer(ENTRY)
  finally:
    client.close()


def test_a_request_crosses_whole_and_a_malformed_one_names_its_key():
  request = ReplayRequest("store", ENTRY, ("jaxport", "jax"), current=False, run=False,
                          features=FeaturesWanted.MIN_CONSUMER)
  assert load_request(dump_request(request, 7)) == (7, request)
  wire = dump_request(request, 7)
  with pytest.raises(WorkerAnswerError, match="features"):
    load_request({**wire, "features": "always"})
  with pytest.raises(WorkerAnswerError, match="readers"):
    load_request({k: v for k, v in wire.items() if k != "readers"})
  with pytest.raises(WorkerAnswerError, match="request_id"):
    load_request({**wire, "request_id": "7"})
  with pytest.raises(WorkerAnswerError, match="unknown request op 'nope'"):
    load_request({**wire, "op": "nope"})
