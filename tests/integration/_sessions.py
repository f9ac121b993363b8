"""A pytest session run in the test's own process, where pytester is not at hand (a
module-scoped fixture) or not needed (a session of the repository's harness or of an example
project): pytest's start-up, jaxport's and jax's imports and a preloading parent are what a
fresh process would cost again."""

import contextlib
import io
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

try:  # pytest's own key (its pytester sets it for the sessions it runs in its process)
  from _pytest.unraisableexception import gc_collect_iterations_key
except ImportError:  # a pytest without it collects as it always did
  gc_collect_iterations_key = None


class _NoFullCollectionAtExit:
  """A session ending in this process leaves the cyclic garbage collector alone: pytest would
  run a full collection over this whole process (the outer session's tests and their caches)
  to find objects whose finalizers raise, which the outer session looks for when it ends."""

  @staticmethod
  def pytest_configure(config: pytest.Config) -> None:
    if gc_collect_iterations_key is not None:
      config.stash[gc_collect_iterations_key] = 0


class SessionResult(NamedTuple):
  """What a session of :func:`session_here` ended with and printed."""
  returncode: int
  stdout: str
  stderr: str


def session_here(root: Path, *args: str, **env: str) -> SessionResult:
  """A pytest session of the project in ``root`` (``args`` its options, ``env`` added to the
  environment) run in this process: its exit status and output. As pytester does, what the
  session changes in this process is put back afterwards: the modules it imported (the case
  module, so that later sessions import their own), ``sys.path``, the working folder and the
  environment; the session runs without ``PYTEST_ADDOPTS``. Neither it nor its workers write
  bytecode: a test that rewrites the project's case module within the second the session
  imported it (same size, as ``1.0`` to ``1.5``) would otherwise import the old one."""
  modules = dict(sys.modules)
  out, err = io.StringIO(), io.StringIO()
  try:
    with pytest.MonkeyPatch.context() as mp:
      mp.chdir(root)
      mp.syspath_prepend(str(root))
      mp.delenv("PYTEST_ADDOPTS", raising=False)
      mp.setenv("PYTHONDONTWRITEBYTECODE", "1")
      mp.setattr(sys, "dont_write_bytecode", True)
      for name, value in env.items():
        mp.setenv(name, value)
      with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = int(pytest.main(
            ["-p", "no:hypothesispytest", "-p", "no:randomly",
             "-W", "ignore::pytest.PytestAssertRewriteWarning", *args],
            plugins=[_NoFullCollectionAtExit()]))
  finally:
    for name in set(sys.modules) - set(modules):
      del sys.modules[name]
    sys.modules.update(modules)
  return SessionResult(returncode, out.getvalue(), err.getvalue())
