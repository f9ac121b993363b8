"""``python -m jaxport._isolation._preloaded_parent``: a process that imports a child's modules
once and forks a child per request, so that each child starts with them loaded instead of
importing jax anew (about a second of CPU a child on two cores).

The process that started it (``_preloaded``) asks on the socket it was given (``--socket-fd``)
with a length-prefixed JSON request and, as ancillary data, the file descriptors the child
gets: the socket the child's status goes back on, its standard streams, and
the descriptors it passes (kept at the numbers they have in the asking process, which the
child's command line names), after its stdin, stdout and stderr. Unless a module this process imported
would come from another file in the child (``refused NAME`` on its status socket), the
child is forked at once; it leaves nothing of this process
open but its standard streams, starts a session of its own when asked, takes the asked
environment, working folder, ``sys.path``, ``sys.argv`` and ``sys.executable``, and runs its module as
``python -m`` would. Its status socket carries ``pid N`` once it runs and ``exit CODE`` (as
``subprocess`` gives it: negative for a signal) once this process reaped it.

With ``--listen PATH`` the starter's descendants may ask too, each on a connection of its
own to the socket at that path (the starter keeps it in a private folder): they are greeted and
asked as the starter is, and the children forked for any asking process are killed when its
connection ends (``serve``).

This process imports only its preloads: it never starts jax's backends, so that a forked
child starts them itself, with the device count its own environment asks for. Once the
starter closes its socket (it died or is done) it takes no new connection, and it exits when
no process asks any more.
"""

from __future__ import annotations

import argparse
import builtins
import fcntl
import gc
import importlib
import importlib.machinery
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import traceback
import types
import warnings
from typing import NamedTuple, NoReturn

# The request's length prefix: eight bytes, big-endian.
HEADER = struct.Struct(">Q")
# The most descriptors one request passes, and the most bytes its JSON holds.
MAX_FDS = 16
MAX_REQUEST_BYTES = 16 << 20
# A line this process writes to its starter's socket once its preloads are imported.
READY = b"ready\n"
# Seconds a descendant's request may take to arrive once it begins.
_REQUEST_TIMEOUT_S = 60.0


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
  """``size`` bytes from ``sock``, or None at end of file."""
  chunks = []
  while size:
    chunk = sock.recv(min(size, 1 << 20))
    if not chunk:
      return None
    chunks.append(chunk)
    size -= len(chunk)
  return b"".join(chunks)


def _receive(sock: socket.socket) -> tuple[dict, list[int]] | None:
  """One request and its descriptors; None when the starter closed the socket (having read
  all this parent wrote, or not: a starter that never forked leaves "ready" unread)."""
  try:
    head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, MAX_FDS)
  except ConnectionResetError:
    return None
  if not head:
    for fd in fds:
      os.close(fd)
    return None
  if len(head) < HEADER.size:
    rest = _recv_exactly(sock, HEADER.size - len(head))
    if rest is None:
      return None
    head += rest
  (size,) = HEADER.unpack(head)
  if size > MAX_REQUEST_BYTES:
    raise ValueError(f"a request of {size} bytes, past {MAX_REQUEST_BYTES}")
  body = _recv_exactly(sock, size)
  if body is None:
    return None
  return json.loads(body), fds


def _place(fds: list[int], targets: list[int]) -> None:
  """Put each received descriptor at its target number, inheritable, closing the received
  numbers: first above every number in play, so that no move closes one yet to be moved."""
  high = max([*fds, *targets, 2]) + 1
  moved = []
  for fd in set(fds):
    moved.append((fd, fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, high)))
    os.close(fd)
  at = dict(moved)
  for fd, target in zip(fds, targets):
    os.dup2(at[fd], target, inheritable=True)
  for _, fd in moved:
    os.close(fd)


# What a fresh interpreter imports from ``sys.path`` as it starts (``site``), before its module.
STARTUP_HOOKS = ("sitecustomize", "usercustomize")


