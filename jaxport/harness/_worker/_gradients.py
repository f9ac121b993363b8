"""The order of the gradients (VJPs) recorded and compared for a case.

A case's ``vjp_order`` is its own choice. Left unset, a case whose function holds a custom
derivative rule (``jax.custom_vjp`` or ``jax.custom_jvp``, in its jaxpr or a nested one) and
takes a float input records its VJP of order 1: a changed rule leaves the function's module
as it was, so only its gradients show the change. Today's lowering is compared with an entry
at the order the entry was recorded with wherever the case leaves the order unset, so an
entry recorded without gradients is judged as it was recorded.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from jaxport._jaxcompat._custom_rules import custom_rule_kinds
from jaxport.errors import GoldenDataError, UnregisteredNodeError
from jaxport.golden import _no_cotangent
from jaxport.golden._manifest import Manifest
from jaxport.golden._store import GoldenStore
from jaxport.harness import _case
from jaxport.harness._worker._case_runs import case_inputs, jit_kwargs
from jaxport.harness._worker._contract import has_cotangent
from jaxport.harness._worker._jax_setup import case_jax_config, jax_config

# The highest order the harness records and compares: the replay contract calls the VJP of
# order 1 only, so a blob of a higher order would be compared at order 1.
MAX_RECORDED_ORDER = 1


@dataclasses.dataclass(frozen=True)
class Gradients:
  """What a recording of a case writes of its gradients: the ``order``, and, where the case
  leaves ``vjp_order`` unset, the kinds of custom derivative rule its function holds
  (``rules``, empty where it holds none or the case sets the order)."""

  order: int
  rules: frozenset[str] = frozenset()

  @property
  def by_default(self) -> bool:
    """Whether the gradients are recorded because of the default, not the case's choice."""
    return bool(self.rules) and self.order >= 1


def recorded_gradients(case: _case.Case) -> Gradients:
  """The gradients a recording of ``case`` writes; a ``vjp_order`` above
  :data:`MAX_RECORDED_ORDER` is refused, naming the limit."""
  if case.vjp_order is not None:
    if case.vjp_order > MAX_RECORDED_ORDER:
      raise ValueError(
          f"case {case.case_id}: vjp_order={case.vjp_order}, but the harness records and "
          f"compares gradients up to order {MAX_RECORDED_ORDER} only (the VJP of order 1 for "
          "cotangents of ones); set vjp_order=1. Nothing was recorded.")
    return Gradients(case.vjp_order)
  args, kwargs, _ = case_inputs(case)
  leaves = jax.tree.leaves((args, kwargs))
  if not any(has_cotangent(_dtype(x)) for x in leaves):
    return Gradients(0)
  with jax_config({**case_jax_config(case), **dict(case.jax_flags)}):
    # Traced as the export traces it: jitted with the case's own jit arguments (shardings).
    jitted = jax.jit(case.fun, **jit_kwargs(case))
    rules = custom_rule_kinds(jax.make_jaxpr(jitted)(*args, **kwargs))
  return Gradients(1 if rules else 0, rules)


def serialized(case: _case.Case, exp: Any, gradients: Gradients) -> bytes:
  """The blob of ``exp`` with the VJPs of ``gradients``. Where the default asked for them and
  the function has no VJP to export (a ``while_loop`` with a dynamic trip count, a primitive
  without a differentiation rule), the recording is refused, naming the rule and the opt-out."""
  try:
    return bytes(exp.serialize(vjp_order=gradients.order))
  except UnregisteredNodeError:
    raise  # the function's own trees, not its VJP: the recorder names the fix
  except Exception as e:
    if not gradients.by_default:
      raise
    rules = " and ".join(sorted(gradients.rules))
    raise ValueError(
        f"case {case.case_id}: its function holds a {rules} rule, so its gradients (the VJP of "
        f"order 1) are recorded by default, but its VJP cannot be exported: "
        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}. Set vjp_order=0 on "
        "the case to record it without gradients. Nothing was recorded.") from e


def todays_order(case: _case.Case, entry_has_vjp: bool) -> int:
  """The order today's lowering of ``case`` is compared with an entry at: the case's own
  ``vjp_order``, or where it leaves it unset, the entry's (1 where it carries a VJP)."""
  if case.vjp_order is not None:
    return case.vjp_order
  return 1 if entry_has_vjp else 0


def _dtype(x: object) -> object:
  """The dtype of an input leaf (a Python number's as numpy reads it)."""
  dtype = getattr(x, "dtype", None)
  return np.asarray(x).dtype if dtype is None else dtype


def entry_has_vjp(m: Manifest) -> bool:
  """Whether an entry carries a VJP as its manifest says: ``no_cotangent`` (format 4), or a
  VJP output among its tolerances (format 3). An entry of an older format says nothing."""
  return m.no_cotangent is not None or any(
      t.path.startswith(_no_cotangent.VJP_PREFIX) for t in m.tolerances or ())


def added_gradients_line(recorded: Manifest, gradients: Gradients, store_root: str,
                         written: bool) -> str:
  """What the record line of a case says when it records gradients by default while its
  newest entry in the store at ``store_root`` holds none (an entry recorded before the
  default): that entry is judged as recorded, and this recording (``written``) or the next
  one adds them. Empty otherwise."""
  if not gradients.by_default:
    return ""
  try:
    stored = [e for e in GoldenStore(store_root).entries(recorded.platform, recorded.family)
              if e.entry_id.case_id == recorded.case_id]
    newest = max(stored, key=lambda e: (e.manifest.record_date, e.manifest.revision or 0),
                 default=None)
    if newest is None or entry_has_vjp(newest.manifest):
      return ""
  except GoldenDataError:
    return ""
  rules = " and ".join(sorted(gradients.rules))
  adds = "this recording adds them" if written else "the next record of the case adds them"
  return (f"gradients: the case's function holds a {rules} rule, so its VJP of order 1 is "
          f"recorded and compared by default (vjp_order=0 opts out); {newest.entry_id} holds "
          f"none and is judged as recorded, without them; {adds}.")
