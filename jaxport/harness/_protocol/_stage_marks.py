"""Word of the stage the worker is in, left where the session reads it after the worker died.

A worker that dies (a native crash, case code that ends its process) answers nothing; what
its death means depends on what it was doing. The worker keeps, in a file the session gave
it, the stages in progress for the request it handles: the case's own code (its function
traced for today's export, its inputs, its checker), today's export of the case, and each
reader's replay of the recorded entry. Readers and today's export run side by side on two
threads, so several stages may be in progress at once; each thread's innermost stage is
listed. A case that calls ``os._exit`` also leaves the stage of the thread that called it.

The file is one fixed-size slot of an unlinked temporary file the session holds, rewritten
whole with one ``pwrite`` at each change, so a reader never sees two records mixed. The
session reads it only after the worker is gone and trusts nothing in it: a record that is
not strict bounded JSON of exactly this form, names a stage outside the vocabulary, or
belongs to another request reads as "no word" (:func:`read_marks` gives None). Which
verdict a death makes is the judge's (``jaxport.harness._judge``); this module only says
where the worker was. Nothing here imports jax.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from typing import NamedTuple

from jaxport import _json
from jaxport.errors import JsonError

_log = logging.getLogger(__name__)

# The stages: the case's own code, today's export of the case, one reader's replay.
CASE_CODE = "case_code"
TODAY = "today"
READER_PREFIX = "reader:"
# The size of the slot the record is written in; a record that would not fit is written
# without its stages (the session then has no word of them).
SLOT_BYTES = 4096
# The most stages one record lists (two threads, each with one innermost stage; room to spare).
MAX_STAGES = 16
# Seconds ``os._exit`` waits for the marks' lock before it ends the process without word.
EXIT_LOCK_WAIT_S = 1.0
_READER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_KEYS = ("request_id", "stages", "exited_in")


def reader_stage(reader: str) -> str:
  """The stage of ``reader``'s replay of the recorded entry."""
  return READER_PREFIX + reader


def stage_reader(stage: str) -> str | None:
  """The reader whose replay ``stage`` is, or None for another stage."""
  return stage[len(READER_PREFIX):] if stage.startswith(READER_PREFIX) else None


def is_stage(value: object) -> bool:
  """Whether ``value`` is a stage of the vocabulary (a reader's stage names a plain name)."""
  if not isinstance(value, str):
    return False
  reader = stage_reader(value)
  if reader is not None:
    return _READER_NAME.fullmatch(reader) is not None
  return value in (CASE_CODE, TODAY)


class Marks(NamedTuple):
  """What a dead worker left of one request: the stages in progress (each thread's
  innermost), and the stage of the thread that called ``os._exit`` (None: it was not called,
  or from a thread in no stage)."""
  stages: tuple[str, ...]
  exited_in: str | None


class StageMarks:
  """The worker's side: the stages in progress on each thread, written to ``fd`` (None: the
  worker was given no file, and nothing is written). Thread-safe."""

  def __init__(self, fd: int | None = None) -> None:
    self._fd = fd
    # The process that writes: a process case code forks inherits the file and writes nothing.
    self._pid = os.getpid()
    self._lock = threading.Lock()
    self._request_id: int | None = None
    self._stacks: dict[int, list[str]] = {}

  def install(self, fd: int) -> None:
    """Write to ``fd`` from now on."""
    with self._lock:
      self._fd = fd
      self._pid = os.getpid()

  def begin(self, request_id: int | None) -> None:
    """A new request: no stage in progress."""
    with self._lock:
      self._request_id = request_id
      self._stacks = {}
      self._write(None)

  @contextlib.contextmanager
  def stage(self, name: str) -> Iterator[None]:
    """``name`` in progress on this thread while the block runs."""
    me = threading.get_ident()
    with self._lock:
      self._stacks.setdefault(me, []).append(name)
      self._write(None)
    try:
      yield
    finally:
      with self._lock:
        stack = self._stacks.get(me)
        if stack:
          stack.pop()
          if not stack:
            del self._stacks[me]
        self._write(None)

  def exiting(self) -> None:
    """This thread is about to end the process (``os._exit``): leave its stage. The lock is
    waited for a moment only, so that an exit never hangs on it (a process forked while
    another thread held it holds it forever)."""
    if not self._lock.acquire(timeout=EXIT_LOCK_WAIT_S):
      return
    try:
      stack = self._stacks.get(threading.get_ident())
      self._write(stack[-1] if stack else None)
    finally:
      self._lock.release()

  def _write(self, exited_in: str | None) -> None:
    if self._fd is None or os.getpid() != self._pid:
      return
    stages = sorted({stack[-1] for stack in self._stacks.values() if stack})
    record = {"request_id": self._request_id, "stages": stages[:MAX_STAGES],
              "exited_in": exited_in}
    data = json.dumps(record).encode()
    if len(data) > SLOT_BYTES:
      data = json.dumps({**record, "stages": None, "exited_in": None}).encode()
    try:
      os.pwrite(self._fd, data.ljust(SLOT_BYTES), 0)
    except OSError as e:
      _log.debug("the stage file cannot be written (%s); no word of stages is left", e)
      self._fd = None


# The worker's marks (a process has one worker loop); nothing is written until installed.
MARKS = StageMarks()
_real_exit = os._exit


def stage(name: str) -> contextlib.AbstractContextManager[None]:
  """``name`` in progress on this thread in this process's marks."""
  return MARKS.stage(name)


def _exit_leaving_word(status: int) -> None:
  MARKS.exiting()
  _real_exit(status)


def install(fd: int) -> None:
  """Have this process's marks written to ``fd``, and ``os._exit`` leave the calling thread's
  stage before it ends the process (case code that calls it is named by its stage)."""
  MARKS.install(fd)
  os._exit = _exit_leaving_word


def exit_now(status: int) -> None:
  """End the process as ``os._exit`` does, leaving no word (the worker's own exit)."""
  _real_exit(status)


def read_marks(fd: int, request_id: int) -> Marks | None:
  """What the worker left in the file ``fd`` of the request ``request_id``; None when it left
  nothing of that request or anything that does not read exactly (never trusted further)."""
  try:
    data = os.pread(fd, SLOT_BYTES + 1, 0)
  except OSError:
    return None
  if not data or len(data) > SLOT_BYTES:
    return None
  try:
    record = _json.parse(data.rstrip(b" "))
  except JsonError:
    return None
  if not isinstance(record, dict) or tuple(sorted(record)) != tuple(sorted(_KEYS)):
    return None
  rid, stages, exited_in = record["request_id"], record["stages"], record["exited_in"]
  if (isinstance(rid, bool) or not isinstance(rid, int) or rid != request_id
      or not isinstance(stages, list)):
    return None
  if len(stages) > MAX_STAGES or not all(is_stage(s) for s in stages):
    return None
  if exited_in is not None and not is_stage(exited_in):
    return None
  return Marks(tuple(stages), exited_in)
