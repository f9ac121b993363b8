"""A process's preloading parents serve its descendants too: a session or command started as
a process of its own, with the same interpreter, preloads and environment, forks its children
from its ancestor's parent on a connection of its own instead of starting a parent (and an
import of jax) again; the children forked for it die with it; a descendant that parent cannot
serve starts one of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from jaxport._environment import PARENT_PID_ENV, SHARED_PARENTS_ENV
from jaxport._isolation import _preloaded

from _python_child import running

pytestmark = pytest.mark.usefixtures("own_preloading_parents")

PRELOAD = ("json", "email.parser")

# The child: its pid, the parent it names and whether it found its preloads, on the descriptor
# it is passed; then it exits, or sleeps until it is killed.
PROBE = """
import json, os, sys, time
fd, mode = int(sys.argv[1]), sys.argv[2]
os.write(fd, json.dumps({"pid": os.getpid(), "parent_env": os.environ.get(%r),
                         "preloaded": "email.parser" in sys.modules,
                         "executable": sys.executable}).encode())
os.close(fd)
if mode == "sleep":
  time.sleep(600)
""" % PARENT_PID_ENV

# The descendant: asks for one child as a session's worker would be asked for, and says where
# it came from; with "sleep", waits on its stdin with that child alive.
DESCENDANT = """
import json, os, sys
from jaxport._environment import PARENT_PID_ENV
from jaxport._isolation import _preloaded
project, mode = sys.argv[1], sys.argv[2]
env = {**os.environ, "PROBE_MARKER": "m1", PARENT_PID_ENV: str(os.getpid())}
if mode == "x64":
  env["JAX_ENABLE_X64"] = "1"  # read on import: another environment
read_end, write_end = os.pipe()
with open(os.path.join(project, "child.log"), "wb") as out:
  child = _preloaded.start_module(
      "probe_child", [str(write_end), mode], env=env, paths=(project,), cwd=project,
      pass_fds=(write_end,), stdout=out.fileno(), stderr=out.fileno(), new_session=True,
      preload=%r)
os.close(write_end)
said = json.loads(os.read(read_end, 4096))
(parent,) = _preloaded._parents.values()
print(json.dumps({"forked": isinstance(child, _preloaded.PreloadedChild),
                  "shared": parent.shared, "parent_pid": parent.pid, "child": said}), flush=True)
if mode == "sleep":
  sys.stdin.read()
print(json.dumps({"exit": child.wait(timeout=60)}), flush=True)
""" % (PRELOAD,)


@pytest.fixture
def project(tmp_path):
  (tmp_path / "probe_child.py").write_text(PROBE)
  return tmp_path


def _ancestors_parent(project) -> _preloaded._Parent:
  """The parent this process starts for the descendants' preloads and environment (its first
  child asked for, and waited for); the folder it listens in is then named in the
  environment the descendants inherit."""
  read_end, write_end = os.pipe()
  with open(os.devnull, "wb") as null:
    child = _preloaded.start_module(
        "probe_child", [str(write_end), "0"],
        env={**os.environ, "PROBE_MARKER": "m1", PARENT_PID_ENV: str(os.getpid())},
        paths=(str(project),), cwd=project, pass_fds=(write_end,), stdout=null.fileno(),
        stderr=null.fileno(), new_session=True, preload=PRELOAD)
  os.close(write_end)
  os.read(read_end, 4096)
  os.close(read_end)
  assert child.wait(timeout=60) == 0 and isinstance(child, _preloaded.PreloadedChild)
  (parent,) = _preloaded._parents.values()
  assert isinstance(parent, _preloaded._Parent) and os.environ.get(SHARED_PARENTS_ENV)
  return parent


def _descendant(project, mode: str, python: str = sys.executable) -> subprocess.Popen:
  return subprocess.Popen([python, "-c", DESCENDANT, str(project), mode],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ))


def test_a_descendant_forks_its_child_from_its_ancestors_parent(project):
  parent = _ancestors_parent(project)
  proc = _descendant(project, "0")
  out, _ = proc.communicate(timeout=120)
  said, ended = [json.loads(line) for line in out.splitlines()]
  assert said["forked"] and said["shared"] and said["parent_pid"] == parent.proc.pid
  assert said["child"]["executable"] == sys.executable
  # The child names the parent whose death ends it, and found its preloads there.
  assert said["child"]["parent_env"] == str(parent.proc.pid) and said["child"]["preloaded"]
  assert ended == {"exit": 0} and proc.returncode == 0


def test_a_descendant_started_by_another_name_of_this_interpreter_shares_its_parent(project):
  # A venv's python and python3 are one interpreter (a console script's shebang names one, a
  # test's sys.executable may name the other); the child gets the name it was asked by.
  here = os.path.basename(sys.executable)
  other = next((os.path.join(os.path.dirname(sys.executable), name)
                for name in ("python3", "python") if name != here
                and os.path.realpath(os.path.join(os.path.dirname(sys.executable), name))
                == os.path.realpath(sys.executable)), None)
  if other is None:
    pytest.skip(f"{sys.executable} has no python or python3 beside it naming the same "
                "interpreter")
  parent = _ancestors_parent(project)
  proc = _descendant(project, "0", python=other)
  out, _ = proc.communicate(timeout=120)
  said = json.loads(out.splitlines()[0])
  assert said["shared"] and said["parent_pid"] == parent.proc.pid
  assert said["child"]["executable"] == other


def test_a_descendants_children_die_with_it(project):
  _ancestors_parent(project)
  proc = _descendant(project, "sleep")
  try:
    said = json.loads(proc.stdout.readline())
    child = said["child"]["pid"]
    assert said["shared"] and running(child)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while running(child):
      assert time.monotonic() < deadline, "the child outlived the process it was forked for"
      time.sleep(0.05)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()


def test_a_descendant_of_another_environment_starts_a_parent_of_its_own(project):
  parent = _ancestors_parent(project)
  proc = _descendant(project, "x64")
  out, _ = proc.communicate(timeout=120)
  said = json.loads(out.splitlines()[0])
  assert said["forked"] and not said["shared"] and said["parent_pid"] != parent.proc.pid
  assert said["child"]["parent_env"] == str(said["parent_pid"])


def test_a_socket_whose_parent_died_is_passed_over(project, monkeypatch, tmp_path_factory):
  # The folder holds the socket of the parent this process's children would ask, left behind
  # by a parent that died without removing it: nothing listens there.
  folder = tmp_path_factory.mktemp("parents")
  monkeypatch.setenv(SHARED_PARENTS_ENV, str(folder))
  key = _preloaded._key(PRELOAD, {**os.environ, "PROBE_MARKER": "m1"})
  stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  stale.bind(_preloaded._socket_path(key))
  stale.close()
  parent = _ancestors_parent(project)
  assert not parent.shared and parent.proc.poll() is None
