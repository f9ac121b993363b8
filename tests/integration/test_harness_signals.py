"""A record that is stopped by a signal keeps what it finished: SIGTERM or SIGINT to pytest, or
to the ``jaxport record`` process alone, commits the entries recorded before it, leaves no
staging folder behind and no harness process running. Each test sends its signal only once it
has seen the second case start, after the first was recorded (no sleeps)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _downstream_project import CASE_PRELUDE, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = CASE_PRELUDE + """

def waits_forever(a):
  # Beside the case module: a file rather than a variable, so that the runs' workers fork
  # from the parent the test's other sessions use.
  with open(os.path.join(os.path.dirname(__file__), "b_started"), "w") as f:
    f.write("started")
  while True:
    time.sleep(0.05)


def cases():
  return [Case("a_done", "mine", lambda a: jnp.sin(a), square),
          Case("b_stopped", "mine", waits_forever, square)]
"""

DEADLINE_S = 180.0


# Runs the command after putting SIGINT back to its default: a run started in the background
# (where the shell ignores SIGINT for it) would otherwise pass it on as ignored. The command
# replaces this process, so a signal sent to its pid reaches the command.
_DEFAULT_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execv(sys.argv[1], sys.argv[1:])")


def _popen(cmd: list[str], **kwargs) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-c", _DEFAULT_SIGINT, *cmd], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kwargs)


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
  """Return once ``path`` exists; fail if ``proc`` ends first or the deadline passes."""
  end = time.monotonic() + DEADLINE_S
  while not path.exists():
    if proc.poll() is not None:
      out = proc.stdout.read() if proc.stdout else ""
      pytest.fail(f"the run ended ({proc.returncode}) before the second case started:\n"
                  f"{out[-3000:]}")
    if time.monotonic() > end:
      proc.kill()
      pytest.fail("the second case did not start in time")
    time.sleep(0.02)


def _project(pytester, tmp_path: Path) -> dict[str, str]:
  write_project(pytester, textwrap.dedent(CASES))
  temp = tmp_path / "tmp"
  temp.mkdir()
  return dict(os.environ, TMPDIR=str(temp),
              PYTHONPATH=os.pathsep.join(filter(None, [str(pytester.path),
                                                       os.environ.get("PYTHONPATH")])))


def _check_kept(pytester, tmp_path: Path, proc: subprocess.Popen) -> str:
  """The run's output, once it has ended having committed the first case only."""
  out, _ = proc.communicate(timeout=DEADLINE_S)
  assert proc.returncode != 0, out[-3000:]
  store = Path(pytester.path) / "golden" / "cpu" / "mine"
  assert [p.name for p in (store / "a_done").iterdir()] == [f"2026-12-01_jax-{_jax()}"], \
      out[-3000:]
  assert not (store / "b_stopped").exists()
  assert not list((tmp_path / "tmp").glob("jaxport-harness-staging-*")), out[-3000:]
  return out


def _jax() -> str:
  import jax
  return jax.__version__


PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
          "--compat-today=2026-12-01", "--compat-record"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_to_pytest_commits_the_entries_recorded_before_it(pytester, tmp_path, sig):
  env = _project(pytester, tmp_path)
  proc = _popen(PYTEST, cwd=pytester.path, env=env)
  _wait_for(Path(pytester.path) / "b_started", proc)
  proc.send_signal(sig)
  _check_kept(pytester, tmp_path, proc)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_to_the_record_command_alone_reaches_its_harness_and_commits(
    pytester, tmp_path, sig):
  env = _project(pytester, tmp_path)
  cmd = [str(Path(sys.executable).parent / "jaxport"), "record", "--project", str(pytester.path), "--",
         "-p", "no:randomly", "--compat-today=2026-12-01"]
  proc = _popen(cmd, cwd=pytester.path, env=env)
  _wait_for(Path(pytester.path) / "b_started", proc)
  proc.send_signal(sig)
  out = _check_kept(pytester, tmp_path, proc)
  assert f"{sig.name}: passed to the harness" in out, out[-3000:]


def test_a_second_ctrl_c_waits_for_the_commit_and_prints_no_traceback(pytester, tmp_path):
  env = _project(pytester, tmp_path)
  cmd = [str(Path(sys.executable).parent / "jaxport"), "record", "--project", str(pytester.path),
         "--", "-p", "no:randomly", "--compat-today=2026-12-01"]
  proc = _popen(cmd, cwd=pytester.path, env=env)
  _wait_for(Path(pytester.path) / "b_started", proc)
  proc.send_signal(signal.SIGINT)
  # The second only once the first was passed on (two pending SIGINTs would merge into one).
  seen = []
  for line in proc.stdout:
    seen.append(line)
    if "SIGINT: passed to the harness" in line:
      break
  proc.send_signal(signal.SIGINT)
  out = "".join(seen) + _check_kept(pytester, tmp_path, proc)
  assert "Traceback (most recent call last)" not in out, out[-3000:]
  assert out.count("SIGINT: passed to the harness") == 2, out[-3000:]
