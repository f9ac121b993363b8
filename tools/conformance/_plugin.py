"""pytest plugin loaded into each run of a JAX test suite by ``run_jax_suites.py``.

It reads its settings from the environment (``harness._environment.conformance_settings``),
then:

- in ``jaxport`` mode, counts calls into jaxport and rebinds every route to
  jax's export implementation before the suite is imported: ``jax.export``
  (module attribute and ``sys.modules``), the back-compat util's ``_export``
  and ``shape_poly`` (the util is a copy loaded from the temporary directory,
  in both modes), and the same names in each test module, both while it is
  imported (``jax._src.export``'s attributes point to the stand-ins only
  then) and after collection;
- in both modes, records each test's outcome and first failure line, and
  writes them with the counters to a JSON file when the session ends.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import jax
import jax._src.internal_test_util as internal_test_util
import pytest
from jax._src.export import _export as jax_export_impl
from jax._src.export import shape_poly as jax_shape_poly

from harness._environment import conformance_settings
from jaxport.errors import SettingsError
from tools.conformance import _report

UTIL_MODULE = "jax._src.internal_test_util.export_back_compat_test_util"

_REAL = {"jax.export": jax.export, "jax._src.export._export": jax_export_impl,
         "jax._src.export.shape_poly": jax_shape_poly}


class _Recorder:
  """Per-test outcomes of one session, and the rebinding it applied."""

  def __init__(self, mode: str, out: Path):
    self.mode = mode
    self.out = out
    self.counters = None
    self.shims: dict[str, types.ModuleType] = {}
    self.results: dict[str, _report.CaseResult] = {}
    self.rebound_modules: list[str] = []

  # --- rebinding

  def rebind_globals(self) -> None:
    # Imported here, in jaxport mode only, so that a jax run never loads jaxport.
    from tools.conformance import _shims
    self.counters = _shims.Counters()
    _shims.install_counters(self.counters)
    self.shims = {name: _shims.build(name, real) for name, real in _REAL.items()}
    sys.modules["jax.export"] = self.shims["jax.export"]
    jax.export = self.shims["jax.export"]

  def load_util(self, path: str) -> None:
    spec = importlib.util.spec_from_file_location(UTIL_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[UTIL_MODULE] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    if self.shims:
      self._rebind_module(module)
    internal_test_util.export_back_compat_test_util = module

  def _rebind_module(self, module: types.ModuleType) -> None:
    by_id = {id(real): self.shims[name] for name, real in _REAL.items()}
    for attr, value in list(vars(module).items()):
      if id(value) in by_id:
        setattr(module, attr, by_id[id(value)])
    self.rebound_modules.append(module.__name__)

  def rebind_test_modules(self, items) -> None:
    seen = set()
    for item in items:
      module = getattr(item, "module", None)
      if module is not None and id(module) not in seen:
        seen.add(id(module))
        self._rebind_module(module)

  # --- outcomes

  def record(self, report) -> None:
    outcome = _report.outcome_of(report.when, report.outcome)
    if outcome is not None:
      message = ""
      if report.failed:
        message = _report.first_line(report.longreprtext)
      elif report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[2])
      self.results[report.nodeid] = _report.merge(
          self.results.get(report.nodeid), _report.CaseResult(outcome, message))
    if report.when == "teardown" and report.nodeid in self.results:
      # The test is complete: keep it even if the run dies later.
      with _report.partial_path(self.out).open("a") as f:
        f.write(json.dumps({"nodeid": report.nodeid, **self.results[report.nodeid].to_json(),
                            "counts": self.counters.as_dict() if self.shims else {}}) + "\n")

  def write(self) -> None:
    self.out.write_text(json.dumps({
        "mode": self.mode,
        "counts": self.counters.as_dict() if self.shims else {},
        "rebound_modules": self.rebound_modules,
        "results": {k: v.to_json() for k, v in sorted(self.results.items())},
    }, indent=1))


_KEY = pytest.StashKey[_Recorder]()


def pytest_configure(config) -> None:
  try:
    wanted = conformance_settings()
  except SettingsError as e:
    raise pytest.UsageError(str(e)) from None
  recorder = _Recorder(wanted.mode, wanted.out)
  if wanted.mode == "jaxport":
    recorder.rebind_globals()
  recorder.load_util(str(wanted.util))
  config.stash[_KEY] = recorder


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
  """While a test module is imported, ``from jax._src.export import _export`` yields the stand-in.

  Module-level and class-level code (``a, b = shape_poly.symbolic_shape("a, b")``
  in a class body) then already builds jaxport's objects. The package
  attributes are restored afterwards, so jax's own code is unaffected.
  """
  recorder = collector.config.stash[_KEY]
  if recorder.mode != "jaxport" or not isinstance(collector, pytest.Module):
    return (yield)
  package = sys.modules["jax._src.export"]
  saved = {attr: getattr(package, attr) for attr in _PACKAGE_ATTRS}
  for attr, name in _PACKAGE_ATTRS.items():
    setattr(package, attr, recorder.shims[name])
  try:
    return (yield)
  finally:
    for attr, value in saved.items():
      setattr(package, attr, value)


_PACKAGE_ATTRS = {"_export": "jax._src.export._export", "shape_poly": "jax._src.export.shape_poly"}


def pytest_collection_modifyitems(session, config, items) -> None:
  recorder = config.stash[_KEY]
  if recorder.mode == "jaxport":
    recorder.rebind_test_modules(items)


def pytest_runtest_logreport(report) -> None:
  recorder = _CURRENT.get("recorder")
  if recorder is not None:
    recorder.record(report)


_CURRENT: dict[str, _Recorder] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session) -> None:
  _CURRENT["recorder"] = session.config.stash[_KEY]


def pytest_sessionfinish(session, exitstatus) -> None:
  session.config.stash[_KEY].write()
