"""`jaxport audit`'s check of a comparison's worth reads complex outputs by their modulus,
quietly (no numpy ComplexWarning in the audit's output)."""

import types
import warnings

import numpy as np
import pytest

from jaxport.cli import _audit


def _manifest(atol: float):
  comparison = types.SimpleNamespace(mode="allclose", rtol=1e-5, atol=atol)
  return types.SimpleNamespace(lowering_only=False, comparison=comparison)


class _Entry:
  def expected_outputs(self):
    return [np.array([3 + 4j, 0.5j], np.complex64)]


@pytest.mark.parametrize("atol, vacuous", [(4.0, False), (6.0, True)])
def test_a_complex_output_is_measured_by_its_modulus_without_a_complex_warning(atol, vacuous):
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    why = _audit._vacuous_comparison(_Entry(), _manifest(atol))
  assert (why is not None) == vacuous
  if vacuous:
    assert "largest 5" in why
