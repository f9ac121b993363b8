"""Work queued ahead on the harness's reader thread: run in place when needed before it
starts, never waited for behind the thread that needs it, and settled before an entry ends."""

import threading

import pytest

from jaxport.harness._worker import _engine


@pytest.fixture
def reader_thread():
  """The reader thread of a threaded replay engine."""
  engine = _engine.ReplayEngine(threads=True)
  yield engine._executor
  engine.close()


def test_queued_work_behind_a_busy_thread_runs_in_place(reader_thread):
  release = threading.Event()
  busy = _engine._Ahead(release.wait, reader_thread)
  where = []
  queued = _engine._Ahead(lambda: where.append(threading.current_thread().name) or "done",
                          reader_thread)
  assert queued.result() == "done"
  assert where == [threading.current_thread().name]
  release.set()
  busy.settle()


def test_started_work_is_waited_for_and_taken(reader_thread):
  started, release = threading.Event(), threading.Event()

  def work():
    started.set()
    release.wait()
    return threading.current_thread().name

  task = _engine._Ahead(work, reader_thread)
  started.wait(10)
  threading.Timer(0.05, release.set).start()
  assert task.result().startswith("jaxport-reader")


def test_settling_drops_unstarted_work_and_waits_for_started_work(reader_thread):
  release, ran = threading.Event(), []
  running = _engine._Ahead(lambda: (release.wait(), ran.append("running")), reader_thread)
  dropped = _engine._Ahead(lambda: ran.append("dropped"), reader_thread)
  dropped.settle()
  threading.Timer(0.05, release.set).start()
  running.settle()
  assert ran == ["running"]


def test_without_the_reader_thread_work_runs_when_needed():
  ran = []
  task = _engine._Ahead(lambda: ran.append(threading.current_thread().name) or 1, None)
  assert ran == []
  assert task.result() == 1 and ran == [threading.current_thread().name]
