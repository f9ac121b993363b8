"""The fuzz suite's settings: its Hypothesis profiles (``ci`` by default), and the profile the
run's ``--compat-preset`` selects when ``--hypothesis-profile`` names none."""

from hypothesis import settings

import harness.fuzz._hypothesis_profiles  # noqa: F401  (registers the profiles)
import jaxport_pytest


def pytest_configure(config):
  profile = jaxport_pytest.hypothesis_profile(config)
  if profile is not None and not config.getoption("hypothesis_profile", None):
    settings.load_profile(profile)
