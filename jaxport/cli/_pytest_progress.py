"""A pytest plugin that ``jaxport record`` and ``jaxport replay`` load: the run's progress.

On a terminal, one bar redrawn in place replaces pytest's row of dots; in a log
(no terminal) each finished item is one plain line. pytest's verbose modes
(``-v``) keep their own one-line-per-test output. Loaded with
``-p jaxport.cli._pytest_progress``; only pytest imports it.
"""

from __future__ import annotations

import pytest

from jaxport._progress import bar_line

PLUGIN_NAME = "jaxport-progress"


class HarnessProgress:
  """Counts finished items against the number collected and shows it."""

  def __init__(self, config: pytest.Config):
    self.config = config
    self.session: pytest.Session | None = None
    self.done = 0
    self.drawn = False

  @property
  def tr(self):
    # Looked up when used: the terminal reporter registers itself after this plugin configures.
    return self.config.pluginmanager.get_plugin("terminalreporter")

  @property
  def active(self) -> bool:
    return self.tr is not None and self.config.option.verbose <= 0

  @pytest.hookimpl(wrapper=True)
  def pytest_report_teststatus(self, report, config):
    category, letter, word = yield
    # Our progress replaces the per-test letter; the word stays for the short summary's
    # "FAILED <item>" lines, and pytest still counts and summarizes every outcome.
    return (category, "", word) if self.active else (category, letter, word)

  def pytest_sessionstart(self, session: pytest.Session) -> None:
    self.session = session
    if self.active:
      # The file name pytest prints before each file's letters would break our lines.
      self.tr.showfspath = False

  def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
    if not self.active or report.when != "teardown":
      return
    self.done += 1
    total = max(self.session.testscollected if self.session else 0, self.done)
    line = bar_line("harness", self.done, total, report.nodeid)
    if self.tr.isatty():
      self.tr.rewrite(line, erase=True)
      self.drawn = True
    else:
      self.tr.write_line(line)

  def pytest_sessionfinish(self) -> None:
    if self.drawn:
      self.tr.write_line("")
      self.drawn = False


def pytest_configure(config: pytest.Config) -> None:
  config.pluginmanager.register(HarnessProgress(config), PLUGIN_NAME)
