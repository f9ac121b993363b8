"""The fuzz suite's settings: its Hypothesis profiles (``ci`` by default), the profile the
run's ``--compat-preset`` selects when ``--hypothesis-profile`` names none, and jax held to the
CPU in pytest's own process: the suite checks shape algebra, and on a TPU machine the chip
belongs to the harness's worker, which one process at a time can hold.

jax is imported when the first fuzz test is about to run, not when this file is read: a run
that collects the suite but runs none of it (``-k "not fuzz"``, ``--compat-only``) keeps
pytest's process free of jax, as the harness's own plugin does."""

import pytest
from hypothesis import settings

import harness.fuzz._hypothesis_profiles  # noqa: F401  (registers the profiles)
import jaxport_pytest


def pytest_configure(config):
  profile = jaxport_pytest.hypothesis_profile(config)
  if profile is not None and not config.getoption("hypothesis_profile", None):
    settings.load_profile(profile)


@pytest.fixture(autouse=True, scope="session")
def _jax_on_the_cpu_in_pytests_process():
  """jax's backend in this process is the CPU's, set before any fuzz test starts it."""
  import jax
  jax.config.update("jax_platforms", "cpu")
