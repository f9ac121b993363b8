"""The isolated worker process that executes entries, and the client the session talks to.

Replaying runs native code (XLA, LAPACK); a crash there must fail one entry,
not the pytest session. The session keeps one long-lived worker per pytest
process and sends it one request at a time as a JSON line; if the worker dies,
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

Requests are the typed records of ``jaxport.harness._requests`` (replay an entry, record a
case into a staging store, write a failed entry's artifacts, list the cases), each sent as
one JSON line with an id the client gives it. The answer is one of the typed records of
``jaxport.harness._protocol``, written as one JSON line on a pipe of its own (never stdout,
so nothing the case code prints can pass for an answer) with the request's id and entry id
echoed, the tail of what the worker wrote to stdout and stderr while it handled the request,
and the worker's ``notices``: why a memo the worker puts in front of jax stays off in it (jax's
function has another signature than the memo was written for), one line each. The client
refuses an answer whose ids are not those of the request it waits for, as a failure of that
request, and starts a fresh worker.

The worker is started as ``python -m jaxport.harness._worker --project JSON --answer-fd FD
[--share-executables] [--compile-cache DIR] [--cold-start]``, in the project's
directory with the project's paths on ``PYTHONPATH``, so that it imports the case modules the session
lists; with ``--share-executables`` each distinct module is compiled once in the
process and, given two cores, an entry's readers run side by side, and with a directory, compiled executables are also shared through jax's
persistent compilation cache there (``jaxport.harness._jax_setup.configure_jax``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import itertools
import os
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from jaxport import _limits
from jaxport._vocabulary import WORKER_TIMEOUT_S
from jaxport._isolation._process import LIFELINE_FLAG, OverMemory, rss_bytes  # noqa: F401 (rss_bytes: kept here)
from jaxport._isolation._process import PARENT_PID_ENV as _PARENT_PID_ENV
from jaxport._isolation._process import add_lifeline_option, kill_group, serve_as_child, stop
from jaxport._isolation._process import readline as _readline
from jaxport.errors import WorkerAnswerError
from jaxport.harness._devices import FORCE_DEVICES_FLAG
from jaxport.harness._protocol import (Answer, FailureKind, RecordAnswer, WireAnswer, WorkerFailure,
                                       dump_answer, load_answer, malformed)
from jaxport.harness._requests import (ArtifactsRequest, CasesRequest, RecordRequest, ReplayRequest,
                                       Request, dump_request, load_request, request_id_of)

if TYPE_CHECKING:
  from jaxport.harness._engine import ReplayEngine
  from jaxport.harness._project import Project

# The flag of a worker serving a cold replay: nothing lowered or compiled before its request.
COLD_START_FLAG = "--cold-start"
STDERR_TAIL_CHARS = 4000
# The most of a request's own output (the case code's prints, jax's warnings) an answer carries.
OUTPUT_TAIL_CHARS = 4000
ANSWER_FD_FLAG = "--answer-fd"
# Seconds a worker whose answers ended has to exit on its own before it is killed.
EXIT_GRACE_S = 5.0
# The option that sets another memory limit, named by the crash that limit causes.
MEMORY_OPTION = "--compat-worker-memory-mb"


def _handle(engine: ReplayEngine, request: Request) -> Answer:
  """The typed answer to one request."""
  from jaxport.harness import _artifacts, _recording, _stopwatch
  from jaxport.errors import GoldenDataError
  from jaxport.golden._store import GoldenStore

  try:
    engine.load_cases()
  except GoldenDataError as e:
    return WorkerFailure(FailureKind.CASE_MODULES, str(e))
  if isinstance(request, ReplayRequest):
    watch = _stopwatch.Stopwatch()
    try:
      with watch.stage(_stopwatch.VERIFY):
        entry = GoldenStore(request.root).entry(request.entry_id).snapshot()
    except GoldenDataError as e:
      return WorkerFailure(FailureKind.GOLDEN_DATA, str(e))
    answer = engine.replay(entry, readers=request.readers, today=request.current, watch=watch,
                           run=request.run)
    if request.features is not None:
      answer = dataclasses.replace(answer, **_features(entry))
    return answer
  if isinstance(request, RecordRequest):
    case = engine.lookup_case(request.case_id)
    if case is None:
      return WorkerFailure(FailureKind.HARNESS,
                           f"no case {request.case_id!r} in the project's case modules")
    rec = _recording.record_case(case, datetime.date.fromisoformat(request.today),
                                 engine.registry.checkers)
    entry = GoldenStore(request.staging).write_entry(
        rec.manifest, rec.blob, rec.inputs, rec.expected, rec.module_text, rec.shardings)
    return RecordAnswer(entry.entry_id)
  if isinstance(request, ArtifactsRequest):
    return _artifacts.write(engine, request)
  if isinstance(request, CasesRequest):
    return engine.registry.facts()
  return WorkerFailure(FailureKind.HARNESS, f"no handler for a {type(request).__name__}")


class _OutputCapture:
  """What the worker wrote to its stdout and stderr (one file the client holds) while it
  handled one request: the case code's prints, jax's warnings. Read back from the file by
  offset, so nothing is redirected; where stderr is not a regular file nothing is kept."""

  def __init__(self) -> None:
    self._start: int | None = None

  @staticmethod
  def _size() -> int | None:
    for stream in (sys.stdout, sys.stderr):
      try:
        stream.flush()
      except (OSError, ValueError):
        pass
    try:
      st = os.fstat(2)
    except OSError:
      return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None

  def begin(self) -> None:
    self._start = self._size()

  def end(self) -> str:
    """The tail of what was written since :meth:`begin` (at most ``OUTPUT_TAIL_CHARS``)."""
    start, end = self._start, self._size()
    if start is None or end is None or end <= start:
      return ""
    first = max(start, end - OUTPUT_TAIL_CHARS)
    try:
      data = os.pread(2, end - first, first)
    except OSError:
      return ""
    text = data.decode("utf-8", "replace")
    if first > start:
      text = f"[{first - start} earlier bytes left out]\n" + text
    return text


def _features(entry) -> dict:
  """What the entry's blob says it needs of a consumer (``jaxport.releases``), read here since
  it parses the module: ``{"features": ...}``, or ``{"features_error": why}``."""
  from jaxport.errors import JaxportError
  from jaxport.releases._features import features_of_blob
  try:
    return {"features": features_of_blob(entry.blob(), entry.manifest).to_dict()}
  except JaxportError as e:
    return {"features_error": str(e)}


def _traceback_of(e: Exception) -> str:
  """What a failure quotes of ``e``'s traceback: for jaxport's own errors, whose message names
  the problem and the fix, only the frames of the project's code (the case that led there);
  for anything else, all of it."""
  from jaxport.errors import JaxportError
  from jaxport.harness._registry import project_frames
  if isinstance(e, JaxportError):
    return project_frames(e)
  return traceback.format_exc()


def _warm_up(engine: ReplayEngine, cold_start: bool) -> None:
  """Import the project's cases and start jax's backend before the first request (the
  session starts a worker ahead of need); a failure here is reported by each request.
  Unless the worker serves a cold replay, it also registers jax's native kernels, as a
  process that has lowered a LAPACK call has (``_jax_setup.warm_native_kernels``)."""
  try:
    engine.load_cases()
    import jax
    jax.devices()
    if not cold_start:
      engine.warm_native_kernels()
  except Exception:  # noqa: BLE001
    pass


def _usable_cores() -> int:
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> NoReturn:
  """Serve requests from stdin until it closes, then exit; answers go to the answer pipe
  only."""
  parser = argparse.ArgumentParser(prog="python -m jaxport.harness._worker")
  parser.add_argument("--project", required=True, metavar="JSON",
                      help="the project (case modules, store, paths) as JSON")
  parser.add_argument("--compile-cache", default=None, metavar="DIR",
                      help="share compiled executables through jax's persistent cache in DIR")
  parser.add_argument("--share-executables", action="store_true",
                      help="compile each distinct module once in this process, and run an "
                           "entry's readers side by side where two cores are free")
  parser.add_argument(COLD_START_FLAG, action="store_true",
                      help="lower and compile nothing before the first request (cold replay)")
  parser.add_argument(ANSWER_FD_FLAG, dest="answer_fd", type=int, required=True, metavar="FD",
                      help="the write end of the pipe the answers go to (not stdout)")
  add_lifeline_option(parser)
  args = parser.parse_args(argv)
  answers = serve_as_child(args.lifeline, args.answer_fd)
  from jaxport.harness import _engine, _jax_setup
  from jaxport.harness._project import Project
  _jax_setup.configure_jax(args.compile_cache, share_executables=args.share_executables,
                        own_process=True)
  engine = _engine.ReplayEngine(Project.from_json(json.loads(args.project)),
                                threads=args.share_executables and _usable_cores() > 1)
  _warm_up(engine, args.cold_start)
  capture = _OutputCapture()
  for line in sys.stdin:
    if not line.strip():
      continue
    capture.begin()
    request_id, entry_id = None, None
    try:
      raw = json.loads(line)
      request_id = request_id_of(raw)
      echo = raw.get("entry_id") if isinstance(raw, dict) else None
      entry_id = echo if isinstance(echo, str) else None
      request_id, request = load_request(raw)
      answer = _handle(engine, request)
    except WorkerAnswerError as e:
      answer = WorkerFailure(FailureKind.HARNESS, f"the request does not read: {e}")
    except Exception as e:  # noqa: BLE001  (reported to the session, which fails the item)
      answer = WorkerFailure(FailureKind.HARNESS, f"{type(e).__name__}: {e}",
                             traceback=_traceback_of(e))
    except BaseException as e:  # noqa: BLE001  (SystemExit, KeyboardInterrupt... of case code)
      answer = WorkerFailure(
          FailureKind.CASE_CODE, f"the case's code raised {type(e).__name__}({e}) while the "
          "worker handled the request; a case (its function, inputs or checker) must return or "
          "raise an Exception, never end the process", traceback=traceback.format_exc())
    # Why a memo in front of jax stays off here; the session's report carries each line.
    answers.write(json.dumps(dump_answer(answer, _jax_setup.replacement_notices(),
                                         request_id=request_id, entry_id=entry_id,
                                         output=capture.end())) + "\n")
  answers.close()
  sys.stderr.flush()
  # Nothing is left to write: skip the interpreter's teardown (jax's and XLA's clean-up take
  # most of a second per worker, which every run would wait for).
  os._exit(0)


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


def _named(request_id: int | None, entry_id: str | None) -> str:
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
  ``max_rss_bytes`` is the resident memory past which a busy worker is killed.

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
               cold_start: bool = False, max_rss_bytes: int = _limits.MAX_WORKER_RSS_BYTES):
    self.project = project
    self.cold_start = cold_start
    self.timeout_s = timeout_s
    self.max_rss_bytes = max_rss_bytes
    self.num_devices = num_devices
    self.compile_cache = compile_cache
    self.share_executables = share_executables
    self._proc: subprocess.Popen | None = None
    self._stderr = None
    self._answers = None  # the read end of the worker's answer pipe
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

  def _start(self) -> None:
    env = dict(os.environ)
    # The project's case modules import from where the session's pytest found them.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (*self.project.paths, env.get("PYTHONPATH")) if p)
    if self.num_devices > 1:
      flag = f"{FORCE_DEVICES_FLAG}={self.num_devices}"
      env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), flag) if f)
    self._close_pipes()  # of a previous worker that died on its own
    # Requests a previous worker took and did not answer died with it.
    self._ahead = collections.deque(p for p in self._ahead if p.reply is not None)
    env[_PARENT_PID_ENV] = str(os.getpid())
    self._stderr = tempfile.TemporaryFile(mode="w+b")
    flags = ["--compile-cache", str(self.compile_cache)] if self.compile_cache is not None else []
    if self.share_executables:
      flags.append("--share-executables")
    if self.cold_start:
      flags.append(COLD_START_FLAG)
    read_end, self._lifeline = os.pipe()
    answers_read, answers_write = os.pipe()
    try:
      # stdout and stderr both go to one file: what the worker's code prints is kept there
      # (and quoted with the request it was printed under), never read as an answer.
      self._proc = subprocess.Popen(
          [sys.executable, "-m", "jaxport.harness._worker", "--project",
           json.dumps(self.project.to_json()), *flags, LIFELINE_FLAG, str(read_end),
           ANSWER_FD_FLAG, str(answers_write)],
          cwd=self.project.root or Path.cwd(),
          env=env, stdin=subprocess.PIPE, stdout=self._stderr, stderr=self._stderr, text=True,
          pass_fds=(read_end, answers_write),
          # Its own process group: what case code forks dies with it (kill_group), and a
          # Ctrl-C at the terminal reaches the session, which stops its workers itself.
          start_new_session=True)
    except BaseException:
      os.close(answers_read)
      raise
    finally:
      os.close(read_end)
      os.close(answers_write)
    self._answers = os.fdopen(answers_read, "rb", buffering=0)

  def _close_pipes(self) -> None:
    if self._lifeline is not None:
      os.close(self._lifeline)
      self._lifeline = None
    if self._answers is not None:
      self._answers.close()
      self._answers = None

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
    try:
      self._proc.stdin.write(json.dumps(dump_request(request, request_id)) + "\n")
      self._proc.stdin.flush()
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
    return Reply(WorkerFailure(FailureKind.CRASHED, why, returncode=code,
                               stderr_tail=self._stderr_tail()), ())

  def _refused(self, failure: WorkerFailure, pending: _Pending) -> Reply:
    """``failure`` as the reply of the awaited request ``pending``, the worker whose answers no
    longer pair with requests killed."""
    self._kill(keep=pending)
    return Reply(failure, ())

  def close(self) -> None:
    if self._proc is not None:
      if self._awaiting is not None or any(p.reply is None for p in self._ahead):
        self._proc.kill()  # busy with answers nobody will read
      stop(self._proc)
      kill_group(self._proc)
      self._proc = None
    self._ahead.clear()
    self._awaiting = None
    self._close_pipes()
    if self._stderr is not None:
      self._stderr.close()
      self._stderr = None


if __name__ == "__main__":
  main()
