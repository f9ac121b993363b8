"""Fixtures shared across the suite: the reference (``jax.export``) and jaxport side by side."""

import gc
import os
import shutil
import sys
import tempfile

import jax.export
import pytest

import jaxport
from jaxport._environment import SHARED_PARENTS_ENV
from jaxport._isolation import _preloaded
from jaxport._isolation._preloaded import share_with_descendants
from jaxport.cli import _harness_run

EXPORT_APIS = {"jax": jax.export, "jaxport": jaxport}

# Added to the options of every pytest session a test starts (pytester's, the CLI's record and
# replay): the projects those sessions run hold no Hypothesis tests, and Hypothesis's plugin
# costs about a second of imports per session. A session run in this process finds jaxport
# imported already and would warn that pytest cannot rewrite its asserts; the sessions' own
# warnings are what tests count.
CHILD_PYTEST_OPTIONS = "-p no:hypothesispytest -W ignore::pytest.PytestAssertRewriteWarning"


def _with_child_options(addopts: str | None) -> str:
  return " ".join(filter(None, [addopts, CHILD_PYTEST_OPTIONS]))


@pytest.fixture(autouse=True, scope="session")
def _lean_child_pytest_sessions():
  with pytest.MonkeyPatch.context() as mp:
    mp.setenv("PYTEST_ADDOPTS", _with_child_options(os.environ.get("PYTEST_ADDOPTS")))
    yield


@pytest.fixture
def pytester(pytester, monkeypatch):
  """pytest's own, its sessions given ``CHILD_PYTEST_OPTIONS`` too (it clears PYTEST_ADDOPTS),
  neither they nor their workers writing bytecode.

  Its folder is on ``sys.path`` for the sessions run in this process, as the working folder is
  for ``python -m pytest`` started there: a project's case modules import from it alike."""
  monkeypatch.setenv("PYTEST_ADDOPTS", CHILD_PYTEST_OPTIONS)
  # A test rewrites its project's case module within a second of a session that imported it:
  # neither this process nor the sessions' workers write bytecode that could hide the change.
  monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
  monkeypatch.setattr(sys, "dont_write_bytecode", True)
  pytester.syspathinsert()
  return pytester


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
  """With ``-n`` and no ``--dist`` of the caller's, xdist's work stealing: a worker that runs out
  of tests takes half of another's queue, so a run of long pytester sessions beside quick unit
  tests ends on both workers together (xdist's default hands out large chunks up front).
  With ``-n``, the folder where preloading parents listen is made here, before the workers
  start: they inherit it, and one parent serves both workers and what each starts."""
  if not getattr(config.option, "numprocesses", None):
    return
  if not any(a == "--dist" or a.startswith("--dist=") for a in config.invocation_params.args):
    config.option.dist = "worksteal"
  share_with_descendants()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
  """Collection imports the test modules (and what they import), which live as long as this
  process: the cyclic garbage collector neither runs while they are imported (each full
  collection would walk a heap still growing) nor walks them afterwards. It then starts a
  collection a tenth as often: each full one walks what the tests keep (jax's caches of
  traced and compiled functions), and most of the tests' objects die by reference count."""
  gc.disable()
  try:
    return (yield)
  finally:
    gc.freeze()
    threshold, *older = gc.get_threshold()
    gc.set_threshold(threshold * 10, *older)
    gc.enable()


@pytest.fixture
def own_preloading_parents(monkeypatch):
  """The test starts and stops its own preloading parents, which listen in a folder of its
  own: no other process of the run (the other xdist worker) asks them, nor they another's."""
  _preloaded.stop_parents()
  _preloaded._broken.clear()
  folder = tempfile.mkdtemp(prefix="jaxport-test-parents-")
  monkeypatch.setenv(SHARED_PARENTS_ENV, folder)
  yield
  _preloaded.stop_parents()
  _preloaded._broken.clear()
  shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=sorted(EXPORT_APIS))
def exporter(request):
  """``jax.export`` or ``jaxport`` (``.export``, ``.DisabledSafetyCheck``, ``.symbolic_shape``):
  jaxport calls the records of both."""
  return EXPORT_APIS[request.param]


@pytest.fixture
def unregistered_result_namedtuples(monkeypatch):
  """jaxport's and jax.export's serialization registries with jax's own result namedtuples
  (``EighResult`` and friends) registered in neither, as in a fresh process, whatever other
  tests of this process registered; both registries are put back afterwards, so what the
  test registers does not outlive it."""
  from jax._src.export import _export as jax_registry  # the registries are not public
  from jaxport.serde import _pytrees, _wire
  results = set(_wire.jax_result_namedtuples().values())
  for module, by_type, by_name in ((_pytrees, "_by_type", "_by_name"),
                                   (jax_registry, "serialization_registry",
                                    "deserialization_registry")):
    types = getattr(module, by_type)
    names = {n for n, reg in getattr(module, by_name).items()
             if (reg.nodetype if module is _pytrees else reg[0]) in results}
    monkeypatch.setattr(module, by_type, {t: r for t, r in types.items() if t not in results})
    monkeypatch.setattr(module, by_name, {n: r for n, r in getattr(module, by_name).items()
                                          if n not in names})


@pytest.fixture
def fake_harness_run(monkeypatch, tmp_path):
  """Record, instead of running, the commands ``jaxport record``/``replay`` start in
  ``tmp_path``. Call it with the exit status the fake run
  reports; it returns the list of ``(command, cwd)`` the CLI ran."""
  def install(returncode: int = 0) -> list:
    calls = []
    monkeypatch.setattr(_harness_run, "run_forwarding_signals",
                        lambda cmd, cwd: calls.append((cmd, cwd)) or returncode)
    return calls
  return install


@pytest.fixture
def full_source_file_names():
  """jax's default for source file names in lowered modules, whole paths: an in-process
  replay engine of an earlier test leaves the worker's setting, which keeps base names only."""
  import jax
  name = "jax_hlo_source_file_canonicalization_regex"
  saved = getattr(jax.config, name)
  jax.config.update(name, None)
  yield
  jax.config.update(name, saved)


@pytest.fixture
def reference_reader_raising(monkeypatch):
  """``raising(message)``: from then on jax's reader (the reference) raises
  ``ValueError(message)`` reading any blob, and jaxport's reads as before."""
  from jaxport.harness._worker import _reference as api
  real = api.deserialize

  def raising(message: str) -> None:
    def read(blob, *, reader=api.PRIMARY):
      if reader == api.REFERENCE:
        raise ValueError(message)
      return real(blob, reader=reader)
    monkeypatch.setattr(api, "deserialize", read)
  return raising