def _startup_hook_differs(search_path: list[str]) -> str | None:
  """A startup hook a child with ``search_path`` would run that a forked child cannot: one
  this process did not run or ran from another file, or one from the child's own folders,
  whose code may read any variable of the child's environment as it starts (a forked child's
  start is this process's). Its name, or None."""
  for name in STARTUP_HOOKS:
    module = sys.modules.get(name)
    ours = getattr(getattr(module, "__spec__", None), "origin", None)
    try:
      found = importlib.machinery.PathFinder.find_spec(name, search_path)
    except (ImportError, ValueError, OSError):
      return name
    theirs = found.origin if found is not None else None
    if theirs != ours:
      return name
    if theirs is not None and not any(
        os.path.commonpath([theirs, os.path.abspath(site)]) == os.path.abspath(site)
        for site in _SITE_PATH if site):
      return name
  return None


def _shadowed(search_path: list[str]) -> str | None:
  """A module this process imported that a child with ``search_path`` as ``sys.path`` would
  import from another file (a project folder holding a module of the same name), or a startup
  hook it would run differently (``_startup_hook_differs``), which a forked child cannot: the
  module's name, or None."""
  hook = _startup_hook_differs(search_path)
  if hook is not None:
    return hook
  for name, module in list(sys.modules.items()):
    spec = getattr(module, "__spec__", None)
    if "." in name or spec is None or not spec.has_location or not spec.origin:
      continue
    try:
      found = importlib.machinery.PathFinder.find_spec(name, search_path)
    except (ImportError, ValueError, OSError):
      return name
    if found is not None and found.origin and found.origin != spec.origin:
      return name
  return None


def _own_path_entries() -> set[str]:
  """The folders this process's PYTHONPATH put on ``sys.path``, made absolute as Python does."""
  text = os.environ.get("PYTHONPATH") or ""
  return {os.path.abspath(p) for p in text.split(os.pathsep) if p}


# ``sys.path`` past the working folder and this process's PYTHONPATH: the standard library,
# site-packages and what their ``.pth`` files add, which a child's path ends with too.
_SITE_PATH: list[str] = []


def _search_path(request: dict) -> list[str]:
  """The ``sys.path`` a fresh ``python -m`` would start with: the working folder, the
  child's PYTHONPATH folders (absolute, against its working folder), then the site's."""
  cwd = request["cwd"]
  return [cwd, *(os.path.join(cwd, p) for p in request["paths"]), *_SITE_PATH]


class _Forked(NamedTuple):
  """In a forked child: the code of the module it runs and the namespace it runs in."""
  code: types.CodeType
  namespace: dict


def _become(request: dict, fds: list[int], own: list[socket.socket | int]) -> _Forked:
  """In the forked child: become the asked process, ready to run its module as ``python -m``
  would (``sys.modules["__main__"]`` the module's namespace); a failure here ends it, with
  its traceback and status 1."""
  try:
    signal.set_wakeup_fd(-1)
    # Closed through their objects, which would otherwise close the numbers again once
    # collected, by then the child's own descriptors.
    for item in own:
      if isinstance(item, socket.socket):
        item.close()
      else:
        os.close(item)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    status, *streams = fds
    os.close(status)
    if request.get("new_session"):
      os.setsid()
    _place(streams, [0, 1, 2, *request["pass_fds"]])
    os.environ.clear()
    os.environ.update(request["env"])
    # Its temporary folder comes from its own environment, as in a fresh interpreter.
    tempfile.tempdir = None
    # As the interpreter sets it at its start from the variable (any value but empty).
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    os.chdir(request["cwd"])
    sys.path[:] = _search_path(request)
    sys.argv = [request["module"], *request["args"]]
    # The name the asking process started this interpreter by (a venv's python or python3).
    sys.executable = request.get("executable") or sys.executable
    spec = importlib.util.find_spec(request["module"])
    if spec is not None and spec.submodule_search_locations is not None:
      spec = importlib.util.find_spec(request["module"] + ".__main__")
    if spec is None or spec.loader is None:
      raise ImportError(f"no module named {request['module']!r} to run")
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(__file__=spec.origin, __cached__=spec.cached,
                                __loader__=spec.loader, __package__=spec.parent,
                                __spec__=spec, __builtins__=builtins)
    sys.argv[0] = spec.origin or sys.argv[0]
    sys.modules["__main__"] = main_module
    return _Forked(spec.loader.get_code(spec.name), main_module.__dict__)
  except BaseException:  # noqa: BLE001  (as the interpreter would: the traceback, status 1)
    traceback.print_exc()
    _exit_flushed(1)


