"""Stand-ins for jax's export modules that route every name to jaxport, with call counters.

JAX's test suites reach jax's export implementation through three names:
``jax.export`` (the public module), ``_export`` (``jax._src.export._export``)
and ``shape_poly`` (``jax._src.export.shape_poly``). Each stand-in lists the
names it serves from jaxport (``ROUTES``) and the few it passes through to
jax (``PASS_THROUGH``: private helpers of jax's symbolic-shape algebra that a
test calls directly; a test using them on jaxport's dimensions is a rebinding
artefact and is listed in ``deviations.json``). jax's private
``_bounds_decision`` is answered by jaxport's decision procedure, so jax's
tests of bounds test jaxport's. Any other name raises
``AttributeError``, so a test cannot silently reach jax's implementation.

Counters prove that jaxport's code ran: every call of ``export``, ``call``
(the function and the ``Exported.call`` method) and ``deserialize`` is counted.
"""

from __future__ import annotations

import collections
import functools
import types
from collections.abc import Callable
from typing import Any

import jaxport
from jaxport.calling import _call
from jaxport.custom_calls import _registry
from jaxport.export import _lower
from jaxport.serde import _read
from jaxport.shapes import _decision

# Shim name -> {attribute: jaxport attribute}. Values name attributes of the
# ``jaxport`` package, except those starting with "@", which ``_special`` builds.
ROUTES: dict[str, dict[str, str]] = {
    "jax.export": {
        "DisabledSafetyCheck": "DisabledSafetyCheck",
        "Exported": "Exported",
        "SymbolicScope": "SymbolicScope",
        "default_export_platform": "default_export_platform",
        "deserialize": "deserialize",
        "export": "export",
        "is_symbolic_dim": "is_symbolic_dim",
        "maximum_supported_calling_convention_version":
            "maximum_supported_calling_convention_version",
        "minimum_supported_calling_convention_version":
            "minimum_supported_calling_convention_version",
        "register_namedtuple_serialization": "register_namedtuple_serialization",
        "register_pytree_node_serialization": "register_pytree_node_serialization",
        "symbolic_args_specs": "symbolic_args_specs",
        "symbolic_dim_bounds": "symbolic_dim_bounds",
        "symbolic_shape": "symbolic_shape",
    },
    "jax._src.export._export": {
        "DisabledSafetyCheck": "DisabledSafetyCheck",
        "Exported": "Exported",
        "call": "call",
        "call_exported": "call",
        "default_export_platform": "default_export_platform",
        "deserialize": "deserialize",
        "export": "export",
        "maximum_supported_calling_convention_version":
            "maximum_supported_calling_convention_version",
        "minimum_supported_calling_convention_version":
            "minimum_supported_calling_convention_version",
        "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE": "@stable_targets",
    },
    "jax._src.export.shape_poly": {
        "_bounds_decision": "@bounds_decision",
        "SymbolicScope": "SymbolicScope",
        "is_symbolic_dim": "is_symbolic_dim",
        "symbolic_args_specs": "symbolic_args_specs",
        "symbolic_shape": "symbolic_shape",
    },
}

# Names served by jax itself: type aliases and the private algebra that
# shape_poly_test.py exercises directly (not part of any export route).
PASS_THROUGH: dict[str, frozenset[str]] = {
    "jax.export": frozenset(),
    "jax._src.export._export": frozenset(),
    "jax._src.export.shape_poly": frozenset(
        ["DimSize", "BoundsPrecision", "Comparator", "_DimExpr", "_DimTerm", "_ensure_poly"]),
}

# The jaxport functions whose calls are counted, by counter name.
COUNTED = ("export", "call", "deserialize")


class Counters:
  """Calls into jaxport, by function name."""

  def __init__(self) -> None:
    self.counts: collections.Counter[str] = collections.Counter()

  def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, counting each call under ``name``."""
    @functools.wraps(fn)
    def counted(*args, **kwargs):
      self.counts[name] += 1
      return fn(*args, **kwargs)
    counted.__wrapped_by_conformance__ = True  # type: ignore[attr-defined]
    return counted

  def as_dict(self) -> dict[str, int]:
    return {name: self.counts.get(name, 0) for name in COUNTED}


class _Shim(types.ModuleType):
  """A module whose attributes come from ``table``; anything else is refused."""

  def __init__(self, name: str, table: dict[str, Any], passthrough: frozenset[str],
               original: types.ModuleType | None):
    super().__init__(name, f"jaxport stand-in for {name} (conformance runner)")
    self.__dict__.update(table)
    self._passthrough = passthrough
    self._original = original

  def __getattr__(self, attr: str) -> Any:
    if attr.startswith("__") or attr not in self._passthrough or self._original is None:
      raise AttributeError(
          f"the conformance runner's stand-in for {self.__name__} has no {attr!r}: it serves "
          f"only jaxport's names ({', '.join(sorted(k for k in self.__dict__ if k[0] != '_'))}) "
          "and the listed pass-through names; add the name to ROUTES or PASS_THROUGH in "
          "tools/conformance/_shims.py after review.")
    return getattr(self._original, attr)


def _bounds_decision(e: Any, precision: Any) -> tuple[float, float]:
  """jax's private ``_bounds_decision(e, BoundsPrecision.X)`` answered by jaxport's decision procedure.

  jax's ``BoundsPrecision`` values (0, 1, 2) are the precisions jaxport's
  ``bounds`` takes, in the same order.
  """
  return _decision.bounds(e, getattr(precision, "value", precision))


def _special(name: str) -> Any:
  if name == "@stable_targets":
    return set(_registry.stable_targets())
  if name == "@bounds_decision":
    return _bounds_decision
  raise KeyError(name)


# Where the counted functions are looked up: the implementation modules (what
# ``Exported.call`` and nested calls use) and the public package.
COUNTED_SITES: tuple[tuple[types.ModuleType, str], ...] = (
    (_call, "call"), (_lower, "export"), (_read, "deserialize"),
    (jaxport, "call"), (jaxport, "export"), (jaxport, "deserialize"))


def install_counters(counters: Counters) -> None:
  """Count calls into jaxport's export, call (function and method) and deserialize."""
  for module, attr in COUNTED_SITES:
    fn = getattr(module, attr)
    if not getattr(fn, "__wrapped_by_conformance__", False):
      setattr(module, attr, counters.wrap(attr, fn))


def build(name: str, original: types.ModuleType | None = None) -> types.ModuleType:
  """The stand-in module for ``name`` (a key of ``ROUTES``), reading jaxport's names now."""
  table = {attr: (_special(src) if src.startswith("@") else getattr(jaxport, src))
           for attr, src in ROUTES[name].items()}
  return _Shim(name, table, PASS_THROUGH[name], original)
