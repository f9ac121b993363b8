"""A child forked from a preloading parent starts as ``subprocess.Popen`` would have started
it: its arguments, environment, folder, ``sys.path``, standard streams, passed descriptors,
session and exit status; and where forking cannot give it that start, it starts fresh."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from jaxport._environment import PARENT_PID_ENV
from jaxport._isolation import _preloaded

pytestmark = pytest.mark.usefixtures("own_preloading_parents")

PROBE = """
import gc, json, os, sys, tempfile
state = {
    "argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("PROBE_MARKER"),
    "path_head": sys.path[:2], "path": sys.path, "stdin": sys.stdin.read(), "session_leader": os.getsid(0) == os.getpid(),
    "preloaded": "json" in sys.modules and "email.parser" in sys.modules,
    "main": __name__, "parent_env": os.environ.get("%s"),
    "writes_bytecode": not sys.dont_write_bytecode,
    "addopts": os.environ.get("PYTEST_ADDOPTS"), "fault": os.environ.get("JAXPORT_TEST_PARSER_FAULT"),
    "hook": os.environ.get("HOOK_SAW"), "collects": gc.isenabled(),
    "programs": os.environ.get("PATH"), "temp": tempfile.gettempdir(),
}
os.write(int(sys.argv[1]), b"passed\\n")
print(json.dumps(state))
if sys.argv[2] == "signal":
    sys.stdout.flush()
    os.kill(os.getpid(), 15)
