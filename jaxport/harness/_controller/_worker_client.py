"""The client the harness session talks to its isolated worker through; free of jax.

Replaying runs native code (XLA, LAPACK); a crash there must fail one entry,
not the pytest session. The session keeps one long-lived worker per pytest
process and sends it one request at a time as a JSON line, on a pipe of the worker's own
(its stdin is ``/dev/null``: case code that reads stdin never takes a request); if the worker dies,
times out or its resident memory (RSS, polled about five times a second on Linux)
passes ``jaxport._limits.MAX_WORKER_RSS_BYTES`` or ``--compat-worker-memory-mb``,
that request fails with the worker's last stderr lines and the next request starts
a fresh worker. Only JSON crosses the boundary. Memory is polled rather than bounded
with ``RLIMIT_AS``: XLA reserves far more address space than it touches.

The worker never outlives the process that started it, even when that
process is killed outright (SIGKILL, a CI cancellation): the parent holds the
write end of a pipe whose read end only the worker has, and a watchdog thread
in the worker exits the process when the pipe reports end of file. On Linux the
kernel's parent-death signal (``PR_SET_PDEATHSIG``) kills it as well, even while
native code holds the interpreter.

The client refuses an answer whose ids are not those of the request it waits for, as a
failure of that request, and starts a fresh worker. The worker itself is
``jaxport.harness._worker``; this module imports nothing that imports jax, which the
layering test holds.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from jaxport import _limits
from jaxport._vocabulary import WORKER_TIMEOUT_S
from jaxport._isolation._process import LIFELINE_FLAG, OverMemory
from jaxport._isolation._process import PARENT_PID_ENV as _PARENT_PID_ENV
from jaxport._isolation._process import kill_group, stop
from jaxport._isolation._process import readline as _readline
from jaxport._isolation._preloaded import start_module, start_parent
from jaxport.errors import WorkerAnswerError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._devices import FORCE_DEVICES_FLAG, worker_environment
from jaxport.harness._protocol._answers import (Answer, FailureKind, WireAnswer, WorkerFailure,
                                                load_answer, malformed)
from jaxport.harness._protocol._command import (ANSWER_FD_FLAG, COLD_START_FLAG,
                                                REQUEST_FD_FLAG, STAGE_FD_FLAG, WORKER_MODULE,
                                                WORKER_PRELOAD)
from jaxport.harness._protocol._requests import Request, dump_request
from jaxport.harness._protocol._stage_marks import read_marks
from jaxport._platforms import is_host

if TYPE_CHECKING:
  from jaxport.harness._project import Project


STDERR_TAIL_CHARS = 4000
# Seconds a worker whose answers ended has to exit on its own before it is killed.
EXIT_GRACE_S = 5.0
# The option that sets another memory limit, named by the crash that limit causes.
MEMORY_OPTION = "--compat-worker-memory-mb"


def read_answer(line: str) -> WireAnswer:
  """The typed answer, notices and echo of one line a worker wrote; a line that is not an
  answer (not JSON, a key missing, unknown or mistyped) reads as a ``malformed_answer``
  failure that answers no request."""
  try:
    return load_answer(json.loads(line))
  except WorkerAnswerError as e:
    return WireAnswer(malformed(e), (), None, None, "")
  except ValueError as e:  # not JSON
    return WireAnswer(malformed(WorkerAnswerError(f"not JSON ({e}): {line[:200]!r}")), (), None,
                      None, "")


class Reply(NamedTuple):
  """A worker's answer to one request, its notices, and the tail of what the worker wrote to
  stdout and stderr while handling it (the case code's prints among them)."""
  answer: Answer
  notices: tuple[str, ...]
  output: str = ""


@dataclasses.dataclass
class _Pending:
  """A request sent to a worker and not yet asked for, with its id, when it was sent, and its
  reply once read."""

  request: Request
  request_id: int
  sent: float
  reply: Reply | None = None


def _named(request_id: int | None, entry_id: EntryId | None) -> str:
  """``request 7 (entry cpu/...)``: a request as a protocol failure names it."""
  return f"request {request_id}" + (f" (entry {entry_id})" if entry_id else "")


class WorkerClient:
  """One worker process, started on first use and restarted after a crash.

  ``num_devices > 1`` starts it with that many host CPU devices, for entries
  exported for several devices (jax fixes the device count at start-up).
  ``share_executables`` has it compile each distinct module once (and run an entry's
  readers side by side);
  ``compile_cache`` is the directory of jax's compilation cache it also shares
  executables through (with neither, every module is compiled);
  ``cold_start`` has it lower and compile nothing before its first request (cold replay);
  ``max_rss_bytes`` is the resident memory past which a busy worker is killed;
  ``platform`` is the run's: a CPU run's worker is held to the CPU (``JAX_PLATFORMS=cpu``),
  so that it never opens an accelerator the machine has.

  :meth:`send_ahead` hands the worker requests the caller will make later, in the order it
  will make them, so that the worker replays while the caller classifies the last answer or
  waits on another worker. The worker answers in the order it was asked, each answer
  carrying its request's id; :meth:`request` reads the answers until its own:

  - a request sent ahead: the answers of those sent before it, which the caller has passed
    over, are read and dropped;
  - any other request (a failed entry's artifacts): it is sent after those ahead, whose
    answers are read and kept for their own requests.

  An answer whose request id or entry id is not the one awaited, or that does not read, is
  a ``malformed_answer`` failure of the awaited request; the worker, whose answers can no
  longer be paired with requests, is then killed, and the next request starts a fresh one.
  """

  def __init__(self, project: Project, timeout_s: float = WORKER_TIMEOUT_S, num_devices: int = 1,
               compile_cache: str | os.PathLike | None = None, share_executables: bool = False,
               cold_start: bool = False, max_rss_bytes: int = _limits.MAX_WORKER_RSS_BYTES,
               platform: str = "cpu"):
    self.project = project
    self.platform = platform
    self.cold_start = cold_start
    self.timeout_s = timeout_s
    self.max_rss_bytes = max_rss_bytes
    self.num_devices = num_devices
    self.compile_cache = compile_cache
    self.share_executables = share_executables
    self._proc: subprocess.Popen | None = None
    self._stderr = None
    # The unlinked file the worker leaves word of its stages in (``_stage_marks``).
    self._stages = None
    self._answers = None  # the read end of the worker's answer pipe
    self._requests = None  # the write end of the worker's request pipe
    self._lifeline: int | None = None
    # Request ids, unique over this client's workers: an answer of a dead worker's request
    # can never pass for another's.
    self._ids = itertools.count(1)
    # The requests sent and not yet asked for, oldest first: each with the time it was sent
    # and, once read (while reading a later answer), its reply.
    self._ahead: collections.deque[_Pending] = collections.deque()
    # When this worker's last answer was read: it begins a request no earlier than that.
    self._answered_at = 0.0
    # The request whose answer is being read; left set when an interrupt broke off the wait.
    self._awaiting: _Pending | None = None

  @property
  def pid(self) -> int | None:
    return self._proc.pid if self._proc else None

  def _environment(self) -> dict[str, str]:
    env = worker_environment(self.platform, dict(os.environ))
    if self.num_devices > 1:
      flag = f"{FORCE_DEVICES_FLAG}={self.num_devices}"
      env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), flag) if f)
    env[_PARENT_PID_ENV] = str(os.getpid())
    return env

  def _preload(self) -> tuple[str, ...] | None:
    # A cold replay's worker is a fresh interpreter; an accelerator's opens the machine's
    # runtime as a fresh one does.
    return WORKER_PRELOAD if is_host(self.platform) and not self.cold_start else None

  def start_soon(self) -> None:
    """Get the worker going without waiting for it: where it is forked from a preloading
    parent that is still importing, start that parent, whose imports then overlap with what
    the caller does next (the fork, which waits for them, comes with the first request); else
    start the worker process now unless it runs."""
    if self._proc is None and start_parent(env=self._environment(), preload=self._preload()):
      return
    self.start()

  def _start(self) -> None:
    env = self._environment()
    self._close_pipes()  # of a previous worker that died on its own
    # Requests a previous worker took and did not answer died with it.
    self._ahead = collections.deque(p for p in self._ahead if p.reply is not None)
    self._stderr = tempfile.TemporaryFile(mode="w+b")
    if self._stages is not None:
      self._stages.close()
    self._stages = tempfile.TemporaryFile(mode="w+b")
    flags = ["--compile-cache", str(self.compile_cache)] if self.compile_cache is not None else []
    if self.share_executables:
      flags.append("--share-executables")
    if self.cold_start:
      flags.append(COLD_START_FLAG)
    read_end, self._lifeline = os.pipe()
    answers_read, answers_write = os.pipe()
    requests_read, requests_write = os.pipe()
    try:
      # stdout and stderr both go to one file: what the worker's code prints is kept there
      # (and quoted with the request it was printed under), never read as an answer.
      # The project's case modules import from where the session's pytest found them.
      self._proc = start_module(
          WORKER_MODULE, ["--project", json.dumps(self.project.to_json()), *flags,
                          LIFELINE_FLAG, str(read_end), REQUEST_FD_FLAG, str(requests_read),
                          ANSWER_FD_FLAG, str(answers_write), STAGE_FD_FLAG,
                          str(self._stages.fileno())],
          env=env, paths=self.project.paths, cwd=self.project.root or Path.cwd(),
          pass_fds=(read_end, requests_read, answers_write, self._stages.fileno()),
          stdout=self._stderr.fileno(), stderr=self._stderr.fileno(),
          # Its own process group: what case code forks dies with it (kill_group), and a
          # Ctrl-C at the terminal reaches the session, which stops its workers itself.
          new_session=True, preload=self._preload())
    except BaseException:
      os.close(answers_read)
      os.close(requests_write)
      raise
    finally:
      os.close(read_end)
      os.close(requests_read)
      os.close(answers_write)
    self._answers = os.fdopen(answers_read, "rb", buffering=0)
    self._requests = os.fdopen(requests_write, "w", encoding="utf-8")

  def _close_pipes(self) -> None:
    if self._lifeline is not None:
      os.close(self._lifeline)
      self._lifeline = None
    if self._answers is not None:
      self._answers.close()
      self._answers = None
    if self._requests is not None:
      try:
        self._requests.close()
      except OSError:  # what was left unwritten: the worker is gone
        pass
      self._requests = None

  def _stderr_tail(self) -> str:
    if self._stderr is None:
      return ""
    self._stderr.seek(0, os.SEEK_END)
    size = self._stderr.tell()
    self._stderr.seek(max(0, size - STDERR_TAIL_CHARS))
    return self._stderr.read().decode("utf-8", "replace")

  def start(self) -> None:
    """Start the worker process now unless it runs (it loads while the caller goes on)."""
    if self._proc is not None and self._proc.poll() is not None:
      self._died_unread()
    if self._proc is None or self._proc.poll() is not None:
      self._start()

  def _died_unread(self) -> None:
    """The worker died before its answers were read: the oldest request it took and did not
    answer is the one it died on and keeps that failure, as reading its answer would have
    given; the requests behind it are sent again, to a fresh worker."""
    oldest = next((p for p in self._ahead if p.reply is None), None)
    if oldest is not None:
      oldest.reply = self._crashed("the worker exited", oldest, exiting=True)

  def send_ahead(self, request: Request, most: int = 1) -> bool:
    """Send a request the caller will make later, after those ahead already, unless it is
    one of them or ``most`` are ahead; whether it is ahead now. A worker that cannot take
    it is left for :meth:`request` to find."""
    if any(p.request == request for p in self._ahead):
      return True
    if len(self._ahead) >= most:
      return False
    self.start()
    request_id = self._send(request)
    if request_id is None:
      return False
    self._ahead.append(_Pending(request, request_id, time.monotonic()))
    return True

  def holds_ahead(self, entry_id: EntryId) -> bool:
    """Whether a request of the entry ``entry_id`` was sent ahead and not yet asked for."""
    return any(p.request.entry_id == entry_id for p in self._ahead)

  def request(self, request: Request) -> Reply:
    """Send one request (unless it was sent ahead) and wait for its typed answer, the
    worker's notices and the request's output; a dead or stuck worker, or one whose memory
    passes ``max_rss_bytes``, gives a ``crashed`` :class:`WorkerFailure`, and an answer that
    does not read, or answers another request, a ``malformed_answer`` one."""
    if any(p.request == request for p in self._ahead):
      while self._ahead:
        pending = self._ahead.popleft()
        reply = pending.reply or self._receive(pending)
        if pending.request == request:
          return reply
        if self._proc is None:  # it died on a request passed over: this one died with it
          break
    self.start()
    request_id = self._send(request)
    if request_id is None and any(p.reply is None for p in self._ahead):
      # It died on a request ahead before its exit reached start(): that request keeps the
      # failure, as when start() sees the exit, and this one goes to a fresh worker.
      self._died_unread()
      self.start()
      request_id = self._send(request)
    if request_id is None:
      return self._crashed("the worker's input closed")
    mine = _Pending(request, request_id, time.monotonic())
    for pending in self._ahead:  # answered first: kept for their own requests
      if pending.reply is None:
        pending.reply = self._receive(pending)
        if self._proc is None:
          # It died on that request, which keeps the failure as its answer; this one died
          # with it and is sent again, to a fresh worker.
          return self.request(request)
    return self._receive(mine)

  def _due(self, pending: _Pending) -> float:
    """The time by which the worker owes the answer of ``pending``: a timeout after it was
    sent or after the answer before it was read, whichever is later."""
    return max(pending.sent, self._answered_at) + self.timeout_s

  def _send(self, request: Request) -> int | None:
    """Send ``request`` with a new id; the id, or None when the worker cannot take it."""
    request_id = next(self._ids)
    if self._requests is None:
      return None
    try:
      self._requests.write(json.dumps(dump_request(request, request_id)) + "\n")
      self._requests.flush()
    except (BrokenPipeError, OSError):
      return None
    return request_id

  def _receive(self, pending: _Pending) -> Reply:
    """The worker's next answer, which must answer ``pending`` (the oldest request it has not
    answered), owed by :meth:`_due`."""
    self._awaiting = pending
    line = _readline(self._proc, max(0.0, self._due(pending) - time.monotonic()),
                     self.max_rss_bytes, channel=self._answers)
    self._awaiting = None
    self._answered_at = time.monotonic()
    if isinstance(line, OverMemory):
      return self._crashed(self._memory_why(line.rss_bytes), pending)
    if line is None:
      return self._crashed(f"no answer within {self.timeout_s:.0f} s", pending)
    if not line:
      return self._crashed("the worker exited", pending, exiting=True)
    wire = read_answer(line)
    if wire.request_id is None and isinstance(wire.answer, WorkerFailure):
      return self._refused(wire.answer, pending)  # it did not read: nothing after it pairs
    awaited = pending.request.entry_id
    if wire.request_id != pending.request_id or wire.entry_id != awaited:
      return self._refused(malformed(WorkerAnswerError(
          f"the answer belongs to another request: awaited "
          f"{_named(pending.request_id, awaited)}, got {_named(wire.request_id, wire.entry_id)}"
          "; the worker was stopped and the next request starts a fresh one")), pending)
    return Reply(wire.answer, wire.notices, wire.output)

  def _memory_why(self, rss_bytes: int) -> str:
    """Why a worker was killed for its memory: the limit by name, and how to set another."""
    default = _limits.name("MAX_WORKER_RSS_BYTES")
    if self.max_rss_bytes == _limits.MAX_WORKER_RSS_BYTES:
      limit = default
    else:
      limit = (f"{MEMORY_OPTION}={self.max_rss_bytes // 2**20} ({self.max_rss_bytes} bytes; "
               f"without the option jaxport._limits.MAX_WORKER_RSS_BYTES = "
               f"{_limits.MAX_WORKER_RSS_BYTES})")
    return (f"its memory (RSS) passed the limit {limit}: {rss_bytes // 2**20} MiB resident when "
            f"killed; a larger {MEMORY_OPTION}=MB allows more")

  def _kill(self, keep: _Pending | None = None, exiting: bool = False) -> int:
    """Kill the worker (unless it exited) and forget it, with the requests it took and did not
    answer but ``keep``, whose answer the caller gives (the others are sent again, to a fresh
    worker); its exit status. ``exiting``: its answers ended, so it is on its way out and is
    given ``EXIT_GRACE_S`` to go with its own status (the cause), not the kill's."""
    proc = self._proc
    if exiting:
      try:
        proc.wait(timeout=EXIT_GRACE_S)
      except subprocess.TimeoutExpired:
        pass
    if proc.poll() is None:
      proc.kill()
    code = proc.wait()
    kill_group(proc)
    self._close_pipes()
    self._proc = None
    self._ahead = collections.deque(p for p in self._ahead if p.reply is not None or p is keep)
    return code

  def _crashed(self, why: str, pending: _Pending | None = None,
               exiting: bool = False) -> Reply:
    code = self._kill(keep=pending, exiting=exiting)
    # Where the dead worker was in the request, as it left word (read once it is gone).
    marks = (read_marks(self._stages.fileno(), pending.request_id)
             if pending is not None and self._stages is not None else None)
    return Reply(WorkerFailure(FailureKind.CRASHED, why, returncode=code,
                               stderr_tail=self._stderr_tail(),
                               stages=marks.stages if marks else (),
                               exited_in=marks.exited_in if marks else None), ())

  def _refused(self, failure: WorkerFailure, pending: _Pending) -> Reply:
    """``failure`` as the reply of the awaited request ``pending``, the worker whose answers no
    longer pair with requests killed."""
    self._kill(keep=pending)
    return Reply(failure, ())

  def close(self) -> None:
    if self._proc is not None:
      if self._awaiting is not None or any(p.reply is None for p in self._ahead):
        self._proc.kill()  # busy with answers nobody will read
      stop(self._proc, requests=self._requests)
      kill_group(self._proc)
      self._proc = None
    self._ahead.clear()
    self._awaiting = None
    self._close_pipes()
    if self._stderr is not None:
      self._stderr.close()
      self._stderr = None
    if self._stages is not None:
      self._stages.close()
      self._stages = None
