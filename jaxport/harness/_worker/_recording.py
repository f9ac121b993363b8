"""Recording one case: export it today, serialize it, run it (unless lowering-only), and
describe it in a manifest; the entry to write. Runs inside the isolated worker process,
with the engine's helpers (``_engine``) for the jax configuration, the export and the call.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
from typing import Any

import jax
import numpy as np

from jaxport import _versions
from jaxport.errors import UnregisteredNodeError
from jaxport.golden._manifest import Comparison, Manifest, OutputTolerance, Producer
from jaxport.errors import CheckerError
from jaxport.harness._worker import (_calling, _contract, _gradients, _judging, _lowering,
                                     _shardings)
from jaxport.harness import _case, checkers
from jaxport.harness._worker._case_runs import (callable_leaves, case_inputs, export_case,
                                                jit_kwargs, storable)
from jaxport.harness._worker._engine import replay_host
from jaxport.harness._worker._jax_setup import calls_under, case_jax_config, jax_config
from jaxport.harness._worker._record_calls import call_with_every_reader


@dataclasses.dataclass(frozen=True)
class Recording:
  """Everything the store needs to write one entry."""

  manifest: Manifest
  blob: bytes
  inputs: list[np.ndarray]
  expected: list[np.ndarray] | None
  module_text: str
  shardings: dict[str, Any] | None = None
  gradients: _gradients.Gradients = _gradients.Gradients(0)


def record_case(case: _case.Case, today: datetime.date,
                checker_registry: checkers.CheckerRegistry | None = None) -> Recording:
  """Export and serialize ``case`` under its jax configuration, then read and (unless
  lowering-only) call the blob with every reader under the configuration replay uses; the
  entry to write. ``checker_registry``: the project's checkers (default: the built-in
  ones and those added with ``register_checker``)."""
  config = case_jax_config(case)
  with jax_config(config):
    return _record_case(case, today, config,
                        checker_registry if checker_registry is not None
                        else checkers.project_registry())


def _record_case(case: _case.Case, today: datetime.date, config: dict[str, Any],
                 known: checkers.CheckerRegistry) -> Recording:
  if case.checker not in known:
    # An entry is immutable: a checker named wrong would fail only at every later replay.
    near = difflib.get_close_matches(case.checker, list(known), n=1)
    raise ValueError(
        f"case {case.case_id}: checker={case.checker!r} is not a registered checker"
        + (f" (did you mean {near[0]!r}?)" if near else "") + f"; the known ones are "
        f"{sorted(known)}, and a project adds its own in a case module's "
        "CHECKERS (or with jaxport.harness.register_checker). Nothing was recorded.")
  gradients = _gradients.recorded_gradients(case)
  exp = export_case(case)
  blob = _serialized(case, exp, gradients)
  sigs = _lowering.signatures(exp.mlir_module_serialized)
  missing = sorted(set(case.targets) - set(_lowering.targets(sigs)))
  if missing:
    raise ValueError(
        f"case {case.case_id}: its lowering does not emit {missing} (emits "
        f"{_lowering.targets(sigs)}); fix the case's function or its targets= in the project's "
        "case module.")
  _, _, inputs = case_inputs(case)
  expected = shardings = None
  with jax_config(calls_under(config)):
    outs = call_with_every_reader(case.case_id, blob, inputs, run=not case.lowering_only)
  if outs is not None:
    expected = [storable(o) for o in outs]
    if _shardings.num_devices(exp) > 1:
      shardings = _shardings.record(exp, outs)
      _check_shardings_against_jit(case, exp, inputs, shardings)
  comparison = _case.comparison_of(case, output_paths(exp, gradients.order, expected or []))
  if expected is not None:
    _check_recorded(case, comparison, inputs, expected, known)
  tolerances = None if expected is None else tuple(
      OutputTolerance(o.path, o.dtype, o.rtol, o.atol) for o in comparison.outputs)
  manifest = Manifest(
      case_id=case.case_id, family=case.family, platform=case.host_platform, record_date=today,
      producer=Producer.current(), host=replay_host(case.host_platform),
      calling_convention_version=exp.calling_convention_version,
      serialization_version=_versions.serialization_layout_version(), custom_call_targets=sigs,
      polymorphic_shapes=case.polymorphic_shapes, constraints=case.constraints,
      lowering_only=case.lowering_only,
      comparison=Comparison(comparison.checker, comparison.rtol, comparison.atol),
      jax_config=config, min_consumer=getattr(case, "min_consumer", None), tolerances=tolerances,
      no_cotangent=no_cotangent(exp) if gradients.order >= 1 else None)
  return Recording(manifest, blob, inputs, expected, exp.mlir_module(), shardings, gradients)


def _serialized(case: _case.Case, exp: Any, gradients: _gradients.Gradients) -> bytes:
  """The blob of ``exp`` with the VJPs of ``gradients``; a tree holding a node jax.export
  cannot serialize (jax's reader of the entry would fail every replay) is refused naming the
  case, the type and the fix."""
  try:
    return _gradients.serialized(case, exp, gradients)
  except UnregisteredNodeError as e:
    raise UnregisteredNodeError(
        f"case {case.case_id}: its {e.part} hold `{e.node_type}`, a pytree node type with no "
        "serialization registration, which jax.export refuses to serialize, so jax's reader "
        f"could not read the entry. Nothing was recorded. {e.fix} (a registration belongs in "
        "the case module, so that importing it registers the type).", node_type=e.node_type,
        part=e.part, fix=e.fix) from None


def _check_recorded(case: _case.Case, comparison: _case.CaseComparison,
                    inputs: list[np.ndarray], expected: list[np.ndarray],
                    known: checkers.CheckerRegistry) -> None:
  """Refuse to record outputs the case's own checker rejects, or raises on, judged against
  themselves: every replay of such an entry would fail on the checker, not on jax."""
  verdict = _judging.judge_as_recorded(known, comparison, inputs, expected)
  if verdict.checker_error is not None:
    why = f"{verdict.checker_error} on the outputs just recorded"
  elif not verdict.ok:
    why = (f"checker {comparison.checker!r} rejects the outputs just recorded, judged against "
           f"themselves: {'; '.join(verdict.problems) or 'no problem named'}")
  else:
    return
  raise CheckerError(
      f"case {case.case_id}: {why}. A checker judges the case's outputs (the function's, then "
      "a VJP's); choose one that fits them (checker='allclose' compares elementwise), or fix "
      "the case's function or the checker. Nothing was recorded.")


def nonfinite_lines(expected: list[np.ndarray] | None) -> tuple[str, ...]:
  """One line per recorded output holding NaN or infinities, with how many of each
  (``output 0: 16 NaN, 2 -inf``): what a record line says of outputs compared as values."""
  out = []
  for i, x in enumerate(expected or ()):
    counts = checkers.nonfinite_counts(x)
    if counts:
      out.append(f"output {i}: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
  return tuple(out)


def output_paths(exp: Any, vjp_order: int,
                 outputs: list[np.ndarray]) -> list[tuple[str, Any]]:
  """``(path, dtype)`` of each recorded output: the function's by their output paths, then,
  with a VJP, the VJP's of order 1 by the input each is the cotangent of
  (``vjp1:args[0]``), for the inputs that have one. Outputs of another count than the
  contract says get ``output[i]``."""
  contract = _calling.contract_of(exp, donations=())  # its paths only
  paths = [p for p, _ in contract.outputs]
  if vjp_order >= 1:
    without = set(no_cotangent(exp))
    paths += [f"vjp1:{p}" for p, _ in contract.inputs if p not in without]
  if len(paths) != len(outputs):
    paths = [f"output[{i}]" for i in range(len(outputs))]
  return [(p, o.dtype) for p, o in zip(paths, outputs)]


def no_cotangent(exp: Any) -> tuple[str, ...]:
  """The paths of ``exp``'s inputs that have no cotangent (integers, bools, PRNG keys): the
  VJP's outputs for them are ``float0``, which holds nothing, and are not stored."""
  contract = _calling.contract_of(exp)
  return tuple(p for (p, _), aval in zip(contract.inputs, exp.in_avals)
               if not _contract.has_cotangent(aval.dtype))


def _check_shardings_against_jit(case: _case.Case, exp: Any, inputs: list[np.ndarray],
                                 shardings: dict[str, Any]) -> None:
  """Refuse to record output shardings that differ from those of ``jax.jit`` of the case."""
  placed, context = _shardings.placed_call_args(exp, callable_leaves(inputs, exp.in_avals))
  args, kwargs = exp.in_tree.unflatten(placed)
  with context:
    direct = jax.tree.leaves(jax.jit(case.fun, **jit_kwargs(case))(*args, **kwargs))
  primal = {"outputs": shardings["outputs"][:len(direct)]}
  problems = _shardings.compare(primal, direct)
  if problems:
    raise ValueError(f"case {case.case_id}: the exported function's outputs are sharded "
                     f"differently from jax.jit of the case: {problems}")
