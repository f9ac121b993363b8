"""The isolated worker process that executes entries; the session's side is ``_worker_client``,
which starts it, watches its memory and outlives its crashes.

Requests are the typed records of ``jaxport.harness._protocol._requests`` (replay an entry, record a
case into a staging store, write a failed entry's artifacts, list the cases), each read as
one JSON line from a pipe of its own (never stdin, which is ``/dev/null``: a case that reads
stdin gets end of file, never the next request) with an id the client gives it. The answer is one of the typed
records of ``jaxport.harness._protocol._answers``, written as one JSON line on a pipe of its own
(never stdout, so nothing the case code prints can pass for an answer) with the request's id
and entry id echoed, the tail of what the worker wrote to stdout and stderr while it handled
the request, and the worker's ``notices``: why a memo the worker puts in front of jax stays
off in it (jax's function has another signature than the memo was written for), one line
each. A watchdog thread exits the process when the pipe from its parent reports end of file,
so the worker never outlives the process that started it. After each request the worker puts
back what the case's code changed of the process (jax's configuration and contexts, warnings
filters, timers, signal handlers: ``_process_state``), and the answer names each change.

The worker is started as ``python -m jaxport.harness._worker --project JSON --request-fd FD
--answer-fd FD [--stage-fd FD] [--share-executables] [--compile-cache DIR] [--cold-start]``; with
``--stage-fd`` it keeps word of the stages in progress in that file (``_stage_marks``), which
the session reads if it dies. It runs in the project's directory
with the project's paths on ``PYTHONPATH``, so that it imports the case modules the session
lists; with ``--share-executables`` each distinct module is compiled once in the process
and, given two cores, an entry's readers run side by side, and with a directory, compiled
executables are also shared through jax's persistent compilation cache there
(``jaxport.harness._worker._jax_setup.configure_jax``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import stat
import sys
import traceback
from typing import TYPE_CHECKING, NoReturn

from jaxport._isolation._process import add_lifeline_option, serve_as_child
from jaxport.errors import WorkerAnswerError
from jaxport.golden._entry_id import EntryId
from jaxport.harness._protocol._answers import (Answer, FailureKind, RecordAnswer, ReplayAnswer,
                                                WorkerFailure, dump_answer)
from jaxport.harness._protocol._requests import (ArtifactsRequest, CasesRequest, DevicesRequest,
                                                 RecordRequest, ReplayRequest, Request,
                                                 load_request, request_id_of)
from jaxport.harness._protocol import _stage_marks
from jaxport.harness._protocol._command import (ANSWER_FD_FLAG, COLD_START_FLAG,
                                                REQUEST_FD_FLAG, STAGE_FD_FLAG)

if TYPE_CHECKING:
  from jaxport.harness._worker._engine import ReplayEngine


# The most of a request's own output (the case code's prints, jax's warnings) an answer carries.
OUTPUT_TAIL_CHARS = 4000


def _handle(engine: ReplayEngine, request: Request) -> Answer:
  """The typed answer to one request."""
  # local: jax and the engine load only once the child serves (stacks, lifeline set up)
  from jaxport.harness._worker import (_artifacts, _gradients, _recording, _same_entry,
                                       _stopwatch)
  from jaxport.errors import GoldenDataError
  from jaxport.golden._store import GoldenStore

  if isinstance(request, DevicesRequest):
    from jaxport.harness._worker import _device_probe  # local: as above
    return _device_probe.probe()
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
    compared_with, differing = (_same_entry.compare_with_store(entry, request.store)
                                if request.store else (None, ()))
    gradients = (_gradients.added_gradients_line(rec.manifest, rec.gradients, request.store,
                                                 written=compared_with is None)
                 if request.store else "")
    return RecordAnswer(entry.entry_id, _recording.nonfinite_lines(rec.expected),
                        compared_with=compared_with, differing=differing, gradients=gradients)
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
  # local: jax and the engine load only once the child serves (stacks, lifeline set up)
  from jaxport.errors import JaxportError
  from jaxport.releases._features import features_of_blob
  try:
    return {"features": features_of_blob(entry.blob(), entry.manifest).to_dict()}
  except JaxportError as e:
    return {"features_error": str(e)}


def _with_config_changes(answer: Answer, changes: list[str]) -> Answer:
  """``answer`` with the jax settings its request's case changed (a replay or a recording
  carries them; another answer has no case to name)."""
  if changes and isinstance(answer, (ReplayAnswer, RecordAnswer)):
    return dataclasses.replace(answer, config_changes=tuple(changes))
  return answer


def _traceback_of(e: Exception) -> str:
  """What a failure quotes of ``e``'s traceback: for jaxport's own errors, whose message names
  the problem and the fix, only the frames of the project's code (the case that led there);
  for anything else, all of it."""
  # local: jax and the engine load only once the child serves (stacks, lifeline set up)
  from jaxport.errors import JaxportError
  from jaxport.harness._registry import project_frames
  if isinstance(e, JaxportError):
    return project_frames(e)
  return traceback.format_exc()


def _warm_up(engine: ReplayEngine) -> None:
  """Import the project's cases and start jax's backend before the first request (the
  session starts a worker ahead of need); a failure here is reported by each request."""
  try:
    engine.load_cases()
    import jax
    jax.devices()
  except Exception:  # noqa: BLE001
    pass


class NativeKernels:
  """When the worker registers jax's native kernels, as a process that has lowered a LAPACK
  call has (``_jax_setup.warm_native_kernels``): before it handles any request but a case
  listing, so that no entry's verdict depends on the entries replayed before it; and
  otherwise as soon as it has answered, so that its first answer (the case listing pytest's
  collection waits for) does not wait for them, while the session reads that answer and
  sends the replays. A cold replay's worker registers nothing (``pending`` False), so that a
  crash of a fresh process stays visible. A failure here is left to the requests that need
  the kernels."""

  def __init__(self, engine: ReplayEngine, pending: bool) -> None:
    self._engine = engine
    self.pending = pending

  def before(self, request: Request) -> None:
    """Before handling ``request``: register them unless it is a case listing or a device
    probe."""
    if not isinstance(request, (CasesRequest, DevicesRequest)):
      self._register()

  def answered(self) -> None:
    """After an answer is written: register them if nothing has."""
    self._register()

  def _register(self) -> None:
    if self.pending:
      self.pending = False
      try:
        self._engine.warm_native_kernels()
      except Exception:  # noqa: BLE001
        pass


# The youngest generation's threshold for Python's cyclic garbage collector in the worker
# (Python's default is 2,000 objects). Tracing and lowering make many short-lived container
# objects, which reference counting frees; a collection every 2,000 of them scans the
# survivors again and again (about 140 collections and a fifth of a second over a warm replay
# of 313 entries). At 50,000 a few collections remain, and the worker's peak memory does not
# change measurably.
GC_YOUNG_THRESHOLD = 50_000


def _collect_less() -> None:
  """Leave the objects of start-up (jax, the cases) out of later collections, and collect the
  young generation less often (``GC_YOUNG_THRESHOLD``)."""
  gc.freeze()
  gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def _usable_cores() -> int:
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not on Linux
    return os.cpu_count() or 1


def main(argv: list[str] | None = None) -> NoReturn:
  """Serve requests from the request pipe until it closes, then exit; answers go to the answer
  pipe only."""
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
  parser.add_argument(REQUEST_FD_FLAG, dest="request_fd", type=int, required=True, metavar="FD",
                      help="the read end of the pipe the requests come on (not stdin)")
  parser.add_argument(ANSWER_FD_FLAG, dest="answer_fd", type=int, required=True, metavar="FD",
                      help="the write end of the pipe the answers go to (not stdout)")
  parser.add_argument(STAGE_FD_FLAG, dest="stage_fd", type=int, default=None, metavar="FD",
                      help="a file to leave word of the stages in progress in, which the "
                           "session reads if this process dies "
                           "(jaxport.harness._protocol._stage_marks)")
  add_lifeline_option(parser)
  args = parser.parse_args(argv)
  answers = serve_as_child(args.lifeline, args.answer_fd)
  # Not inherited by what case code starts, which could otherwise take requests.
  os.set_inheritable(args.request_fd, False)
  requests = os.fdopen(args.request_fd, "r", encoding="utf-8")
  if args.stage_fd is not None:
    _stage_marks.install(args.stage_fd)
  # local: jax and the engine load only once the child serves (stacks, lifeline set up)
  from jaxport.harness._worker import _engine, _jax_setup, _process_state
  from jaxport.harness._project import Project
  _jax_setup.configure_jax(args.compile_cache, share_executables=args.share_executables,
                        own_process=True)
  engine = _engine.ReplayEngine(Project.from_json(json.loads(args.project)),
                                threads=args.share_executables and _usable_cores() > 1)
  _warm_up(engine)
  # What every entry starts from: what a case changes is put back after its request.
  baseline = _process_state.EntryStart(engine.each_thread)
  _collect_less()
  kernels = NativeKernels(engine, pending=not args.cold_start)
  capture = _OutputCapture()
  for line in requests:
    if not line.strip():
      continue
    capture.begin()
    request_id, entry_id = None, None
    try:
      raw = json.loads(line)
      request_id = request_id_of(raw)
      _stage_marks.MARKS.begin(request_id)
      echo = raw.get("entry_id") if isinstance(raw, dict) else None
      entry_id = _echoed_id(echo)
      request_id, request = load_request(raw)
      kernels.before(request)
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
    # Between requests nothing runs on the reader thread: the process state goes back here.
    answer = _with_config_changes(answer, baseline.restore())
    # Why a memo in front of jax stays off here; the session's report carries each line.
    answers.write(json.dumps(dump_answer(answer, _jax_setup.replacement_notices(),
                                         request_id=request_id, entry_id=entry_id,
                                         output=capture.end())) + "\n")
    kernels.answered()
  answers.close()
  sys.stderr.flush()
  # Nothing is left to write: skip the interpreter's teardown (jax's and XLA's clean-up take
  # most of a second per worker, which every run would wait for).
  _stage_marks.exit_now(0)


def _echoed_id(echo: object) -> EntryId | None:
  """The entry id a request names, for the answer to echo (None where it names none that reads:
  the request then fails to load, and its answer says why)."""
  try:
    return EntryId.parse(echo) if isinstance(echo, str) else None
  except ValueError:
    return None


if __name__ == "__main__":
  main()

