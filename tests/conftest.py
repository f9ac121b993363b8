"""Fixtures shared across the suite: the reference (``jax.export``) and jaxport side by side."""

import jax.export
import pytest

import jaxport

EXPORT_APIS = {"jax": jax.export, "jaxport": jaxport}


@pytest.fixture(scope="module", params=sorted(EXPORT_APIS))
def exporter(request):
  """``jax.export`` or ``jaxport`` (``.export``, ``.DisabledSafetyCheck``, ``.symbolic_shape``):
  jaxport calls the records of both."""
  return EXPORT_APIS[request.param]
