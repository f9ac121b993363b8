"""jaxport's writes into jax's private registries check each registry first: one that changed
kind stops with a JaxportError naming it, before anything is written."""

from __future__ import annotations

import pytest

from jaxport._jaxcompat import _registries
from jaxport._jaxcompat._tracing import core, dtypes, effects
from jaxport.errors import JaxVersionError


class _Dimension(int):
  pass


def test_a_registry_of_another_kind_is_named_and_nothing_is_written(monkeypatch):
  monkeypatch.setattr(core, "pytype_aval_mappings", tuple(core.pytype_aval_mappings))
  with pytest.raises(JaxVersionError, match=r"pytype_aval_mappings.*supported jax release"):
    _registries.register_dimension_type(_Dimension, lambda *a, **k: None)
  assert _Dimension not in dtypes.python_scalar_types
  assert _Dimension not in dtypes.python_scalar_types_to_dtypes


def test_an_effect_set_without_add_type_is_named_and_no_set_is_joined(monkeypatch):
  class Effect(effects.Effect):
    pass

  monkeypatch.setattr(effects, "remat_allowed_effects", frozenset())
  with pytest.raises(JaxVersionError, match="remat_allowed_effects"):
    _registries.allow_effect_type(Effect)
  assert not effects.lowerable_effects.contains(Effect())


def test_the_shape_bridge_registered_its_dimension_type():
  from jaxport.shapes import _bridge
  assert _bridge.DimExpr in core.pytype_aval_mappings
  assert _bridge.DimExpr in dtypes.python_scalar_types
  assert effects.lowerable_effects.contains(_bridge.ShapeAssertionEffect())
