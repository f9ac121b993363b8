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
  environment; the session runs without ``PYTEST_ADDOPTS``."""
  modules = dict(sys.modules)
  out, err = io.StringIO(), io.StringIO()
  try:
    with pytest.MonkeyPatch.context() as mp:
      mp.chdir(root)
      mp.syspath_prepend(str(root))
      mp.delenv("PYTEST_ADDOPTS", raising=False)
      for name, value in env.items():
        mp.setenv(name, value)
      with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        returncode = int(pytest.main(
            ["-p", "no:hypothesispytest", "-p", "no:randomly",
             "-W", "ignore::pytest.PytestAssertRewriteWarning", *args]))
  finally:
    for name in set(sys.modules) - set(modules):
      del sys.modules[name]
    sys.modules.update(modules)
  return SessionResult(returncode, out.getvalue(), err.getvalue())
