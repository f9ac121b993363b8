"""The project a command names with ``--project DIR``, read from its pytest configuration.

``audit`` and ``prune`` see the project the harness sees: pytest finds the
configuration file (``pyproject.toml`` ``[tool.pytest.ini_options]``,
``pytest.ini``, ``setup.cfg``, ``tox.ini``) as it does for ``pytest DIR`` and
applies its ``pythonpath``, and the harness plugin's own reader
(:func:`jaxport.harness._controller._plugin.project`) turns the ``jaxport_*`` options into
the :class:`~jaxport.harness.Project`, so the two cannot read it differently.
Nothing is collected or run; the project's ``conftest.py`` loads, as under pytest.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import jaxport_pytest as entry
from jaxport.errors import GoldenDataError
from jaxport.harness._controller import _plugin
from jaxport.harness._project import Project

# pytest's own options while it only reads the configuration: no output capture (the
# command's own output stays where it goes) and no cache directory written.
_READ_ONLY_ARGS = ("--capture=no", "-p", "no:cacheprovider")


class _Reader:
  """A pytest plugin that reads the project at the start of pytest's main step and stops."""

  def __init__(self) -> None:
    self.project: Project | None = None
    self.problem: str | None = None

  @pytest.hookimpl(tryfirst=True)
  def pytest_cmdline_main(self, config: pytest.Config) -> int:
    if not config.pluginmanager.is_registered(entry):
      config.pluginmanager.register(entry)  # plugin autoloading is off: declare the options
    where = config.inipath or "no configuration file found"
    if not entry.opted_in(config):
      self.problem = (f"its pytest configuration ({where}) sets no {entry.INI_CASES} and no "
                      f"{entry.INI_STORE}, so it has not opted into the jaxport compat harness; "
                      f"name its case modules and "
                      f"store there, e.g. [tool.pytest.ini_options] {entry.INI_CASES} = "
                      f"[\"mypkg.golden_cases\"] and {entry.INI_STORE} = \"golden\" "
                      "(docs/downstream.md)")
      return 0
    try:
      self.project = _plugin.project(config)
    except pytest.UsageError as e:
      self.problem = f"{where}: {e}"
    return 0


def read(root: Path, directory: str) -> Project:
  """The project whose pytest configuration governs ``root``, the folder the command line
  named ``directory``; a folder that is not an opted-in project, or a configuration pytest
  refuses, is a ``GoldenDataError`` saying why."""
  reader = _Reader()
  saved = list(sys.path)
  try:
    code = pytest.main([str(root), *_READ_ONLY_ARGS], plugins=[reader])
  finally:
    sys.path[:] = saved  # the project's paths are put on only while its cases are imported
  if reader.project is not None:
    return reader.project
  raise GoldenDataError(
      f"--project {directory}: "
      + (reader.problem or f"pytest could not read the configuration of {root} (exit status "
                           f"{int(code)}; its message is above)"))

