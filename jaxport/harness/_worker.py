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
cold mode does, one reader per fresh process) and
``{"op": "record", "case_id": ..., "today": "YYYY-MM-DD", "staging": ...}``
(the recording is written as an entry of the staging store). Every answer carries
``"notices"``: why a memo the worker puts in front of jax stays off in it (jax's
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
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from jaxport import _limits
from jaxport.harness._devices import FORCE_DEVICES_FLAG

if TYPE_CHECKING:
  from jaxport.harness._project import Project

# The worker's command-line flag naming its end of the lifeline pipe, and the
# environment variable naming the process that started it.
LIFELINE_FLAG = "--lifeline-fd"
# The flag of a worker serving a cold replay: nothing lowered or compiled before its request.
COLD_START_FLAG = "--cold-start"
_PARENT_PID_ENV = "JAXPORT_WORKER_PARENT_PID"
_PR_SET_PDEATHSIG = 1  # prctl option, from linux/prctl.h
STDERR_TAIL_CHARS = 4000
# Seconds between two reads of a busy worker's resident memory.
RSS_POLL_S = 0.2
# The option that sets another memory limit, named by the crash that limit causes.
MEMORY_OPTION = "--compat-worker-memory-mb"


def _handle(request: dict) -> dict:
  from jaxport.harness import _engine, _stopwatch
  from jaxport.errors import GoldenDataError
  from jaxport.golden._store import GoldenStore

  op = request.get("op")
  try:
    _engine.load_cases()
  except GoldenDataError as e:
    return {"error": f"the project's case modules cannot be loaded: {e}"}
  if op == "replay":
    watch = _stopwatch.Stopwatch()
    try:
      with watch.stage(_stopwatch.VERIFY):
        entry = GoldenStore(request["root"]).entry(request["entry_id"]).snapshot()
    except GoldenDataError as e:
      return {"golden_error": str(e)}
    readers = request.get("readers")
    return _engine.replay_entry(entry, readers=tuple(readers) if readers is not None else None,
                                current=request.get("current", True), watch=watch)
  if op == "record":
    case = _engine.lookup_case(request["case_id"])
    if case is None:
      return {"error": f"no case {request['case_id']!r} in the project's case modules"}
    rec = _engine.record_case(case, datetime.date.fromisoformat(request["today"]))
    entry = GoldenStore(request["staging"]).write_entry(
        rec.manifest, rec.blob, rec.inputs, rec.expected, rec.module_text, rec.shardings)
    return {"entry_id": entry.entry_id}
  return {"error": f"unknown request op {op!r}"}


def _die_with_parent(lifeline_fd: int | None, parent_pid: int) -> None:
  """Exit this process when the process that started it dies (see the module docstring)."""
  if sys.platform.startswith("linux"):
    try:
      import ctypes
      libc = ctypes.CDLL(None, use_errno=True)
      libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
      pass  # the lifeline pipe below still works
  if os.getppid() != parent_pid:
    os._exit(1)  # the parent died before the signal was armed
  if lifeline_fd is None:
    return

  def watch() -> None:
    try:
      while os.read(lifeline_fd, 1):
        pass
    except OSError:
      pass
    os._exit(1)

  threading.Thread(target=watch, name="jaxport-worker-lifeline", daemon=True).start()


def _warm_up(engine, cold_start: bool) -> None:
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


def _report_fatal_signals() -> None:
  """On SIGSEGV, SIGABRT, SIGBUS, SIGFPE or SIGILL, write the stack of every thread to stderr
  (the session's crash finding quotes its tail), with native frames where this Python's
  faulthandler can write them."""
  import faulthandler
  try:
    faulthandler.enable(file=sys.stderr, all_threads=True, c_stack=True)  # Python 3.14 and newer
  except TypeError:
    faulthandler.enable(file=sys.stderr, all_threads=True)


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
  parser.add_argument(LIFELINE_FLAG, dest="lifeline", type=int, default=None, metavar="FD",
                      help="the read end of the pipe whose end of file means the parent died")
  args = parser.parse_args(argv)
  _report_fatal_signals()
  _die_with_parent(args.lifeline, int(os.environ.get(_PARENT_PID_ENV, os.getppid())))
  answers = os.fdopen(os.dup(1), "w", buffering=1)
  os.dup2(2, 1)  # stray prints from native code must not corrupt the answers
  from jaxport.harness import _engine
  from jaxport.harness._project import Project
  _engine.use_project(Project.from_json(json.loads(args.project)))
  _engine.configure_jax(args.compile_cache, share_executables=args.share_executables)
  _engine.use_threads(args.share_executables and _usable_cores() > 1)
  _warm_up(_engine, args.cold_start)
  for line in sys.stdin:
    if not line.strip():
      continue
    try:
      answer = _handle(json.loads(line))
    except Exception as e:  # noqa: BLE001  (reported to the session, which fails the item)
      answer = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    # Why a memo in front of jax stays off here; the session's report carries each line.
    answer["notices"] = _engine.replacement_notices()
    answers.write(json.dumps(answer) + "\n")
  answers.close()
  sys.stderr.flush()
  # Nothing is left to write: skip the interpreter's teardown (jax's and XLA's clean-up take
  # most of a second per worker, which every run would wait for).
  os._exit(0)


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
  """

  def __init__(self, project: Project, timeout_s: float = 300.0, num_devices: int = 1,
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

  def request(self, payload: dict) -> dict:
    """Send one request and wait for its answer; a dead or stuck worker, or one whose memory
    passes ``max_rss_bytes``, gives a ``crashed`` answer."""
    self.start()
    proc = self._proc
    try:
      proc.stdin.write(json.dumps(payload) + "\n")
      proc.stdin.flush()
    except (BrokenPipeError, OSError):
      return self._crashed("the worker's input closed")
    line = _readline(proc, self.timeout_s, self.max_rss_bytes)
    if isinstance(line, OverMemory):
      return self._crashed(self._memory_why(line.rss_bytes))
    if line is None:
      return self._crashed(f"no answer within {self.timeout_s:.0f} s")
    if not line:
      return self._crashed("the worker exited")
    return json.loads(line)

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

  def _crashed(self, why: str) -> dict:
    proc = self._proc
    if proc.poll() is None:
      proc.kill()
    code = proc.wait()
    self._cut_lifeline()
    answer = {"crashed": True, "why": why, "returncode": code, "stderr_tail": self._stderr_tail()}
    self._proc = None
    return answer

  def close(self) -> None:
    if self._proc is not None:
      self._proc.stdin.close()
      try:
        self._proc.wait(timeout=30)
      except subprocess.TimeoutExpired:
        self._proc.kill()
        self._proc.wait()
      self._proc = None
    self._cut_lifeline()
    if self._stderr is not None:
      self._stderr.close()
      self._stderr = None


class OverMemory(NamedTuple):
  """What :func:`_readline` gives when the process's resident memory passed the limit."""
  rss_bytes: int


def rss_bytes(pid: int) -> int | None:
  """The resident memory of process ``pid`` in bytes, from ``/proc/PID/statm``; None where
  there is no such file (not Linux, or the process is gone)."""
  try:
    with open(f"/proc/{pid}/statm", "rb") as f:
      fields = f.read().split()
    return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")
  except (OSError, ValueError, IndexError):
    return None


def _readline(proc: subprocess.Popen, timeout_s: float,
              max_rss_bytes: int | None = None) -> str | OverMemory | None:
  """One line of the worker's stdout, '' at EOF, None on timeout; with ``max_rss_bytes``, the
  process's resident memory is read every ``RSS_POLL_S`` seconds meanwhile, and the first
  reading above it is returned as :class:`OverMemory` (on Linux; elsewhere it is not read)."""
  import selectors
  poll = max_rss_bytes is not None and os.path.exists(f"/proc/{proc.pid}/statm")
  with selectors.DefaultSelector() as sel:
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while True:
      if poll:
        rss = rss_bytes(proc.pid)
        if rss is not None and rss > max_rss_bytes:
          return OverMemory(rss)
      left = deadline - time.monotonic()
      if left <= 0:
        return None
      if sel.select(timeout=min(left, RSS_POLL_S) if poll else left):
        return proc.stdout.readline()


if __name__ == "__main__":
  main()
