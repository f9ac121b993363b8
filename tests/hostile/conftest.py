"""Every hostile-input test runs under a time limit (``_sandbox`` runs child processes under
time and memory limits)."""

from __future__ import annotations

import signal

import pytest

from _sandbox import TIME_LIMIT_S


class _TimeLimit(Exception):
  pass


@pytest.fixture(autouse=True)
def time_limit():
  """Fails a test that runs past TIME_LIMIT_S (SIGALRM interrupts Python-level loops)."""
  if not hasattr(signal, "SIGALRM"):
    yield
    return

  def expire(signum, frame):
    raise _TimeLimit(f"the test ran past its time limit of {TIME_LIMIT_S} s: a hostile input hangs")

  old = signal.signal(signal.SIGALRM, expire)
  signal.alarm(TIME_LIMIT_S)
  try:
    yield
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
