"""Start a ``python -m MODULE`` child forked from a parent that imported the module's
dependencies once (``_preloaded_parent``), instead of a fresh interpreter that imports them
again: a harness session, and a test process running many sessions, start many workers, each
of which would spend about a second importing jax.

What the child gets is what ``subprocess.Popen`` would have given it: its arguments, its
environment, its working folder, ``sys.path`` from its ``PYTHONPATH``, standard input from
``/dev/null``, standard output and error to one file, the descriptors it is passed at the
same numbers, a session of its own. One parent serves every child of one interpreter,
preload list and environment (but for ``PYTHONPATH`` and ``PYTHONDONTWRITEBYTECODE``, which
the child applies itself, and variables nothing reads on import: those pytest changes per test
and sets for the sessions a test starts, and jaxport's own ``JAXPORT_*``); a
parent is started on first use and lives as long as the process that started it. It serves
that process's descendants too (a session or command a test or a script starts, with the same
interpreter, preloads and environment): it listens in a private folder that the first process
to start a parent makes and names in ``JAXPORT_PRELOADED_PARENTS``, and a descendant asks it on
a connection of its own, whose end kills the children forked for it (they would otherwise have
died with a parent of the descendant's own). A descendant whose ancestor's parent cannot serve
it starts one of its own.

A child is started fresh with ``subprocess.Popen`` instead whenever forking cannot give it
the same start: the parent cannot start or died, it refuses a child whose ``sys.path`` would
import one of its modules from another file or run a startup hook (``sitecustomize``) of its
own, or the process that started it has forked
since; and on systems other than Linux, where forking a process that loaded native libraries
(macOS's system frameworks) is not safe. A parent starts without the ``PYTHONPATH`` folders
that hold a startup hook, so that a child that must run one leaves the parent fit for the
next. Only the standard library is imported here.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.machinery
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Sequence

from jaxport._environment import PARENT_PID_ENV, SHARED_PARENTS_ENV, shared_parents_folder
from jaxport._isolation._preloaded_parent import HEADER, READY, STARTUP_HOOKS, peer

log = logging.getLogger(__name__)

PARENT_MODULE = "jaxport._isolation._preloaded_parent"
# Marks a preloaded module the parent imports only where it imports (an optional dependency).
IF_PRESENT = "?"
# Seconds to wait for a parent to import its modules and fork a child.
START_TIMEOUT_S = 300.0
# Seconds to wait for an ancestor's parent to take a connection.
_CONNECT_TIMEOUT_S = 10.0
# The bytes a Unix socket's path may take on Linux (``sun_path``, its final zero included).
_SOCKET_PATH_BYTES = 108
# Variables the preloaded modules (jax, numpy, jaxport) never read while they import, which
# pytest changes from one test to the next: one parent serves a test process's sessions.
# (PYTHONPATH and PYTHONDONTWRITEBYTECODE are the child's own to apply: ``_CHILD_APPLIES``.)
_NOT_READ_ON_IMPORT = frozenset({"HOME", "USERPROFILE", "PYTEST_CURRENT_TEST",
                                 "PYTEST_DEBUG_TEMPROOT", "PY_COLORS",
                                 # pytest reads it when it parses a command line, in the child.
                                 "PYTEST_ADDOPTS",
                                 # XLA reads it when a backend starts, which happens in the
                                 # child (the host device count of a multi-device worker).
                                 "XLA_FLAGS",
                                 # Importing Mosaic GPU (which Pallas' GPU lowering does)
                                 # writes it, whatever it was; only its compiler reads it,
                                 # in the child, which has its own value.
                                 "MOSAIC_GPU_CUDA_ROOT",
                                 # pytest-xdist sets them in its workers and reads them while
                                 # a session runs: a worker's descendants share its parents.
                                 "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                                 "PYTEST_XDIST_TESTRUNUID",
                                 # The programs' search path, the temporary folder (the child
                                 # forgets any the parent's ``tempfile`` chose) and the shell's
                                 # own: read by what a child runs, by none of the preloads as
                                 # they import, so a script's commands share a test's parent.
                                 "PATH", "TMPDIR", "TEMP", "TMP", "SHLVL", "_", "PWD",
                                 "OLDPWD"})
# jaxport's own variables: read through ``jaxport._environment``'s accessors when a function
# asks, never on import, so the child reads its own values.
_JAXPORTS_OWN = "JAXPORT_"
_NO_CHILD = "the preloading parent forked no child: "
# Variables the forked child applies itself, as a fresh interpreter would at its start: its
# ``sys.path`` and whether it writes bytecode for what it imports.
_CHILD_APPLIES = frozenset({"PYTHONPATH", "PYTHONDONTWRITEBYTECODE"})
# What importing jax writes into the environment where it is unset: its package's default log
# level for XLA, and its Cloud TPU check's answer on a machine without TPU chips. A parent
# started before this process imported jax saw them unset and its own import set them to these
# values, so a child whose environment holds exactly these values is served by that parent (a
# session's workers start ahead of collection, which may import jax).
_SET_BY_IMPORT = {"TF_CPP_MIN_LOG_LEVEL": "1", "TPU_SKIP_MDS_QUERY": "1"}
# What a parent answers for a child it will not fork (a module would come from another file).
_REFUSED = _NO_CHILD + "refused"


def _readline(sock: socket.socket, timeout_s: float | None) -> bytes | None:
  """One line from ``sock`` (without its end), or None at end of file or on timeout."""
  sock.settimeout(timeout_s)
  data = bytearray()
  try:
    while not data.endswith(b"\n"):
      chunk = sock.recv(1)
      if not chunk:
        return None
      data += chunk
  except (TimeoutError, socket.timeout, OSError):
    return None
  return bytes(data[:-1])


class PreloadedChild:
  """A forked child as far as the harness uses ``subprocess.Popen``: its ``pid``,
  ``returncode``, :meth:`poll`, :meth:`wait` and :meth:`kill`. Its status comes from the
  parent that reaped it."""

  def __init__(self, pid: int, status: socket.socket, args: list[str]) -> None:
    self.pid = pid
    self.args = args
    self.returncode: int | None = None
    self._status = status
    self._lock = threading.Lock()

  def _read_status(self, timeout_s: float | None) -> None:
    with self._lock:
      if self.returncode is not None:
        return
      line = _readline(self._status, timeout_s)
      if line is None:
        if timeout_s is not None and self._status_open():
          return
        # The parent died first: the child died with it (its parent-death signal) or is an
        # orphan whose status nobody can read; it is taken as killed.
        self.returncode = -signal.SIGKILL
      elif line.startswith(b"exit "):
        self.returncode = int(line.split()[1])
      else:
        self.returncode = -signal.SIGKILL
      self._status.close()

  def _status_open(self) -> bool:
    """Whether the status socket may still carry the exit (not at end of file)."""
    try:
      self._status.settimeout(0)
      return self._status.recv(1, socket.MSG_PEEK) != b""
    except (BlockingIOError, TimeoutError, socket.timeout):
      return True
    except OSError:
      return False

  def poll(self) -> int | None:
    self._read_status(0.0)
    return self.returncode

  def wait(self, timeout: float | None = None) -> int:
    self._read_status(timeout)
    if self.returncode is None:
      raise subprocess.TimeoutExpired(self.args, timeout)
    return self.returncode

  def kill(self) -> None:
    if self.poll() is None:
      try:
        os.kill(self.pid, signal.SIGKILL)
      except ProcessLookupError:
        pass

  def send_signal(self, sig: int) -> None:
    if self.poll() is None:
      try:
        os.kill(self.pid, sig)
      except ProcessLookupError:
        pass


class _Asked:
  """A preloading parent this process asks for children on ``sock``: one it started
  (``_Parent``), or an ancestor's it connected to (``_Shared``)."""

  shared = False

  def __init__(self, sock: socket.socket, pid: int) -> None:
    self.sock = sock
    self.pid = pid
    self.owner = os.getpid()
    self.ready = False
    self.lock = threading.Lock()

  def poll_ready(self) -> bool:
    """Whether a fork asked now would not wait for the parent's imports: it said it is ready,
    or it is gone (the fork then says so at once)."""
    with self.lock:
      if not self.ready:
        try:
          self.sock.settimeout(0.0)
          said = self.sock.recv(len(READY), socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
          return False
        except OSError:
          return True
        if said and len(said) < len(READY):
          return False
        if said == READY:
          _readline(self.sock, None)
          self.ready = True
      return True

  def why_not(self) -> str:
    """Why the parent answers no more, for the log."""
    return f"the preloading parent {self.pid} closed the connection"

  def fork(self, request: bytes, fds: Sequence[int]) -> tuple[int, socket.socket] | str:
    """Ask for a child; its pid and status socket, or why there is none."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
      with self.lock:
        if not self.ready:
          if _readline(self.sock, START_TIMEOUT_S) != READY.rstrip(b"\n"):
            return f"the preloading parent did not start ({self.why_not()})"
          self.ready = True
        socket.send_fds(self.sock, [HEADER.pack(len(request))],
                        [theirs.fileno(), *fds])
        self.sock.sendall(request)
    except OSError as e:
      mine.close()
      return f"the preloading parent cannot be asked ({e})"
    finally:
      theirs.close()
    line = _readline(mine, START_TIMEOUT_S)
    if line is None or not line.startswith(b"pid "):
      mine.close()
      why = line.decode("utf-8", "replace") if line else f"no answer ({self.why_not()})"
      return f"{_NO_CHILD}{why}"
    return int(line.split()[1]), mine

  def close(self) -> None:
    self.sock.close()


class _Parent(_Asked):
  """One started parent process and the socket its children are asked for on; with
  ``listen``, the socket path where this process's descendants may ask it too."""

  def __init__(self, preload: Sequence[str], env: dict[str, str], listen: str | None) -> None:
    required = [m for m in preload if not m.startswith(IF_PRESENT)]
    optional = [m[len(IF_PRESENT):] for m in preload if m.startswith(IF_PRESENT)]
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    self._stderr = tempfile.TemporaryFile()
    try:
      self.proc = subprocess.Popen(
          [sys.executable, "-m", PARENT_MODULE, "--socket-fd", str(theirs.fileno()),
           "--preload", ",".join(required), "--preload-if-present", ",".join(optional),
           *(["--listen", listen] if listen else [])],
          env=env, stdin=subprocess.DEVNULL, stdout=self._stderr, stderr=self._stderr,
          pass_fds=(theirs.fileno(),), start_new_session=True)
    finally:
      theirs.close()
    super().__init__(mine, self.proc.pid)

  def why_not(self) -> str:
    """The parent's exit and last output, for the log."""
    self._stderr.seek(0, os.SEEK_END)
    self._stderr.seek(max(0, self._stderr.tell() - 2000))
    return f"exit {self.proc.poll()}: {self._stderr.read().decode('utf-8', 'replace')}"

  def close(self) -> None:
    super().close()
    self._stderr.close()


class _Shared(_Asked):
  """A parent an ancestor of this process started, asked on a connection of this process's
  own to its socket: the children it forks for this process die when this process does."""

  shared = True

  @classmethod
  def connect(cls, path: str) -> _Shared | None:
    """The parent listening at ``path``, or None where none does (any more)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
      sock.settimeout(_CONNECT_TIMEOUT_S)
      sock.connect(path)
      sock.settimeout(None)
      pid, uid = peer(sock)
    except OSError:
      sock.close()
      return None
    if uid != os.getuid():
      sock.close()
      return None
    return cls(sock, pid)


def _socket_path(key: tuple) -> str | None:
  """Where the parent of ``key`` listens for descendants, in the folder an ancestor (or this
  process) made; None without one, or where the path is past a socket name's length."""
  folder = shared_parents_folder()
  if folder is None:
    return None
  path = os.path.join(folder, hashlib.sha256(repr(key).encode()).hexdigest()[:24] + ".sock")
  return path if len(os.fsencode(path)) < _SOCKET_PATH_BYTES else None


def _remove_folder(folder: str, pid: int) -> None:
  if os.getpid() == pid:  # not in a forked copy of the process that made it
    shutil.rmtree(folder, ignore_errors=True)


def share_with_descendants() -> str | None:
  """Make the private folder where the preloading parents this process and its descendants
  start listen, unless an ancestor made one, and name it in this process's environment, which
  the processes it starts from now on inherit (pytest-xdist's controller calls this before it
  starts its workers, so that they share their parents too). The folder, or None where none
  can be made."""
  folder = shared_parents_folder()
  if folder is not None:
    return str(folder)
  try:
    made = tempfile.mkdtemp(prefix="jaxport-parents-")
  except OSError:
    return None
  os.environ[SHARED_PARENTS_ENV] = made
  atexit.register(_remove_folder, made, os.getpid())
  return made


def _listen_path(key: tuple) -> str | None:
  """Where a parent this process starts for ``key`` listens for its descendants: in the
  folder an ancestor made, else in one this process makes now."""
  return _socket_path(key) if share_with_descendants() is not None else None


_parents: dict[tuple, _Asked] = {}
_broken: set[tuple] = set()
# Keys whose ancestor's parent failed or refused this process: it starts its own.
_unshared: set[tuple] = set()
_parents_lock = threading.Lock()


def _key(preload: Sequence[str], env: dict[str, str]) -> tuple:
  """What one parent serves the children of: the interpreter, the preloads and the variables
  of ``env`` that its imports may read (PYTHONPATH is the child's to apply: the parent checks
  that the modules it imported come from the same files on the child's path)."""
  base_env = {k: v for k, v in env.items()
              if not k.startswith(_JAXPORTS_OWN) and k not in _CHILD_APPLIES | _NOT_READ_ON_IMPORT
              and _SET_BY_IMPORT.get(k) != v}
  return _interpreter(), tuple(preload), tuple(sorted(base_env.items()))


def _interpreter() -> tuple[str, str]:
  """This interpreter whatever name started it (a venv's ``python`` and ``python3`` are one),
  and its environment's prefix (another venv of the same base Python is another)."""
  return os.path.realpath(sys.executable), sys.prefix


def _parent_of(preload: Sequence[str], env: dict[str, str]) -> tuple[tuple, _Asked | None]:
  """The parent for children of ``preload`` and ``env``: an ancestor's where one listens,
  else this process's, started (with ``env``'s PYTHONPATH) if none runs."""
  key = _key(preload, env)
  with _parents_lock:
    parent = _parents.get(key)
    if parent is not None and parent.owner != os.getpid():
      parent = None  # a forked copy of this process: the parent answers the original
      _parents.pop(key)
    if parent is None and key not in _broken:
      path = _socket_path(key)
      if path is not None and key not in _unshared:
        parent = _Shared.connect(path)
      if parent is None:
        try:
          python_path = _parents_python_path(env)
          started = dict(key[2], PYTHONPATH=python_path) if python_path else dict(key[2])
          parent = _Parent(preload, started, _listen_path(key))
        except OSError as e:
          log.info("no preloading parent (%s): children start fresh", e)
          _broken.add(key)
      if parent is not None:
        _parents[key] = parent
    return key, parent


def _parents_python_path(env: dict[str, str]) -> str:
  """``env``'s PYTHONPATH for a parent to start with, less the folders holding a startup hook
  (``sitecustomize``, ``usercustomize``). A parent that ran a hook from there could fork no
  child: a child whose path holds that hook runs it itself, fresh, and one whose path does not
  must not have run it. Without them only the children whose path holds a hook start fresh,
  and the parent serves the others its key brings."""
  kept = []
  for entry in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
    try:
      hook = next((name for name in STARTUP_HOOKS
                   if importlib.machinery.PathFinder.find_spec(name, [entry]) is not None), None)
    except (ImportError, ValueError, OSError):
      hook = "a startup hook"
    if hook is None:
      kept.append(entry)
    else:
      log.info("a preloading parent starts without %s on its path: it holds %s", entry, hook)
  return os.pathsep.join(kept)


def _python_path(env: dict[str, str], paths: Sequence[str]) -> str:
  return os.pathsep.join(p for p in (*paths, env.get("PYTHONPATH")) if p)


def _forks(preload: Sequence[str] | None) -> bool:
  # Linux only: elsewhere forking a process that loaded native libraries is not safe to do.
  return preload is not None and sys.platform.startswith("linux")


def start_parent(*, env: dict[str, str], preload: Sequence[str] | None) -> bool:
  """Start now, without waiting for it, the parent that :func:`start_module` will fork the
  children of ``preload`` and ``env`` from, unless one runs: its imports then overlap with
  what the caller does before its first child. Whether a child started now would wait for
  that parent's imports (False once it is ready, and where children start fresh)."""
  if not _forks(preload):
    return False
  parent = _parent_of(preload, env)[1]
  return parent is not None and not parent.poll_ready()


def start_module(module: str, args: Sequence[str], *, env: dict[str, str],
                 paths: Sequence[str] = (), cwd: str | os.PathLike | None = None,
                 pass_fds: Sequence[int] = (), stdin: int | None = None, stdout: int,
                 stderr: int, new_session: bool = False,
                 preload: Sequence[str] | None) -> subprocess.Popen | PreloadedChild:
  """Start ``python -m module args``: forked from a parent that imported ``preload`` where it
  can be, else fresh (``preload`` None: always fresh; a name marked ``IF_PRESENT`` is
  imported where it imports). Its stdin is the descriptor ``stdin``
  (``/dev/null`` when None), its stdout and stderr ``stdout`` and ``stderr``, in the folder
  ``cwd`` (this process's when None), in a session of its own with ``new_session``. ``env`` is
  its environment but for ``paths``, which go before ``env``'s ``PYTHONPATH``; where ``env``
  names the process that started it (``PARENT_PID_ENV``), a forked child gets its parent's
  id there, the process whose death ends it. The caller closes its copies of the
  descriptors once this returns, as with ``subprocess.Popen``."""
  cwd = os.fspath(cwd) if cwd is not None else os.getcwd()
  python_path = _python_path(env, paths)
  child_env = dict(env)
  if python_path:
    child_env["PYTHONPATH"] = python_path
  command = [sys.executable, "-m", module, *args]
  if _forks(preload):
    key, parent = _parent_of(preload, env)
    if parent is not None:
      forked_env = dict(child_env)
      if PARENT_PID_ENV in forked_env:
        forked_env[PARENT_PID_ENV] = str(parent.pid)
      request = json.dumps({
          "module": module, "args": list(args), "env": forked_env, "cwd": cwd,
          "paths": [p for p in python_path.split(os.pathsep) if p], "pass_fds": list(pass_fds),
          "new_session": new_session, "executable": sys.executable}).encode()
      null = os.open(os.devnull, os.O_RDONLY) if stdin is None else None
      try:
        got = parent.fork(request, [stdin if null is None else null, stdout, stderr, *pass_fds])
      finally:
        if null is not None:
          os.close(null)
      if not isinstance(got, str):
        pid, status = got
        return PreloadedChild(pid, status, command)
      if parent.shared or not got.startswith(_REFUSED):
        with _parents_lock:
          (_unshared if parent.shared else _broken).add(key)
          if _parents.get(key) is parent:
            _parents.pop(key).close()
      if parent.shared:
        log.info("%s: the child is asked of a parent of this process's own", got)
        return start_module(module, args, env=env, paths=paths, cwd=cwd, pass_fds=pass_fds,
                            stdin=stdin, stdout=stdout, stderr=stderr,
                            new_session=new_session, preload=preload)
      log.info("%s: the child starts fresh", got)
  return subprocess.Popen(command, cwd=cwd, env=child_env,
                          stdin=subprocess.DEVNULL if stdin is None else stdin,
                          stdout=stdout, stderr=stderr, pass_fds=tuple(pass_fds),
                          start_new_session=new_session)


def stop_parents() -> None:
  """Close every parent this process asks, and wait for those it started to exit (each exits
  once its starter asks no more, removing its socket first)."""
  with _parents_lock:
    mine = [p for p in _parents.values() if p.owner == os.getpid()]
    _parents.clear()
    _unshared.clear()
  for parent in mine:
    parent.close()
  for parent in mine:
    if isinstance(parent, _Parent):
      try:
        parent.proc.wait(timeout=30)
      except subprocess.TimeoutExpired:
        parent.proc.kill()
        parent.proc.wait()
