"""Signals that must not lose finished work: SIGTERM taken as an interrupt (so that the code
that commits what was done runs, as it does for Ctrl-C), one stop at a time, interrupts held
off while that code runs, and a child command that gets the signals its parent is sent.

Only the main thread may set signal handlers; elsewhere each helper does nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

_STOPPING = (signal.SIGINT, signal.SIGTERM)
# The stop signal that makes run_forwarding_signals kill its child instead of passing it on.
KILL_AFTER_SIGNALS = 3


def _main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


def stop_once(doing: str) -> Callable[[], None]:
  """The first SIGINT or SIGTERM raises KeyboardInterrupt (SIGTERM then ends the run as Ctrl-C
  does, so that the code committing finished work runs); any later one is said and ignored,
  so a second Ctrl-C cannot break into that clean-up with a second traceback. The switch
  happens inside the handler, before the interrupt is raised, so no second signal slips in
  between. A signal someone else handles is left alone; the function returned puts the
  previous handlers back."""
  if not _main_thread():
    return lambda: None
  defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
  mine = [s for s in _STOPPING if signal.getsignal(s) is defaults[s]]

  def ignore(signum: int, frame: object) -> None:
    logger.warning("%s received while %s; it stops as soon as it can",
                   signal.Signals(signum).name, doing)

  def first(signum: int, frame: object) -> None:
    for s in mine:
      signal.signal(s, ignore)
    raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")

  for s in mine:
    signal.signal(s, first)

  def restore() -> None:
    for s in mine:
      signal.signal(s, defaults[s])
  return restore


@contextlib.contextmanager
def interrupts_held(doing: str) -> Iterator[None]:
  """SIGINT and SIGTERM wait while the block runs (``doing`` says what, in the message each
  one gets): a second Ctrl-C while finished work is committed neither loses it nor prints a
  second traceback."""
  if not _main_thread():
    yield
    return

  def hold(signum: int, frame: object) -> None:
    logger.warning("%s received while %s; it takes effect once that is done",
                   signal.Signals(signum).name, doing)

  previous = {s: signal.signal(s, hold) for s in _STOPPING}
  try:
    yield
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)


def run_forwarding_signals(cmd: Sequence[str], cwd: Path,
                           env: Mapping[str, str] | None = None) -> int:
  """Run ``cmd`` to its end in its own process group and pass it every SIGINT and SIGTERM this
  process gets (once each: a terminal's Ctrl-C reaches only this process's group), so that the
  child stops as it would have stopped itself and commits what it finished, and is never left
  running after this process has gone. Its exit status (128 + N for signal N)."""
  proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, process_group=0)
  if not _main_thread():
    return _status(proc.wait())

  received: list[int] = []

  def forward(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    received.append(signum)
    try:
      if len(received) >= KILL_AFTER_SIGNALS:
        logger.warning("%s: the %d%s stop; killing the harness (pid %d) and its workers now; "
                       "what it had not committed is lost", name, len(received),
                       _ordinal(len(received)), proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        return
      logger.warning("%s: passed to the harness (pid %d), which stops after committing what it "
                     "finished (a %d%s stop kills it)", name, proc.pid, KILL_AFTER_SIGNALS,
                     _ordinal(KILL_AFTER_SIGNALS))
      proc.send_signal(signum)
    except ProcessLookupError:
      pass

  previous = {s: signal.signal(s, forward) for s in _STOPPING}
  try:
    return _status(proc.wait())
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)


def _ordinal(n: int) -> str:
  return {1: "st", 2: "nd", 3: "rd"}.get(n if n < 20 else n % 10, "th")


def _status(returncode: int) -> int:
  return 128 - returncode if returncode < 0 else returncode
