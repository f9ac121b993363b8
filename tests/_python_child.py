"""Python code run in a child process of its own, as ``python -c CODE`` would run it, forked
from a parent that imported jax and jaxport once (``jaxport._isolation._preloaded``).

A child that a test starts only to survive what the code does (a hang under a time limit, a
memory blow-up under a memory limit, a crash) gains nothing from importing jax anew, which
costs about two seconds of CPU a child on two cores. A test whose point is what a fresh
interpreter imports or sets up runs ``subprocess`` itself instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from jaxport._isolation._preloaded import start_module

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The modules the parent imports: what almost every child imports first.
PRELOAD = ("jax", "jax.numpy", "jaxport")
# Run as ``python -m``: it reads the code from the file named by its one argument.
_RUNNER = "_python_child_main"


def run_python(code: str, *, cwd: Path | str | None = None, timeout: float,
               env: dict[str, str] | None = None,
               preload: Sequence[str] = PRELOAD) -> subprocess.CompletedProcess:
  """Runs ``code`` as the ``__main__`` of a child with the environment ``env`` (this
  process's, this checkout first on its ``PYTHONPATH``, when None) in ``cwd`` (the
  checkout's when None), its stdin ``/dev/null``, forked from a parent that imported
  ``preload``. Returns it finished, its output as text, or raises
  ``subprocess.TimeoutExpired`` (with the output so far) after killing it."""
  if env is None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
  with tempfile.TemporaryDirectory(prefix="python-child-") as folder:
    script = Path(folder) / "code.py"
    script.write_text(code)
    return run_module(_RUNNER, [str(script)], env=env, paths=[str(HERE)], cwd=cwd or ROOT,
                      timeout=timeout, preload=preload, command=[sys.executable, "-c", code])


def run_module(module: str, args: Sequence[str], *, env: dict[str, str], cwd: Path | str,
               timeout: float, paths: Sequence[str] = (), preload: Sequence[str] = PRELOAD,
               command: list[str] | None = None) -> subprocess.CompletedProcess:
  """``python -m module args`` with the environment ``env`` (``paths`` before its
  ``PYTHONPATH``) in ``cwd``, forked from a parent that imported ``preload``, as
  :func:`run_python` runs its code; ``command`` names it in the result (``python -m`` ...
  when None)."""
  command = command or [sys.executable, "-m", module, *args]
  with tempfile.TemporaryDirectory(prefix="python-child-") as folder:
    with open(Path(folder) / "stdout", "w+b") as out, open(Path(folder) / "stderr", "w+b") as err:
      child = start_module(module, args, env=env, paths=paths, cwd=cwd, stdout=out.fileno(),
                           stderr=err.fileno(), preload=preload)
      try:
        returncode = child.wait(timeout=timeout)
      except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise subprocess.TimeoutExpired(command, timeout, output=_read(out),
                                        stderr=_read(err)) from None
      return subprocess.CompletedProcess(command, returncode, _read(out), _read(err))


def run_cli(args: Sequence[str], *, cwd: Path | str | None = None,
            timeout: float) -> subprocess.CompletedProcess:
  """``jaxport ARGS`` as a command of its own, its exit status that of ``jaxport.cli.main``:
  :func:`run_python` running it, so that what the command imports (a project's case module
  registering its types) stays in that child."""
  code = f"import sys\nfrom jaxport.cli import main\nsys.exit(main({[str(a) for a in args]!r}))\n"
  return run_python(code, cwd=cwd, timeout=timeout)


def _read(stream) -> str:
  stream.seek(0)
  return stream.read().decode(errors="replace")


def running(pid: int) -> bool:
  """Whether the process ``pid`` runs (a zombie waiting for its parent to reap it has
  stopped running)."""
  try:
    with open(f"/proc/{pid}/stat") as stat:
      return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
  except FileNotFoundError:
    return False