def _exit_status(e: SystemExit) -> int:
  """The status the interpreter exits with for ``e``, printing a message it carries."""
  if e.code is None:
    return 0
  if isinstance(e.code, int):
    return e.code
  print(e.code, file=sys.stderr)
  return 1


def _exit_flushed(code: int) -> NoReturn:
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except Exception:  # noqa: BLE001
      pass
  os._exit(code)


def _returncode(status: int) -> int:
  return os.waitstatus_to_exitcode(status)


def _listen(path: str | None) -> socket.socket | None:
  """A socket listening at ``path`` for the starter's descendants, or None where there is
  none to be had (no path, or another parent took it first)."""
  if not path:
    return None
  listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
  try:
    listener.bind(path)
    listener.listen(16)
  except OSError:
    listener.close()
    return None
  return listener


def peer(sock: socket.socket) -> tuple[int, int]:
  """The process id and user id of the process at the other end of the Unix socket ``sock``
  (for a connected socket, the one that listened); ``OSError`` where the kernel cannot say."""
  pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                       struct.calcsize("3i")))
  return pid, uid


def _accept(listener: socket.socket) -> socket.socket | None:
  """A descendant's connection, greeted as the starter was; None for a process of another
  user (the folder is private: a guard only) or one that went away."""
  try:
    conn, _ = listener.accept()
    if peer(conn)[1] != os.getuid():
      conn.close()
      return None
    # A request comes whole once it begins: one that stalls past this ends its connection.
    conn.settimeout(_REQUEST_TIMEOUT_S)
    conn.sendall(READY)
    return conn
  except OSError:
    return None


def _kill(pids: set[int]) -> None:
  for pid in pids:
    try:
      os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
      pass


def serve(sock: socket.socket, listener: socket.socket | None = None) -> _Forked | None:
  """Fork a child per request, from the starter on ``sock`` and from the processes connected
  through ``listener``, until the starter has closed ``sock`` and no connection remains
  (None); in a forked child, what it runs.

  A child's parent-death signal is tied to this process, which may outlive the process that
  asked for it: when a connection ends (its process exited or died), this process kills the
  children it forked for it, as the exit of a parent of that process's own would have."""
  woken, wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
  signal.set_wakeup_fd(wake)
  signal.signal(signal.SIGCHLD, lambda *_: None)
  children: dict[int, socket.socket] = {}
  # Each connection that asks (the starter's first), with the children it has alive.
  asking: dict[socket.socket, set[int]] = {sock: set()}
  sock.sendall(READY)
  while True:
    watched = [*asking, woken, *([listener] if listener is not None else [])]
    ready, _, _ = select.select(watched, [], [])
    if woken in ready:
      try:
        while os.read(woken, 512):
          pass
      except BlockingIOError:
        pass
    _reap(children, asking)
    if listener is not None and listener in ready:
      conn = _accept(listener)
      if conn is not None:
        asking[conn] = set()
    for conn in [c for c in ready if c in asking]:
      try:
        received = _receive(conn)
      except (ValueError, OSError):
        if conn is sock:
          _stop_listening(listener)
          raise
        received = None  # a malformed request from a descendant: its connection ends
      if received is None:
        _kill(asking.pop(conn))
        conn.close()
        if conn is sock:
          _stop_listening(listener)
          listener = None
        if not asking:
          return None
        continue
      request, fds = received
      answered = _answer(request, fds, [*asking, woken, wake, *children.values(),
                                        *([listener] if listener is not None else [])])
      if isinstance(answered, _Forked):
        return answered
      if answered is not None:
        children[answered[0]] = answered[1]
        asking[conn].add(answered[0])


