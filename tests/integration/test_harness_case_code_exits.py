"""Case code that ends its process (SystemExit, KeyboardInterrupt, another BaseException) while
the worker replays or records is named as the case's failure, with its cause, not as a jax
compatibility break or a dead worker; case code that kills its process shows its own exit
status, not the harness's kill; the entries after it are judged as usual."""

import json
import os
import textwrap
import time

import pytest

from _downstream_project import CASE_PRELUDE, switch, switched_on, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = """
import os
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix


def square():
  return (random_matrix(0, (3, 3), np.float32),), {}


def exiting(a):
  if SWITCH:
    RAISED
  return jnp.sin(a)


def cases():
  return [Case("a_exiting", "mine", exiting, square),
          Case("b_fine", "mine", lambda a: jnp.cos(a), square)]
""".replace("SWITCH", switched_on("CASE_EXITS"))


RUN = ("-p", "no:cacheprovider", "--compat-today=2026-12-01")


def _recorded_then_ending(pytester, ending: str) -> None:
  """Record the cases, then make ``a_exiting``'s function run ``ending`` from now on."""
  write_project(pytester, textwrap.dedent(CASES.replace("RAISED", ending)))
  assert pytester.runpytest(*RUN, "--compat-record").ret == 0
  switch(pytester.path, "CASE_EXITS")


@pytest.mark.parametrize("raised", ["SystemExit(0)", "KeyboardInterrupt()"])
def test_case_code_that_ends_the_process_is_named_as_the_cases_failure(pytester, tmp_path,
                                                                      raised):
  _recorded_then_ending(pytester, f"raise {raised}")
  report_file = tmp_path / "report.json"
  result = pytester.runpytest(*RUN, f"--compat-report={report_file}")
  assert result.ret == 1
  entries = {e["case_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  exiting = entries["a_exiting"]
  assert exiting["status"] == "fail" and exiting["kinds"] == ["export_error"], exiting
  name = raised.split("(")[0]
  assert any(f"the case's code raised {name}(" in m for m in exiting["messages"]), exiting
  assert not any("worker process died" in m for m in exiting["messages"])
  assert entries["b_fine"]["status"] == "pass", entries["b_fine"]

  # Recording it names the same cause, and the other case is recorded.
  recorded = pytester.runpytest(*RUN, "--compat-record",
                                           "--compat-today=2026-12-02")
  text = recorded.stdout.str()
  assert recorded.ret == 1
  assert f"the case's code raised {name}(" in text
  assert "written   cpu/mine/b_fine/2026-12-02" in text


@pytest.mark.parametrize("sharing", [(), ("--compat-no-cache",)], ids=["threads", "no-cache"])
def test_case_code_that_kills_its_process_is_the_cases_export_error_with_its_exit_status(
    pytester, tmp_path, sharing):
  _recorded_then_ending(pytester, "os._exit(3)")
  report_file = tmp_path / "report.json"
  assert pytester.runpytest(*RUN, *sharing, f"--compat-report={report_file}").ret == 1
  entries = {e["case_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  exiting = entries["a_exiting"]
  text = "\n".join(exiting["messages"])
  # The recorded entry was never at fault: the case's function ended the process when traced.
  assert exiting["status"] == "fail" and exiting["kinds"] == ["export_error"], exiting
  assert "was ended by a call of os._exit during the case's own code" in text, text
  assert "the worker exited, exit code 3" in text and "SIGKILL" not in text, text
  assert "reader" not in text.split("while no reader")[0], text
  assert entries["b_fine"]["status"] == "pass", entries["b_fine"]


FORKING_CASES = CASE_PRELUDE + """

def forking(a):
  if os.environ.get("CASE_FORKS") and os.fork() == 0:
    with open(os.environ["CASE_FORKS"], "w") as f:
      f.write(str(os.getpid()))
    time.sleep(300)
    os._exit(0)
  return jnp.sin(a)


def cases():
  return [Case("forking", "mine", forking, square)]
"""


def _gone(pid: int, deadline_s: float = 30.0) -> bool:
  """Whether process ``pid`` ends (or is a zombie awaiting its reaper) within the deadline."""
  end = time.monotonic() + deadline_s
  while time.monotonic() < end:
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
          return True
    except FileNotFoundError:
      return True
    time.sleep(0.1)
  os.kill(pid, 9)
  return False


def test_a_process_forked_by_case_code_does_not_outlive_the_session(pytester, tmp_path,
                                                                    monkeypatch):
  write_project(pytester, textwrap.dedent(FORKING_CASES))
  assert pytester.runpytest(*RUN, "--compat-record").ret == 0
  pid_file = tmp_path / "forked.pid"
  monkeypatch.setenv("CASE_FORKS", str(pid_file))
  # Its own process: the session's end, not this test process's, must take the fork with it.
  result = pytester.runpytest_subprocess(*RUN, timeout=240)
  assert result.ret == 0, result.stdout.str()[-3000:]
  assert _gone(int(pid_file.read_text())), "the forked process outlived the session"


def test_artifacts_cut_short_by_a_dying_worker_say_what_was_written(pytester, tmp_path):
  _recorded_then_ending(pytester, "os._exit(3)")
  out = tmp_path / "artifacts"
  result = pytester.runpytest(*RUN, f"--compat-artifacts={out}")
  assert result.ret == 1
  (folder,) = [p for p in out.iterdir() if "a_exiting" in p.name]
  summary = json.loads((folder / "artifacts.json").read_text())
  # The recorded blob ran (obtained.npz is whole); today's export of the case killed the worker.
  assert summary["files"] == ["obtained.npz"] and summary["writing"] == "today.mlir", summary
  text = result.stdout.str()
  assert (f"artifacts: {folder}, incomplete: obtained.npz written, today.mlir not (the worker "
          "stopped while writing it)") in " ".join(text.split())
  assert "none written" not in text
