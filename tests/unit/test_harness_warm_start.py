"""A long-lived replay worker starts with jax's native kernels registered, as a process that
has lowered a LAPACK call has; a cold replay's worker does not, so that a crash of a fresh
process stays visible."""

from __future__ import annotations

import pytest

from jaxport.harness import _worker, _worker_client
from jaxport.harness._project import Project


class _Engine:
  def __init__(self, fail_cases: bool = False):
    self.calls: list[str] = []
    self.fail_cases = fail_cases

  def load_cases(self) -> None:
    self.calls.append("cases")
    if self.fail_cases:
      raise RuntimeError("a case module is broken")

  def warm_native_kernels(self) -> None:
    self.calls.append("native")


@pytest.mark.parametrize("cold_start, calls", [(False, ["cases", "native"]), (True, ["cases"])])
def test_only_a_long_lived_worker_registers_native_kernels_at_start(cold_start, calls):
  engine = _Engine()
  _worker._warm_up(engine, cold_start)
  assert engine.calls == calls


def test_a_failing_start_is_left_for_the_requests_to_report():
  engine = _Engine(fail_cases=True)
  _worker._warm_up(engine, cold_start=False)
  assert engine.calls == ["cases"]


def test_a_cold_replay_worker_is_started_with_the_cold_start_flag(monkeypatch, tmp_path):
  started: list[list[str]] = []

  class _Popen:
    def __init__(self, argv, **kwargs):
      started.append(argv)
      self.pid = 1

  monkeypatch.setattr(_worker_client.subprocess, "Popen", _Popen)
  for cold_start in (False, True):
    client = _worker_client.WorkerClient(Project(case_modules=(), store=str(tmp_path)),
                                  cold_start=cold_start)
    client._start()
    client._close_pipes()
  assert [_worker_client.COLD_START_FLAG in argv for argv in started] == [False, True]
