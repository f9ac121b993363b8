"""Progress of long commands: a bar redrawn in place on a terminal, one plain line per step otherwise.

Both go to stderr, so stdout keeps only results. ``-q`` (logging above INFO)
silences both; a log file or CI console gets the plain lines, which never
contain carriage returns.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

logger = logging.getLogger("jaxport.cli")

T = TypeVar("T")
BAR_WIDTH = 24
# Back to the line's start and erase it: where the bar is redrawn, or a message printed over it.
CLEAR_LINE = "\r\x1b[K"


def is_terminal(stream: TextIO) -> bool:
  """Whether ``stream`` is an interactive terminal that understands carriage return and erase."""
  isatty = getattr(stream, "isatty", None)
  return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def bar_line(verb: str, done: int, total: int, label: str) -> str:
  """``verb [#####.....] done/total label``, the label cut to fit the terminal's width."""
  filled = BAR_WIDTH * done // total if total else BAR_WIDTH
  head = f"{verb} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} "
  room = shutil.get_terminal_size((100, 20)).columns - len(head) - 1
  return head + (label if len(label) <= room else "…" + label[-max(room - 1, 0):])


class Progress:
  """Counts ``total`` steps of ``verb`` (e.g. "auditing"); call :meth:`step` before each one."""

  def __init__(self, verb: str, total: int, *, stream: TextIO | None = None):
    self.verb, self.total, self.done = verb, total, 0
    self.stream = sys.stderr if stream is None else stream
    self.enabled = logger.isEnabledFor(logging.INFO)
    self.bar = self.enabled and is_terminal(self.stream)
    self._drawn = False

  def step(self, label: str) -> None:
    self.done += 1
    if not self.enabled:
      return
    if self.bar:
      self.stream.write(CLEAR_LINE + bar_line(self.verb, self.done, self.total, label))
      self.stream.flush()
      self._drawn = True
    else:
      logger.info("%s %d/%d %s", self.verb, self.done, self.total, label)

  def close(self) -> None:
    """End the bar's line so later output starts on a fresh one."""
    if self._drawn:
      self.stream.write("\n")
      self.stream.flush()
      self._drawn = False


def track(items: Iterable[T], verb: str, label: Callable[[T], str] = str,
          stream: TextIO | None = None) -> Iterator[T]:
  """Yield ``items``, reporting each as a step of ``verb``."""
  items = list(items)
  progress = Progress(verb, len(items), stream=stream)
  try:
    for item in items:
      progress.step(label(item))
      yield item
  finally:
    progress.close()
