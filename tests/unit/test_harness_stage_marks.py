"""The word a worker leaves of the stages in progress (``_stage_marks``): written whole at each
change, each thread's innermost stage, the stage of a thread that calls ``os._exit``, and read
back only when it is exactly a record of the awaited request."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

from jaxport.harness._protocol._stage_marks import (CASE_CODE, SLOT_BYTES, TODAY, Marks, StageMarks,
                                                    read_marks, reader_stage)


@pytest.fixture
def slot():
  with tempfile.TemporaryFile() as f:
    yield f.fileno()


def test_each_threads_innermost_stage_is_in_progress(slot):
  marks = StageMarks(slot)
  marks.begin(7)
  assert read_marks(slot, 7) == Marks((), None)
  inside, leave = threading.Event(), threading.Event()

  def today():
    with marks.stage(TODAY), marks.stage(CASE_CODE):
      inside.set()
      leave.wait(30)

  other = threading.Thread(target=today)
  with marks.stage(reader_stage("jax")):
    other.start()
    assert inside.wait(30)
    assert read_marks(slot, 7) == Marks(("case_code", "reader:jax"), None)
    leave.set()
    other.join()
    assert read_marks(slot, 7) == Marks(("reader:jax",), None)
  assert read_marks(slot, 7) == Marks((), None)
  marks.begin(8)
  assert read_marks(slot, 7) is None, "a record of another request is no word of this one"
  assert read_marks(slot, 8) == Marks((), None)


def test_the_thread_that_ends_the_process_leaves_its_stage(slot):
  marks = StageMarks(slot)
  marks.begin(3)
  with marks.stage(TODAY), marks.stage(CASE_CODE):
    marks.exiting()
    assert read_marks(slot, 3) == Marks(("case_code",), "case_code")


def test_a_record_that_does_not_read_exactly_is_no_word(slot):
  good = {"request_id": 5, "stages": ["today"], "exited_in": None}
  for record in [b"", b"{", b"[" * 3000, json.dumps({**good, "extra": 1}).encode(),
                 json.dumps({**good, "request_id": True}).encode(),
                 json.dumps({**good, "request_id": 5.0}).encode(),
                 json.dumps({**good, "stages": ["tracing"]}).encode(),
                 json.dumps({**good, "stages": ["reader:a/b"]}).encode(),
                 json.dumps({**good, "stages": ["today"] * 17}).encode(),
                 json.dumps({**good, "exited_in": 3}).encode(),
                 b"\xff\xfe" + b" " * 10, b"x" * (SLOT_BYTES + 1)]:
    os.ftruncate(slot, 0)
    os.pwrite(slot, record, 0)
    assert read_marks(slot, 5) is None, record[:80]
  os.ftruncate(slot, 0)
  os.pwrite(slot, json.dumps(good).encode().ljust(SLOT_BYTES), 0)
  assert read_marks(slot, 5) == Marks(("today",), None)


def test_a_record_too_large_for_its_slot_is_written_without_stages(slot):
  marks = StageMarks(slot)
  marks.begin(1)
  with marks.stage(reader_stage("r" * 5000)):
    assert read_marks(slot, 1) is None
    assert len(os.pread(slot, SLOT_BYTES + 1, 0)) == SLOT_BYTES


def test_os_exit_in_an_installed_process_names_the_stage_of_its_thread(slot):
  """A process that installed the marks and is ended by ``os._exit`` on another thread
  leaves that thread's stage; the main thread's stage stays in progress beside it."""
  code = textwrap.dedent(f"""
      import os, sys, threading
      from jaxport.harness._protocol import _stage_marks as sm
      sm.install({slot})
      sm.MARKS.begin(11)
      def case_code():
        with sm.stage(sm.TODAY), sm.stage(sm.CASE_CODE):
          os._exit(3)
      with sm.stage(sm.reader_stage("jaxport")):
        threading.Thread(target=case_code).start()
        threading.Event().wait(60)
      """)
  done = subprocess.run([sys.executable, "-c", code], pass_fds=(slot,), timeout=120,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert done.returncode == 3
  assert read_marks(slot, 11) == Marks(("case_code", "reader:jaxport"), "case_code")



# The child only marks and exits, on no lock another thread holds: the fork is safe here.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_process_forked_by_case_code_leaves_no_word_in_its_parents_file(slot):
  marks = StageMarks(slot)
  marks.begin(4)
  with marks.stage(CASE_CODE):
    pid = os.fork()
    if pid == 0:  # the child: whatever it marks or however it exits, the parent's word stays
      try:
        with marks.stage(TODAY):
          marks.exiting()
      finally:
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    assert read_marks(slot, 4) == Marks(("case_code",), None)
