"""This repository's short spellings of the harness's options.

The harness itself is jaxport's pytest plugin (``jaxport.harness._plugin``); the
repository opts in from ``pyproject.toml``. ``--platform`` and ``--record``
stay as the spellings of ``--compat-platform`` and ``--compat-record`` so that
``pytest harness/ --platform=cpu`` keeps working.
"""

import jaxport_pytest


def pytest_addoption(parser):
  group = parser.getgroup("jaxport")
  group.addoption("--platform", dest=jaxport_pytest.dest("--compat-platform"), default=None,
                  choices=jaxport_pytest.PLATFORMS, help="short for --compat-platform")
  group.addoption("--record", dest=jaxport_pytest.dest("--compat-record"), default=None,
                  action="store_true", help="short for --compat-record")
