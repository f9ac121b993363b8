"""What every jaxport child process shares: dying with its parent, writing the stacks of a fatal
signal, and a parent reading one answer line under a time limit while polling the child's
resident memory.

The harness's replay worker (``jaxport.harness._worker``) and the module parser of the command
line (``jaxport._isolation._parser``) both use these. Only the standard library is imported
here: the pytest side of a golden run imports this module and must not import jax.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from typing import IO, NamedTuple

from jaxport._environment import PARENT_PID_ENV, worker_parent_pid

# The child's flag naming its end of the lifeline pipe (the variable naming the process that
# started it is PARENT_PID_ENV, of jaxport._environment).
LIFELINE_FLAG = "--lifeline-fd"
_PR_SET_PDEATHSIG = 1  # prctl option, from linux/prctl.h
# The signals whose stacks report_fatal_signals has faulthandler write.
FATAL_SIGNALS = frozenset(getattr(signal, name) for name in
                          ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL")
                          if hasattr(signal, name))
# Seconds between two reads of a busy child's resident memory.
RSS_POLL_S = 0.2


def die_with_parent(lifeline_fd: int | None, parent_pid: int) -> None:
  """Exit this process when the process that started it dies: the kernel's parent-death signal
  on Linux (which works even while native code holds the interpreter), and a watchdog thread
  that exits when the lifeline pipe, whose write end only the parent holds, reports end of
  file."""
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

  threading.Thread(target=watch, name="jaxport-child-lifeline", daemon=True).start()


def report_fatal_signals() -> None:
  """On SIGSEGV, SIGABRT, SIGBUS, SIGFPE or SIGILL, write the stack of every thread to stderr
  (the parent quotes its tail), with native frames where this Python's faulthandler can write
  them. Called again, it takes those signals back from any handler set since (faulthandler
  does nothing when asked to enable while it is on, even where its handlers were replaced)."""
  import faulthandler
  faulthandler.disable()
  try:
    faulthandler.enable(file=sys.stderr, all_threads=True, c_stack=True)  # Python 3.14 and newer
  except TypeError:
    faulthandler.enable(file=sys.stderr, all_threads=True)


def add_lifeline_option(parser) -> None:
  """The child's ``--lifeline-fd`` option, which :func:`serve_as_child` reads."""
  parser.add_argument(LIFELINE_FLAG, dest="lifeline", type=int, default=None, metavar="FD",
                      help="the read end of the pipe whose end of file means the parent died")


def serve_as_child(lifeline_fd: int | None, answer_fd: int | None = None):
  """Set up a child process that answers its parent: stacks on fatal signals, exit with the
  parent. Returns the file the answers go to: the pipe ``answer_fd`` where the parent gave one
  (what the child's own code prints goes to its stdout, and never among the answers; the fd is
  not inherited by processes the child starts), else the original stdout, with stray prints
  (from native code too) sent to stderr."""
  report_fatal_signals()
  parent = worker_parent_pid()
  die_with_parent(lifeline_fd, os.getppid() if parent is None else parent)
  if answer_fd is not None:
    os.set_inheritable(answer_fd, False)
    return os.fdopen(answer_fd, "w", buffering=1)
  answers = os.fdopen(os.dup(1), "w", buffering=1)
  os.dup2(2, 1)
  return answers


def stop(proc: subprocess.Popen, grace_s: float = 30.0, requests: IO | None = None) -> None:
  """End a child: close the file its requests come on (``requests``, the write end of a pipe
  of its own where it has one, else its stdin) so that it exits, and kill it if it has not
  within ``grace_s``."""
  channel = requests if requests is not None else proc.stdin
  try:
    if channel is not None:
      channel.close()
  except OSError:
    pass
  try:
    proc.wait(timeout=grace_s)
  except subprocess.TimeoutExpired:
    proc.kill()
    proc.wait()


def kill_group(proc: subprocess.Popen) -> None:
  """Kill what is left of the process group ``proc`` leads (a child started with
  ``start_new_session``): processes its code forked, which would otherwise outlive it. A group
  already gone is left alone; the kernel does not reuse the id while one member lives."""
  try:
    os.killpg(proc.pid, signal.SIGKILL)
  except (ProcessLookupError, PermissionError):
    pass


def exit_text(returncode: int | None) -> str:
  """``exit code 3``, or ``killed by SIGSEGV (signal 11)`` for a process a signal ended."""
  if isinstance(returncode, int) and returncode < 0:
    try:
      name = signal.Signals(-returncode).name
    except ValueError:
      name = "an unknown signal"
    return f"killed by {name} (signal {-returncode})"
  return f"exit code {returncode}"


def signal_name(returncode: int | None) -> str | None:
  """The name of the signal that ended a process (``SIGSEGV``), None when it exited."""
  if isinstance(returncode, int) and returncode < 0:
    try:
      return signal.Signals(-returncode).name
    except ValueError:
      return f"signal {-returncode}"
  return None


class OverMemory(NamedTuple):
  """What :func:`readline` gives when the process's resident memory passed the limit."""
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


# What was read of each child's stdout past the line :func:`readline` returned last.
_unread: weakref.WeakKeyDictionary[subprocess.Popen, bytearray] = weakref.WeakKeyDictionary()
_READ_BYTES = 1 << 16


def readline(proc: subprocess.Popen, timeout_s: float,
             max_rss_bytes: int | None = None, channel=None) -> str | OverMemory | None:
  """One line of the child's stdout (or of ``channel``, a file the child answers on), '' at
  EOF, None on timeout; with ``max_rss_bytes``, the
  process's resident memory is read every ``RSS_POLL_S`` seconds meanwhile, and the first
  reading above it is returned as :class:`OverMemory` (on Linux; elsewhere it is not read).

  The pipe is read here, not through the file's buffer, so that a line that came in with
  an earlier one is returned at once (a child may have answered several requests), and a
  line that arrives in parts waits no longer than the timeout."""
  unread = _unread.setdefault(proc, bytearray())
  fd = (channel if channel is not None else proc.stdout).fileno()
  poll = max_rss_bytes is not None and os.path.exists(f"/proc/{proc.pid}/statm")
  with selectors.DefaultSelector() as sel:
    sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while True:
      end = unread.find(b"\n")
      if end >= 0:
        line = bytes(unread[:end + 1])
        del unread[:end + 1]
        return line.decode("utf-8", "replace")
      # What the pipe holds already is read before the memory is: a child past its limit
      # on a later request has answered this one.
      ready = sel.select(timeout=0)
      if not ready:
        if poll:
          rss = rss_bytes(proc.pid)
          if rss is not None and rss > max_rss_bytes:
            return OverMemory(rss)
        left = deadline - time.monotonic()
        if left <= 0:
          return None
        ready = sel.select(timeout=min(left, RSS_POLL_S) if poll else left)
      if ready:
        chunk = os.read(fd, _READ_BYTES)
        if not chunk:  # end of file: what is left, '' when nothing is
          line = bytes(unread)
          unread.clear()
          return line.decode("utf-8", "replace")
        unread += chunk