def _reap(children: dict[int, socket.socket], asking: dict[socket.socket, set[int]]) -> None:
  """Send the exit status of each child that ended on its status channel."""
  while children:
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid == 0:
      return
    channel = children.pop(pid, None)
    for pids in asking.values():
      pids.discard(pid)
    if channel is not None:
      try:
        channel.sendall(b"exit %d\n" % _returncode(status))
      except OSError:
        pass
      channel.close()


def _stop_listening(listener: socket.socket | None) -> None:
  """Close ``listener`` and remove its name, so that no descendant asks any more."""
  if listener is None:
    return
  path = listener.getsockname()
  listener.close()
  try:
    os.unlink(path)
  except OSError:
    pass


def _answer(request: dict, fds: list[int],
            own: list[socket.socket | int]) -> tuple[int, socket.socket] | _Forked | None:
  """Fork the child ``request`` asks for, unless a module it would import from another file
  forbids (refused on its status socket: None). Here, its pid and status channel; in the
  child, what it runs (``own``: what it closes of this process)."""
  shadowed = _shadowed(_search_path(request))
  if shadowed is not None:
    channel = socket.socket(fileno=fds[0])
    for fd in fds[1:]:
      os.close(fd)
    try:
      channel.sendall(b"refused %s\n" % shadowed.encode())
    except OSError:
      pass
    channel.close()
    return None
  for stream in (sys.stdout, sys.stderr):
    stream.flush()
  with warnings.catch_warnings():
    # Python 3.12 and newer warn of forking a process with threads; numpy's BLAS pool is
    # the only other thread here, and it is fork-safe.
    warnings.simplefilter("ignore", DeprecationWarning)
    pid = os.fork()
  if pid == 0:
    return _become(request, fds, own)
  channel = socket.socket(fileno=fds[0])
  for fd in fds[1:]:
    os.close(fd)
  try:
    channel.sendall(b"pid %d\n" % pid)
  except OSError:
    pass
  return pid, channel


def main(argv: list[str] | None = None) -> _Forked | None:
  parser = argparse.ArgumentParser(prog="python -m jaxport._isolation._preloaded_parent")
  parser.add_argument("--socket-fd", type=int, required=True, metavar="FD",
                      help="the socket requests come on")
  parser.add_argument("--preload", default="", metavar="MODULES",
                      help="comma-separated modules to import before the first fork")
  parser.add_argument("--preload-if-present", default="", metavar="MODULES",
                      help="comma-separated modules to import too where they import")
  parser.add_argument("--listen", default=None, metavar="PATH",
                      help="a socket path where the starter's descendants may ask too")
  args = parser.parse_args(argv)
  sock = socket.socket(fileno=args.socket_fd)
  os.set_inheritable(args.socket_fd, False)
  # Before the imports: a descendant that connects meanwhile waits for them, as the starter does.
  listener = _listen(args.listen)
  own = _own_path_entries()
  _SITE_PATH[:] = [p for p in sys.path[1:] if p not in own]
  # What the preloads create lives as long as this process and its children: the cyclic
  # collector neither runs while they import (each full collection would walk a heap still
  # growing) nor walks them afterwards, here or in a child, whose pages stay shared.
  gc.disable()
  try:
    for name in filter(None, args.preload.split(",")):
      importlib.import_module(name)
    for name in filter(None, args.preload_if_present.split(",")):
      try:
        importlib.import_module(name)
      except ImportError:
        pass
  finally:
    gc.freeze()
    gc.enable()
  return serve(sock, listener)


if __name__ == "__main__":
  _forked = main()
  if _forked is not None:
    # A forked child runs its module from this frame: its stacks (a crash's, a traceback)
    # read as a fresh interpreter's, one frame deeper.
    try:
      exec(_forked.code, _forked.namespace)
      _exit_flushed(0)
    except SystemExit as _exit:
      _exit_flushed(_exit_status(_exit))
    except BaseException:  # noqa: BLE001  (as the interpreter would: the traceback, status 1)
      traceback.print_exc()
      _exit_flushed(1)
