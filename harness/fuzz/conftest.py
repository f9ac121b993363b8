"""The fuzz suite's settings: its Hypothesis profiles (``ci`` by default), the profile the
run's ``--compat-preset`` selects when ``--hypothesis-profile`` names none, and jax held to the
CPU in pytest's own process: the suite checks shape algebra, and on a TPU machine the chip
belongs to the harness's worker, which one process at a time can hold."""

import jax
from hypothesis import settings

import harness.fuzz._hypothesis_profiles  # noqa: F401  (registers the profiles)
import jaxport_pytest

jax.config.update("jax_platforms", "cpu")


def pytest_configure(config):
  profile = jaxport_pytest.hypothesis_profile(config)
  if profile is not None and not config.getoption("hypothesis_profile", None):
    settings.load_profile(profile)
