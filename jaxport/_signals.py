"""Signals that must not lose finished work: SIGTERM taken as an interrupt (so that the code
that commits what was done runs, as it does for Ctrl-C), interrupts held off while that code
runs, and a child command that gets the signals its parent is sent.

Only the main thread may set signal handlers; elsewhere each helper does nothing.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

_STOPPING = (signal.SIGINT, signal.SIGTERM)


def _main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


def _raise_interrupt(signum: int, frame: object) -> None:
  raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def sigterm_as_interrupt() -> Callable[[], None]:
  """Make SIGTERM raise KeyboardInterrupt, as SIGINT does, where nobody else handles it; the
  function returned puts the previous handler back."""
  if not _main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
    return lambda: None
  signal.signal(signal.SIGTERM, _raise_interrupt)
  return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def interrupts_held(doing: str) -> Iterator[list[str]]:
  """SIGINT and SIGTERM wait while the block runs (``doing`` says what, in the message each
  one gets); the names of the signals held are in the list yielded. A second Ctrl-C while
  finished work is committed thus neither loses it nor prints a second traceback."""
  held: list[str] = []
  if not _main_thread():
    yield held
    return

  def hold(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    held.append(name)
    logger.warning("%s received while %s; it takes effect once that is done", name, doing)

  previous = {s: signal.signal(s, hold) for s in _STOPPING}
  try:
    yield held
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)


def run_forwarding_signals(cmd: Sequence[str], cwd: Path) -> int:
  """Run ``cmd`` to its end in its own process group and pass it every SIGINT and SIGTERM this
  process gets (once each: a terminal's Ctrl-C reaches only this process's group), so that the
  child stops as it would have stopped itself and commits what it finished, and is never left
  running after this process has gone. Its exit status (128 + N for signal N)."""
  proc = subprocess.Popen(list(cmd), cwd=cwd, process_group=0)
  if not _main_thread():
    return _status(proc.wait())

  def forward(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    logger.warning("%s: passed to the harness (pid %d), which stops after committing what it "
                   "finished", name, proc.pid)
    try:
      proc.send_signal(signum)
    except ProcessLookupError:
      pass

  previous = {s: signal.signal(s, forward) for s in _STOPPING}
  try:
    return _status(proc.wait())
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)


def _status(returncode: int) -> int:
  return 128 - returncode if returncode < 0 else returncode
