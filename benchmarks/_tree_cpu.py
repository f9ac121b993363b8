"""CPU seconds of a command's whole process tree, its orphans included.

``RUSAGE_CHILDREN`` counts a descendant only when every process between it and us waited for
it. The harness's workers are forked by a preloading parent that pytest never waits for (it
ends with pytest), so their CPU would be lost. This process becomes a subreaper (Linux): the
orphans of a run are handed to it, and it waits for them before reading the count.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def adopt_orphans() -> bool:
  """Make this process the subreaper of its descendants; whether that holds (Linux only)."""
  global _subreaper
  if not _subreaper and sys.platform == "linux":
    libc = ctypes.CDLL(None, use_errno=True)
    _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
  return _subreaper


def reap_orphans(timeout_s: float = 30.0) -> None:
  """Wait for every child left (orphans handed to this process), for at most ``timeout_s``."""
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
      return
    if pid == 0:
      time.sleep(0.02)


def children_cpu_seconds() -> float:
  """User and system CPU seconds of the children and descendants waited for so far."""
  used = resource.getrusage(resource.RUSAGE_CHILDREN)
  return used.ru_utime + used.ru_stime
