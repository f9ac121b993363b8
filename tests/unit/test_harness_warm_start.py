"""A long-lived replay worker registers jax's native kernels, as a process that has lowered a
LAPACK call has, before it handles anything but a case listing (which it answers first, as
pytest's collection waits for it); a cold replay's worker does not, so that a crash of a
fresh process stays visible."""

from __future__ import annotations

import pytest

from jaxport.golden import EntryId
from jaxport.harness._worker import _main as _worker
from jaxport.harness._controller import _worker_client
from jaxport.harness._project import Project
from jaxport.harness._protocol._requests import CasesRequest, RecordRequest, ReplayRequest

from _python_child import run_python


class _Engine:
  def __init__(self, fail_cases: bool = False):
    self.calls: list[str] = []
    self.fail_cases = fail_cases
    self.fail_native = False

  def load_cases(self) -> None:
    self.calls.append("cases")
    if self.fail_cases:
      raise RuntimeError("a case module is broken")

  def warm_native_kernels(self) -> None:
    self.calls.append("native")
    if self.fail_native:
      raise RuntimeError("no LAPACK here")


_REPLAY = ReplayRequest(root="store", entry_id=EntryId.parse("cpu/f/c/2026-01-01_jax-0.10.2"),
                        readers=("jaxport",))


def test_start_up_imports_the_cases_and_leaves_the_native_kernels_for_later():
  engine = _Engine()
  _worker._warm_up(engine)
  assert engine.calls == ["cases"]


def test_a_failing_start_is_left_for_the_requests_to_report():
  engine = _Engine(fail_cases=True)
  _worker._warm_up(engine)
  assert engine.calls == ["cases"]


def test_the_case_listing_is_answered_before_the_native_kernels_are_registered():
  engine = _Engine()
  kernels = _worker.NativeKernels(engine, pending=True)
  kernels.before(CasesRequest())
  assert engine.calls == []
  kernels.answered()
  kernels.before(_REPLAY)
  kernels.answered()
  assert engine.calls == ["native"]


@pytest.mark.parametrize("first", [_REPLAY, RecordRequest(case_id="c", today="2026-01-01",
                                                          staging="s")])
def test_a_replay_or_record_coming_first_waits_for_the_native_kernels(first):
  engine = _Engine()
  kernels = _worker.NativeKernels(engine, pending=True)
  kernels.before(first)
  assert engine.calls == ["native"]
  assert not kernels.pending


def test_a_cold_replay_worker_registers_no_native_kernels():
  engine = _Engine()
  kernels = _worker.NativeKernels(engine, pending=False)
  kernels.before(_REPLAY)
  kernels.answered()
  assert engine.calls == []


def test_a_failure_to_register_the_native_kernels_is_left_to_the_requests():
  engine = _Engine()
  engine.fail_native = True
  kernels = _worker.NativeKernels(engine, pending=True)
  kernels.before(_REPLAY)
  assert engine.calls == ["native"] and not kernels.pending


def test_the_worker_collects_garbage_less_often_and_never_rescans_start_up(monkeypatch):
  calls = []
  monkeypatch.setattr(_worker.gc, "freeze", lambda: calls.append("freeze"))
  monkeypatch.setattr(_worker.gc, "get_threshold", lambda: (2000, 10, 10))
  monkeypatch.setattr(_worker.gc, "set_threshold", lambda *t: calls.append(t))
  _worker._collect_less()
  assert calls == ["freeze", (_worker.GC_YOUNG_THRESHOLD, 10, 10)]
  assert _worker.GC_YOUNG_THRESHOLD > 2000


def test_a_cold_replay_worker_is_started_fresh_with_the_cold_start_flag(monkeypatch, tmp_path):
  started: list[tuple[list[str], object]] = []

  def start_module(module, args, **kwargs):
    started.append((list(args), kwargs["preload"]))

  monkeypatch.setattr(_worker_client, "start_module", start_module)
  for cold_start in (False, True):
    client = _worker_client.WorkerClient(Project(case_modules=(), store=str(tmp_path)),
                                  cold_start=cold_start)
    client._start()
    client._close_pipes()
  assert [_worker_client.COLD_START_FLAG in argv for argv, _ in started] == [False, True]
  # A warm worker is forked with the worker's modules loaded; a cold one is a fresh process.
  assert [preload for _, preload in started] == [_worker_client.WORKER_PRELOAD, None]


def test_a_forked_worker_started_soon_starts_only_its_parent_and_a_fresh_one_starts(monkeypatch,
                                                                                   tmp_path):
  parents: list[object] = []
  started: list[object] = []
  monkeypatch.setattr(_worker_client, "start_parent",
                      lambda env, preload: parents.append(preload) or preload is not None)
  monkeypatch.setattr(_worker_client.WorkerClient, "start",
                      lambda self: started.append(self.cold_start))
  for cold_start in (False, True):
    _worker_client.WorkerClient(Project(case_modules=(), store=str(tmp_path)),
                                cold_start=cold_start).start_soon()
  # The warm worker's parent imports while the session goes on; its fork waits for the first
  # request. A cold worker has no parent: its own process starts at once.
  assert parents == [_worker_client.WORKER_PRELOAD, None]
  assert started == [True]


def test_a_worker_forked_from_its_parent_finds_the_release_table_read():
  # The parent imports ``_inherited`` with the worker's modules: a process that imported it has
  # read the table, which its forked workers then never read again.
  assert "jaxport.harness._worker._inherited" in _worker_client.WORKER_PRELOAD
  done = run_python("from jaxport.releases import _table\n"
                    "before = _table.load.cache_info().currsize\n"
                    "import jaxport.harness._worker._inherited\n"
                    "print(before, _table.load.cache_info().currsize)\n", timeout=60)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stdout.split() == ["0", "1"]