sys.exit(int(sys.argv[2]) if sys.argv[2].isdigit() else 0)
""" % PARENT_PID_ENV


@pytest.fixture
def project(tmp_path):
  (tmp_path / "probe_child.py").write_text(PROBE)
  (tmp_path / "work").mkdir()
  return tmp_path


def _start(project, status, preload=("json", "email.parser"), **env):
  out = tempfile.TemporaryFile()
  read_end, write_end = os.pipe()
  try:
    child = _preloaded.start_module(
        "probe_child", [str(write_end), status],
        env={**os.environ, "PROBE_MARKER": "m1", PARENT_PID_ENV: str(os.getpid()), **env},
        paths=(str(project),), cwd=project / "work", pass_fds=(write_end,),
        stdout=out.fileno(), stderr=out.fileno(), new_session=True, preload=preload)
  finally:
    os.close(write_end)
  code = child.wait(timeout=60)
  with os.fdopen(read_end, "rb") as passed:
    assert passed.read() == b"passed\n"
  out.seek(0)
  text = out.read().decode()
  try:
    state = json.loads(text.splitlines()[0])
  except (ValueError, IndexError):
    state = None
  return child, code, state, text


def test_a_forked_child_starts_as_a_fresh_one_would(project):
  child, code, state, _ = _start(project, "3")
  assert isinstance(child, _preloaded.PreloadedChild)
  assert code == 3 and child.poll() == 3
  assert state["argv"][1:] == ["3"]
  assert state["cwd"] == str(project / "work")
  assert state["marker"] == "m1"
  # ``python -m`` puts the working folder first, then PYTHONPATH's folders.
  assert state["path_head"] == [str(project / "work"), str(project)]
  assert state["stdin"] == ""
  assert state["session_leader"] and state["preloaded"] and state["main"] == "__main__"
  # Its garbage is collected, as in a fresh interpreter (the parent collects none while it
  # imports).
  assert state["collects"]
  # It dies with the parent that forked it, the process it names as its parent.
  assert state["parent_env"] != str(os.getpid())
  assert int(state["parent_env"]) == _preloaded._parents[next(iter(_preloaded._parents))].proc.pid


def test_a_child_killed_by_a_signal_reads_as_popen_gives_it(project):
  child, code, state, _ = _start(project, "signal")
  assert isinstance(child, _preloaded.PreloadedChild)
  assert code == -signal.SIGTERM and state["marker"] == "m1"


def test_one_parent_serves_the_children_of_one_environment(project):
  _start(project, "0")
  before = dict(_preloaded._parents)
  _start(project, "0", PYTEST_CURRENT_TEST="another test")
  assert _preloaded._parents == before
  # Another PYTHONPATH: the same parent, the child's own path.
  child, _, state, _ = _start(project, "0", PYTHONPATH=str(project / "elsewhere"))
  assert isinstance(child, _preloaded.PreloadedChild) and _preloaded._parents == before
  assert str(project / "elsewhere") in state["path"]
  # Whether it writes bytecode is the child's to apply too: the same parent, each child as
  # its own variable says.
  _, _, writing, _ = _start(project, "0", PYTHONDONTWRITEBYTECODE="")
  _, _, not_writing, _ = _start(project, "0", PYTHONDONTWRITEBYTECODE="1")
  assert _preloaded._parents == before
  assert writing["writes_bytecode"] and not not_writing["writes_bytecode"]
  # XLA reads its flags when a backend starts, in the child: the same parent.
  _start(project, "0", XLA_FLAGS="--xla_force_host_platform_device_count=8")
  assert _preloaded._parents == before
  # A script's search path and temporary folder are read by what the child runs: the same
  # parent, the child's own.
  (project / "temp").mkdir()
  _, _, script, _ = _start(project, "0", PATH=f"{project}{os.pathsep}{os.environ['PATH']}",
                           TMPDIR=str(project / "temp"))
  assert _preloaded._parents == before
  assert script["programs"].startswith(f"{project}{os.pathsep}")
  assert script["temp"] == str(project / "temp")
  # pytest's options and jaxport's own variables are read when the child asks: the same
  # parent, each child with its own values.
  _, _, own, _ = _start(project, "0", PYTEST_ADDOPTS="-q", JAXPORT_TEST_PARSER_FAULT="crash:00")
  assert _preloaded._parents == before
  assert (own["addopts"], own["fault"]) == ("-q", "crash:00")
  _start(project, "0", JAX_ENABLE_X64="1")  # read on import: another parent
  assert len(_preloaded._parents) == len(before) + 1


def test_what_importing_jax_sets_in_the_environment_starts_no_other_parent(project):
  # A parent started before this process imported jax, then a child asked for after it: the
  # same parent. The same variables at values the import would not give them: another.
  unset = {k: v for k, v in os.environ.items() if k not in _preloaded._SET_BY_IMPORT}
  preload = ("json",)
  _preloaded.start_parent(env=unset, preload=preload)
  before = dict(_preloaded._parents)
  _preloaded.start_parent(env={**unset, "TF_CPP_MIN_LOG_LEVEL": "1", "TPU_SKIP_MDS_QUERY": "1"},
                          preload=preload)
  assert _preloaded._parents == before and len(before) == 1
  _preloaded.start_parent(env={**unset, "TF_CPP_MIN_LOG_LEVEL": "0"}, preload=preload)
  assert len(_preloaded._parents) == 2


def test_a_module_preloaded_where_present_may_be_missing(project):
  child, code, state, _ = _start(
      project, "0", preload=("json", "email.parser", _preloaded.IF_PRESENT + "no_such_module"))
  assert isinstance(child, _preloaded.PreloadedChild)
  assert code == 0 and state["preloaded"]


def test_a_child_whose_path_shadows_a_preloaded_module_starts_fresh(project, caplog):
  (project / "json").mkdir()
  (project / "json" / "__init__.py").write_text("dumps = lambda obj: 'shadowed'\n")
  with caplog.at_level(logging.INFO, logger=_preloaded.__name__):
    child, code, _, text = _start(project, "0")
  assert not isinstance(child, _preloaded.PreloadedChild) and code == 0
  assert "shadowed" in text
  assert "refused json" in caplog.text


def test_a_child_whose_path_holds_a_startup_hook_starts_fresh_and_runs_it(project, caplog):
  # A sitecustomize in the child's own folders runs as it starts and may read any variable,
  # jaxport's own too: a forked child would have had this process's start instead.
  hooks = project / "hooks"
  hooks.mkdir()
  (hooks / "sitecustomize.py").write_text(
      "import os\nos.environ['HOOK_SAW'] = os.environ.get('JAXPORT_TEST_PARSER_FAULT', '')\n")
  with caplog.at_level(logging.INFO, logger=_preloaded.__name__):
    child, code, state, _ = _start(project, "0", PYTHONPATH=str(hooks),
                                   JAXPORT_TEST_PARSER_FAULT="crash:11")
  assert not isinstance(child, _preloaded.PreloadedChild) and code == 0
  assert state["hook"] == "crash:11"
  assert "refused sitecustomize" in caplog.text


def test_a_startup_hook_on_the_first_childs_path_leaves_the_parent_to_serve_the_next(
    project, caplog):
  # The first child of an environment starts its parent: a hook on that child's path, which
  # the parent would have run as it started, must not keep it from forking the children after.
  hooks = project / "hooks"
  hooks.mkdir()
  (hooks / "sitecustomize.py").write_text("import os\nos.environ['HOOK_SAW'] = 'ran'\n")
  with caplog.at_level(logging.INFO, logger=_preloaded.__name__):
    first, code, state, _ = _start(project, "0", PYTHONPATH=str(hooks))
  assert not isinstance(first, _preloaded.PreloadedChild) and code == 0
  assert state["hook"] == "ran"
  second, code, state, _ = _start(project, "0")
  assert isinstance(second, _preloaded.PreloadedChild) and code == 0
  assert state["hook"] is None and state["preloaded"]
  assert f"starts without {hooks} on its path: it holds sitecustomize" in caplog.text


def test_a_parent_that_cannot_preload_leaves_children_to_start_fresh(project, caplog):
  with caplog.at_level(logging.INFO, logger=_preloaded.__name__):
    child, code, state, _ = _start(project, "0", preload=("no_such_module_anywhere",))
  assert not isinstance(child, _preloaded.PreloadedChild)
  assert code == 0 and state["marker"] == "m1"
  assert "did not start" in caplog.text and "no_such_module_anywhere" in caplog.text
  # Not asked again: the next child of that environment starts fresh at once.
  child, _, _, _ = _start(project, "0", preload=("no_such_module_anywhere",))
  assert not isinstance(child, _preloaded.PreloadedChild)





def test_off_linux_every_child_starts_fresh(project, monkeypatch):
  monkeypatch.setattr(_preloaded.sys, "platform", "darwin")
  child, code, state, _ = _start(project, "0")
  assert not isinstance(child, _preloaded.PreloadedChild) and not _preloaded._parents
  assert code == 0 and state["marker"] == "m1"


def test_a_parent_started_ahead_says_when_a_fork_would_no_longer_wait(project):
  env = {**os.environ, "PROBE_MARKER": "ahead", PARENT_PID_ENV: str(os.getpid())}
  preload = ("json", "email.parser")
  deadline = time.monotonic() + 60
  while _preloaded.start_parent(env=env, preload=preload):  # its imports still going on
    assert time.monotonic() < deadline, "the parent never said it was ready"
    time.sleep(0.01)
  (parent,) = [p for k, p in _preloaded._parents.items() if ("PROBE_MARKER", "ahead") in k[2]]
  assert parent.ready
  # The child forked afterwards comes from that parent; where children start fresh there is
  # nothing to wait for.
  child, code, state, _ = _start(project, "0", PROBE_MARKER="ahead")
  assert isinstance(child, _preloaded.PreloadedChild) and code == 0
  assert int(state["parent_env"]) == parent.proc.pid
  assert not _preloaded.start_parent(env=env, preload=None)


def test_a_parent_whose_starter_leaves_without_a_child_exits_quietly():
  # The starter closes its end with "ready" unread (a session that started a parent ahead and
  # ended before its first worker): the parent reads that as the end, not as an error.
  mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
  proc = subprocess.Popen(
      [sys.executable, "-m", _preloaded.PARENT_MODULE, "--socket-fd", str(theirs.fileno()),
       "--preload", "json"], pass_fds=(theirs.fileno(),), stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT)
  theirs.close()
  mine.settimeout(60)
  assert mine.recv(1, socket.MSG_PEEK) == b"r"  # it said ready; nobody reads it
  mine.close()
  assert proc.wait(timeout=60) == 0
  assert proc.stdout.read() == b""
