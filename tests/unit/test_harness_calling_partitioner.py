"""Readers call every entry under Shardy; a case's partitioner choice is its export's only."""

import datetime

import pytest

from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.harness._worker import _jax_setup


def _manifest(jax_config) -> Manifest:
  return Manifest(
      case_id="c", family="f", platform="cpu", record_date=datetime.date(2026, 1, 2),
      producer=Producer.current(), calling_convention_version=10, serialization_version=11,
      custom_call_targets=(), polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison("allclose", 1e-5, 1e-6), jax_config=jax_config)


@pytest.mark.parametrize("recorded", [
    {"jax_enable_x64": False, "jax_use_shardy_partitioner": False},
    {"jax_enable_x64": True, "jax_use_shardy_partitioner": True},
    {"jax_enable_x64": False},
    None,
])
def test_readers_call_with_shardy_and_the_entrys_other_settings(recorded):
  m = _manifest(recorded)
  calling = _jax_setup.calling_jax_config(m)
  assert calling["jax_use_shardy_partitioner"] is True
  entry = _jax_setup.entry_jax_config(m)
  assert {k: v for k, v in calling.items() if k != "jax_use_shardy_partitioner"} == {
      k: v for k, v in entry.items() if k != "jax_use_shardy_partitioner"}

