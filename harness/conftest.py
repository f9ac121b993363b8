"""This repository's short spellings of the harness's options.

The harness itself is jaxport's pytest plugin (``jaxport.harness._controller._plugin``); the
repository opts in from ``pyproject.toml``. ``--platform`` and ``--record``
stay as the spellings of ``--compat-platform`` and ``--compat-record`` so that
``pytest harness/ --platform=cpu`` keeps working.
"""

import pytest

import jaxport_pytest


def pytest_addoption(parser):
  group = parser.getgroup("jaxport")
  group.addoption("--platform", dest=jaxport_pytest.dest("--compat-platform"), default=None,
                  choices=jaxport_pytest.PLATFORMS, help="short for --compat-platform")
  group.addoption("--record", dest=jaxport_pytest.dest("--compat-record"), default=None,
                  action="store_true", help="short for --compat-record")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
  # Hypothesis loads --hypothesis-profile when it configures, before the fuzz suite's conftest
  # (which registers the profiles) is collected; register them first, only when asked for, so
  # that a replay alone does not import Hypothesis.
  if config.getoption("hypothesis_profile", None):
    import harness.fuzz._hypothesis_profiles  # noqa: F401
