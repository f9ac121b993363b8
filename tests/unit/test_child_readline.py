"""Reading a child's answers line by line: lines that come in together are each returned at
once, a line that comes in parts is joined, and a line that never ends times out."""

import subprocess
import sys
import time

import pytest

from jaxport._isolation._process import readline


def _child(source: str) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)


@pytest.fixture
def stopped():
  procs: list[subprocess.Popen] = []
  yield procs.append
  for proc in procs:
    proc.kill()
    proc.wait()


def test_lines_written_together_are_each_returned_without_waiting(stopped):
  # Two answers in one write, then the child waits for its input: the second answer is
  # already read in with the first and must not wait on the pipe.
  proc = _child("import sys; sys.stdout.write('one\\ntwo\\n'); sys.stdout.flush(); "
                "sys.stdin.readline()")
  stopped(proc)
  assert readline(proc, 30.0) == "one\n"
  start = time.monotonic()
  assert readline(proc, 30.0) == "two\n"
  assert time.monotonic() - start < 10.0
  assert readline(proc, 0.2) is None  # nothing more written: a timeout, not a hang


def test_a_line_written_in_parts_is_returned_whole_and_end_of_file_reads_empty(stopped):
  proc = _child("import sys, time; sys.stdout.write('{\"a\": '); sys.stdout.flush(); "
                "time.sleep(0.3); sys.stdout.write('1}\\nlast'); sys.stdout.flush()")
  stopped(proc)
  assert readline(proc, 30.0) == '{"a": 1}\n'
  assert readline(proc, 30.0) == "last"  # the end of the output, without a newline
  assert readline(proc, 30.0) == ""


def test_a_line_that_never_ends_times_out(stopped):
  proc = _child("import sys, time; sys.stdout.write('half'); sys.stdout.flush(); "
                "time.sleep(60)")
  stopped(proc)
  start = time.monotonic()
  assert readline(proc, 0.5) is None
  assert time.monotonic() - start < 30.0
