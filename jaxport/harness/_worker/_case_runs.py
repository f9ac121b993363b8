"""Exporting a case today and calling an exported record on its stored inputs, as the
replay contract says; recording and replay share both."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from jaxport.harness._worker import _reference as _api, _contract, _shardings
from jaxport.harness import _case
from jaxport.harness._worker._jax_setup import case_jax_config, jax_config

# The replay contract (storable leaves, cotangents, float0), shared with the scripts that
# record and replay inside older jax releases.
storable = _contract.storable
callable_leaves = _contract.callable_leaves


def run_exported_arrays(exp: Any, leaves: list[np.ndarray]) -> list[Any]:
  """Call ``exp`` on the flat stored inputs (and its VJP, if any) as the replay contract
  says; the flat output arrays, with their shardings. Multi-device records get their
  inputs placed as recorded (``jaxport.harness._worker._shardings``)."""
  return _contract.run_exported_arrays(exp, leaves, place=_shardings.placed_call_args)


def run_exported(exp: Any, leaves: list[np.ndarray]) -> list[np.ndarray]:
  """Call ``exp`` on the flat stored inputs; flat storable outputs."""
  return [storable(o) for o in run_exported_arrays(exp, leaves)]


def case_inputs(case: _case.Case) -> tuple[tuple, dict, list[np.ndarray]]:
  args, kwargs = case.make_inputs()
  return args, kwargs, [storable(x) for x in jax.tree.leaves((args, kwargs))]


def jit_kwargs(case: _case.Case) -> dict[str, Any]:
  """``jax.jit`` keyword arguments of a multi-device case (shardings on this process's devices)."""
  make = getattr(case, "jit_kwargs", None)
  return make() if make is not None else {}


def _exporter(producer: str, for_jax: str | None = None) -> _contract.Exporter:
  return _contract.Exporter(
      export=functools.partial(_api.export, producer=producer, for_jax=for_jax),
      symbolic_args_specs=lambda args, shapes, constraints: _api.symbolic_args_specs(
          args, shapes, constraints=constraints, producer=producer))


def export_case(case: _case.Case, producer: str = _api.PRIMARY) -> Any:
  """Export ``case`` now, for its platforms, with ``producer``'s exporter, under the case's
  jax configuration and its extra flags."""
  args, kwargs, _ = case_inputs(case)
  with jax_config({**case_jax_config(case), **dict(case.jax_flags)}):
    return _contract.export_function(
        _exporter(producer, case.for_jax if producer == _api.PRIMARY else None),
        case.fun, args, kwargs, polymorphic_shapes=case.polymorphic_shapes,
        constraints=case.constraints or (), platforms=case.export_platforms(),
        disabled_checks=case.disabled_checks, jit_kwargs=jit_kwargs(case))
