"""How a benchmark stops: terminated (``timeout``, a cancelled job) it unwinds as it does when
interrupted, so that its temporary folders are removed and its child processes end with it."""

from __future__ import annotations

import signal
import subprocess
from typing import NoReturn


def unwind_on_terminate() -> None:
  """Make SIGTERM raise ``SystemExit(143)`` in this process: ``finally`` blocks and context
  managers run, and ``subprocess.run`` kills the child it waits for on the way out."""

  def stop(signum: int, frame: object) -> NoReturn:
    raise SystemExit(128 + signum)

  signal.signal(signal.SIGTERM, stop)


def stop_child(proc: subprocess.Popen) -> None:
  """End a child this benchmark started and no longer waits for, and reap it."""
  if proc.poll() is None:
    proc.kill()
    proc.wait()
