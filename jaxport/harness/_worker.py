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

Requests: ``{"op": "replay", "root": ..., "entry_id": ...}`` (optionally
``"readers": [...]`` and ``"current": false`` to run part of the replay, as the
cold mode does, one reader per fresh process, and ``"run": false`` to check an
accelerator's entry without running it, as a CPU run does),
``{"op": "record", "case_id": ..., "today": "YYYY-MM-DD", "staging": ...}``
(the recording is written as an entry of the staging store) and
``{"op": "artifacts", "root": ..., "entry_id": ..., "dir": ...}`` (a failed entry's
artifacts, ``jaxport.harness._artifacts``). The answer is one of the
typed records of ``jaxport.harness._protocol``, written as one JSON line with the
worker's ``notices``: why a memo the worker puts in front of jax stays off in it (jax's
function has another signature than the memo was written for), one line each.

The worker is started as ``python -m jaxport.harness._worker --project JSON
[--share-executables] [--compile-cache DIR] [--cold-start]``, in the project's
directory with the project's paths on ``PYTHONPATH``, so that it imports the case modules the session
lists; with ``--share-executables`` each distinct module is compiled once in the
process and, given two cores, an entry's readers run side by side, and with a directory, compiled executables are also shared through jax's
persistent compilation cache there (``jaxport.harness._engine.configure_jax``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from jaxport import _limits
from jaxport._vocabulary import WORKER_TIMEOUT_S
from jaxport._isolation._process import LIFELINE_FLAG, OverMemory, rss_bytes  # noqa: F401 (rss_bytes: kept here)
from jaxport._isolation._process import PARENT_PID_ENV as _PARENT_PID_ENV
from jaxport._isolation._process import add_lifeline_option, serve_as_child, stop
from jaxport._isolation._process import readline as _readline
from jaxport.errors import WorkerAnswerError
from jaxport.harness._devices import FORCE_DEVICES_FLAG
from jaxport.harness._protocol import (Answer, FailureKind, RecordAnswer, WorkerFailure, dump_answer,
                                       load_answer, malformed)

if TYPE_CHECKING:
  from jaxport.harness._engine import ReplayEngine
  from jaxport.harness._project import Project

# The flag of a worker serving a cold replay: nothing lowered or compiled before its request.
COLD_START_FLAG = "--cold-start"
STDERR_TAIL_CHARS = 4000
# The option that sets another memory limit, named by the crash that limit causes.
MEMORY_OPTION = "--compat-worker-memory-mb"


def _handle(engine: ReplayEngine, request: dict) -> Answer:
  """The typed answer to one request."""
  from jaxport.harness import _artifacts, _recording, _stopwatch
  from jaxport.errors import GoldenDataError
  from jaxport.golden._store import GoldenStore

  op = request.get("op")
  try:
    engine.load_cases()
  except GoldenDataError as e:
    return WorkerFailure(FailureKind.HARNESS, f"the project's case modules cannot be loaded: {e}")
  if op == "replay":
    watch = _stopwatch.Stopwatch()
    try:
      with watch.stage(_stopwatch.VERIFY):
        entry = GoldenStore(request["root"]).entry(request["entry_id"]).snapshot()
    except GoldenDataError as e:
      return WorkerFailure(FailureKind.GOLDEN_DATA, str(e))
    readers = request.get("readers")
    answer = engine.replay(entry, readers=tuple(readers) if readers is not None else None,
                           today=request.get("current", True), watch=watch,
                           run=request.get("run", True))
    if request.get("features"):
      answer = dataclasses.replace(answer, **_features(entry))
    return answer
  if op == "record":
    case = engine.lookup_case(request["case_id"])
    if case is None:
      return WorkerFailure(FailureKind.HARNESS,
                           f"no case {request['case_id']!r} in the project's case modules")
    rec = _recording.record_case(case, datetime.date.fromisoformat(request["today"]),
                                 engine.registry.checkers)
    entry = GoldenStore(request["staging"]).write_entry(
        rec.manifest, rec.blob, rec.inputs, rec.expected, rec.module_text, rec.shardings)
    return RecordAnswer(entry.entry_id)
  if op == "artifacts":
    return _artifacts.write(engine, request)
  if op == "cases":
    return engine.registry.facts()
  return WorkerFailure(FailureKind.HARNESS, f"unknown request op {op!r}")


def _features(entry) -> dict:
  """What the entry's blob says it needs of a consumer (``jaxport.releases``), read here since
  it parses the module: ``{"features": ...}``, or ``{"features_error": why}``."""
  from jaxport.errors import JaxportError
  from jaxport.releases._features import features_of_blob
  try:
    return {"features": features_of_blob(entry.blob(), entry.manifest).to_dict()}
  except JaxportError as e:
    return {"features_error": str(e)}


def _warm_up(engine: ReplayEngine, cold_start: bool) -> None:
  """Import the project's cases and start jax's backend before the first request (the
  session starts a worker ahead of need); a failure here is reported by each request.
  Unless the worker serves a cold replay, it also registers jax's native kernels, as a
  process that has lowered a LAPACK call has (``_engine.warm_native_kernels``)."""
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
  """Serve requests from stdin until it closes, then exit; answers go to the original stdout
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
  add_lifeline_option(parser)
  args = parser.parse_args(argv)
  answers = serve_as_child(args.lifeline)
  from jaxport.harness import _engine
  from jaxport.harness._project import Project
  _engine.configure_jax(args.compile_cache, share_executables=args.share_executables,
                        own_process=True)
  engine = _engine.ReplayEngine(Project.from_json(json.loads(args.project)),
                                threads=args.share_executables and _usable_cores() > 1)
  _warm_up(engine, args.cold_start)
  for line in sys.stdin:
    if not line.strip():
      continue
    try:
      answer = _handle(engine, json.loads(line))
    except Exception as e:  # noqa: BLE001  (reported to the session, which fails the item)
      answer = WorkerFailure(FailureKind.HARNESS, f"{type(e).__name__}: {e}",
                             traceback=traceback.format_exc())
    # Why a memo in front of jax stays off here; the session's report carries each line.
    answers.write(json.dumps(dump_answer(answer, _engine.replacement_notices())) + "\n")
  answers.close()
  sys.stderr.flush()
  # Nothing is left to write: skip the interpreter's teardown (jax's and XLA's clean-up take
  # most of a second per worker, which every run would wait for).
  os._exit(0)


def read_answer(line: str) -> tuple[Answer, tuple[str, ...]]:
  """The typed answer and notices of one line a worker wrote; a line that is not an answer
  (not JSON, a key missing, unknown or mistyped) reads as a ``malformed_answer`` failure."""
  try:
    return load_answer(json.loads(line))
  except WorkerAnswerError as e:
    return malformed(e), ()
  except ValueError as e:  # not JSON
    return malformed(WorkerAnswerError(f"not JSON ({e}): {line[:200]!r}")), ()


@dataclasses.dataclass
class _Pending:
  """A request sent to a worker and not yet asked for, with its answer once read."""

  payload: dict
  sent: float
  reply: tuple[Answer, tuple[str, ...]] | None = None


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
  waits on another worker. The worker answers in the order it was asked; :meth:`request`
  reads the answers until its own:

  - a request sent ahead: the answers of those sent before it, which the caller has passed
    over, are read and dropped;
  - any other request (a failed entry's artifacts): it is sent after those ahead, whose
    answers are read and kept for their own requests.
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
    self._lifeline: int | None = None
    # The requests sent and not yet asked for, oldest first: each with the time it was sent
    # and, once read (while reading a later answer), its answer.
    self._ahead: collections.deque[_Pending] = collections.deque()
    # When this worker's last answer was read: it begins a request no earlier than that.
    self._answered_at = 0.0

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
    self._cut_lifeline()  # of a previous worker that died on its own
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
    try:
      self._proc = subprocess.Popen(
          [sys.executable, "-m", "jaxport.harness._worker", "--project",
           json.dumps(self.project.to_json()), *flags, LIFELINE_FLAG, str(read_end)],
          cwd=self.project.root or Path.cwd(),
          env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
          pass_fds=(read_end,))
    finally:
      os.close(read_end)

  def _cut_lifeline(self) -> None:
    if self._lifeline is not None:
      os.close(self._lifeline)
      self._lifeline = None

  def _stderr_tail(self) -> str:
    if self._stderr is None:
      return ""
    self._stderr.seek(0, os.SEEK_END)
    size = self._stderr.tell()
    self._stderr.seek(max(0, size - STDERR_TAIL_CHARS))
    return self._stderr.read().decode("utf-8", "replace")

  def start(self) -> None:
    """Start the worker process now unless it runs (it loads while the caller goes on)."""
    if self._proc is None or self._proc.poll() is not None:
      self._start()

  def send_ahead(self, payload: dict, most: int = 1) -> bool:
    """Send a request the caller will make later, after those ahead already, unless it is
    one of them or ``most`` are ahead; whether it is ahead now. A worker that cannot take
    it is left for :meth:`request` to find."""
    if any(p.payload == payload for p in self._ahead):
      return True
    if len(self._ahead) >= most:
      return False
    self.start()
    if not self._send(payload):
      return False
    self._ahead.append(_Pending(payload, time.monotonic()))
    return True

  def request(self, payload: dict) -> tuple[Answer, tuple[str, ...]]:
    """Send one request (unless it was sent ahead) and wait for its typed answer and the
    worker's notices; a dead or stuck worker, or one whose memory passes ``max_rss_bytes``,
    gives a ``crashed`` :class:`WorkerFailure`, and an answer that does not read a
    ``malformed_answer`` one."""
    if any(p.payload == payload for p in self._ahead):
      while self._ahead:
        pending = self._ahead.popleft()
        reply = pending.reply or self._receive(self._due(pending))
        if pending.payload == payload:
          return reply
        if self._proc is None:  # it died on a request passed over: this one died with it
          break
    self.start()
    if not self._send(payload):
      return self._crashed("the worker's input closed")
    sent = time.monotonic()
    for pending in self._ahead:  # answered first: kept for their own requests
      if pending.reply is None:
        pending.reply = self._receive(self._due(pending))
        if self._proc is None:
          # It died on that request, which keeps the failure as its answer; this one died
          # with it and is sent again, to a fresh worker.
          return self.request(payload)
    return self._receive(max(sent, self._answered_at) + self.timeout_s)

  def _due(self, pending: _Pending) -> float:
    """The time by which the worker owes the answer of ``pending``: a timeout after it was
    sent or after the answer before it was read, whichever is later."""
    return max(pending.sent, self._answered_at) + self.timeout_s

  def _send(self, payload: dict) -> bool:
    try:
      self._proc.stdin.write(json.dumps(payload) + "\n")
      self._proc.stdin.flush()
    except (BrokenPipeError, OSError):
      return False
    return True

  def _receive(self, due: float) -> tuple[Answer, tuple[str, ...]]:
    """The worker's next answer (to the oldest request it has not answered), owed by ``due``."""
    line = _readline(self._proc, max(0.0, due - time.monotonic()), self.max_rss_bytes)
    self._answered_at = time.monotonic()
    if isinstance(line, OverMemory):
      return self._crashed(self._memory_why(line.rss_bytes))
    if line is None:
      return self._crashed(f"no answer within {self.timeout_s:.0f} s")
    if not line:
      return self._crashed("the worker exited")
    return read_answer(line)

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

  def _crashed(self, why: str) -> tuple[WorkerFailure, tuple[str, ...]]:
    proc = self._proc
    if proc.poll() is None:
      proc.kill()
    code = proc.wait()
    self._cut_lifeline()
    answer = WorkerFailure(FailureKind.CRASHED, why, returncode=code, stderr_tail=self._stderr_tail())
    self._proc = None
    return answer, ()

  def close(self) -> None:
    if self._proc is not None:
      if any(p.reply is None for p in self._ahead):
        self._proc.kill()  # busy with answers nobody will read
      stop(self._proc)
      self._proc = None
    self._ahead.clear()
    self._cut_lifeline()
    if self._stderr is not None:
      self._stderr.close()
      self._stderr = None


if __name__ == "__main__":
  main()
