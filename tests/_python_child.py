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

from jaxport._isolation._preloaded import start_module

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The modules the parent imports: what almost every child imports first.
PRELOAD = ("jax", "jax.numpy", "jaxport")
# Run as ``python -m``: it reads the code from the file named by its one argument.
_RUNNER = "_python_child_main"


def run_python(code: str, *, env: dict[str, str] | None = None, cwd: Path | str | None = None,
               timeout: float, stdin: str | None = None) -> subprocess.CompletedProcess:
  """Runs ``code`` as the ``__main__`` of a child with ``env`` (this process's when None; this
  checkout first on its ``PYTHONPATH`` either way) in ``cwd`` (the checkout's when None), its
  stdin ``stdin`` (``/dev/null`` when None). Returns it finished, its output as text, or
  raises ``subprocess.TimeoutExpired`` (with the output so far) after killing it."""
  env = dict(os.environ if env is None else env)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
  with tempfile.TemporaryDirectory(prefix="python-child-") as folder:
    script = Path(folder) / "code.py"
    script.write_text(code)
    streams = {}
    for name in ("stdout", "stderr", "stdin"):
      streams[name] = open(Path(folder) / name, "w+b")
    if stdin is not None:
      streams["stdin"].write(stdin.encode())
      streams["stdin"].seek(0)
    try:
      child = start_module(_RUNNER, [str(script)], env=env, paths=[str(HERE)],
                           cwd=cwd or ROOT,
                           stdin=streams["stdin"].fileno() if stdin is not None else None,
                           stdout=streams["stdout"].fileno(),
                           stderr=streams["stderr"].fileno(), preload=PRELOAD)
      try:
        returncode = child.wait(timeout=timeout)
      except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise subprocess.TimeoutExpired([sys.executable, "-c", code], timeout,
                                        output=_read(streams["stdout"]),
                                        stderr=_read(streams["stderr"])) from None
      return subprocess.CompletedProcess([sys.executable, "-c", code], returncode,
                                         _read(streams["stdout"]), _read(streams["stderr"]))
    finally:
      for stream in streams.values():
        stream.close()


def _read(stream) -> str:
  stream.seek(0)
  return stream.read().decode(errors="replace")
