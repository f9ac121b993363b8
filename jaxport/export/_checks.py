"""Export-time safety checks: what jax's lowering produced, and which custom calls the module makes.

Refusals name what is wrong, where, and how to proceed. The custom-call check
walks the module with jaxlib's MLIR bindings (``custom_calls._walk``) against
the data table of stable targets (``custom_calls._registry``).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from jaxport._jaxcompat import _messages as jax_messages
from jaxport._jaxcompat import _version
from jaxport._vocabulary import ALL_TARGETS
from jaxport.custom_calls import _registry, _walk
from jaxport.errors import CustomCallError, ExportError
from jaxport.export import _mlir
from jaxport.export._disabled_checks import DisabledSafetyCheck

_DOCS_URL = f"{jax_messages.EXPORT_PAGE}#compatibility-guarantees-for-custom-calls"

# compile_args keys whose meaning export understands. A new key may change the
# calling convention, so it is refused until someone checks what it means.
# ``spmd_lowering`` and ``pmap_nreps`` exist up to jax 0.9.x.
_KNOWN_COMPILE_ARGS = frozenset({
    "backend", "platforms", "mesh", "global_in_avals", "global_out_avals",
    "in_shardings", "out_shardings", "kept_var_idx", "mut", "auto_spmd_lowering",
    "tuple_args", "ordered_effects", "unordered_effects", "keepalive",
    "host_callbacks", "committed", "device_assignment", "jaxpr_debug_info",
    "shape_poly_state", "all_default_mem_kind", "in_layouts", "out_layouts",
    "all_args_info", "pgle_profiler", "intermediate_shardings", "context_mesh",
    "num_devices", "spmd_lowering", "pmap_nreps",
})

# (compile_args key, whether its value is supported, the supported value as jax words it).
_SUPPORTED_VALUES = (
    ("spmd_lowering", lambda v: v, "True"),
    ("auto_spmd_lowering", lambda v: not v, "False"),
    ("pmap_nreps", lambda v: v == 1, "1"),
)


def check_compile_args(compile_args: Mapping[str, Any], fun_name: str) -> None:
  """Refuse lowerings whose features the calling convention cannot carry (jax's messages first)."""
  if compile_args.get("host_callbacks") or compile_args.get("keepalive"):
    # jax's exact message, so code catching it keeps working.
    raise NotImplementedError("serialization of host_callbacks is not yet implemented")
  unknown = sorted(set(compile_args) - _KNOWN_COMPILE_ARGS)
  if unknown:
    raise NotImplementedError(
        f"Unrecognized lowered.compile_args[{unknown[0]}]\n"
        f"While exporting '{fun_name}', this jax lowers with options {unknown} whose effect on "
        "the calling convention jaxport has not checked. Use a jax release jaxport supports "
        f"({_version.MIN_JAX} to {_version.MAX_TESTED_JAX}).")
  wrong = [f"{key} must be {want} and it is {compile_args[key]}"
           for key, ok, want in _SUPPORTED_VALUES if key in compile_args and not ok(compile_args[key])]
  if wrong:
    raise NotImplementedError(
        "serialization error, unimplemented lowered.compile_args:\n" + "\n".join(wrong)
        + f"\nThe calling convention cannot express this for '{fun_name}'.")
  if compile_args.get("mut"):
    raise NotImplementedError(
        f"Cannot export '{fun_name}': it mutates its inputs (jax refs); the "
        "calling convention has no way to express that.")


def disabled_targets(disabled_checks: Sequence[Any]) -> frozenset[str]:
  """The targets that ``custom_call`` checks of ``disabled_checks`` name (``ALL_TARGETS``
  among them allows every target); jaxport's or ``jax.export``'s descriptors alike."""
  return frozenset(t for t in (dc.is_custom_call() for dc in disabled_checks) if t is not None)


def allowed_targets(disabled_checks: Sequence[DisabledSafetyCheck]) -> tuple[frozenset[str], bool]:
  """The allowed custom-call targets, and whether every target is allowed."""
  extra = disabled_targets(disabled_checks)
  return _registry.stable_targets() | extra, ALL_TARGETS in extra


def check_custom_calls(module: Any, disabled_checks: Sequence[DisabledSafetyCheck],
                       fun_name: str) -> None:
  """Raise CustomCallError if ``module`` calls a target that is neither stable nor allowed."""
  allowed, allow_all = allowed_targets(disabled_checks)
  bad = _walk.disallowed_sites(module, allowed, allow_all=allow_all)
  if bad:
    raise _custom_call_error(bad, fun_name, allowed - _registry.stable_targets())


def _custom_call_error(sites: list[_walk.CustomCallSite], fun_name: str,
                       allowed_unstable: frozenset[str]) -> CustomCallError:
  by_target: dict[str, list[_walk.CustomCallSite]] = collections.defaultdict(list)
  for site in sites:
    by_target[site.target].append(site)
  examples = "\n".join(f"{s.op_text} at {s.location}" for s in sites)
  targets = "\n".join(
      f"  - '{target}': {len(found)} call(s), first at {found[0].location}"
      for target, found in by_target.items())
  allow = ", ".join(f"DisabledSafetyCheck.custom_call({t!r})" for t in by_target)
  return CustomCallError(
      "Cannot serialize code with custom calls whose targets have no "
      f"compatibility guarantees. See {_DOCS_URL}. Examples are:\n{examples}.\n"
      + jax_messages.custom_call_disabled_note(allowed_unstable)
      + f"While exporting '{fun_name}', these targets are not in jaxport's table of "
      f"stable targets (the stable_targets.json shipped with jaxport):\n{targets}\n"
      "A module calling them may stop working when jaxlib changes. To export "
      f"anyway, pass disabled_checks=[{allow}] to jaxport.export "
      "(DisabledSafetyCheck.custom_call('ALL') allows every target).")


def list_custom_calls(module_or_serialized: Any) -> list[_walk.CustomCallSite]:
  """Every custom call in a module, given as an MLIR module or portable-artifact bytes.

  Each site carries the target, location, operand and result types and
  attributes, for recording the signatures a module depends on.
  """
  if isinstance(module_or_serialized, (bytes, bytearray)):
    with _mlir.scratch_context():
      return _walk.custom_call_sites(_mlir.module_from_bytes(bytes(module_or_serialized)))
  return _walk.custom_call_sites(module_or_serialized)


def normalize_disabled_checks(disabled_checks: Any) -> tuple[DisabledSafetyCheck, ...]:
  """Accept jaxport's or jax's DisabledSafetyCheck objects; refuse anything else."""
  out = []
  for i, dc in enumerate(disabled_checks):
    if isinstance(dc, DisabledSafetyCheck):
      out.append(dc)
      continue
    impl = str(dc) if hasattr(dc, "is_custom_call") else None
    if impl is None or not (impl == "platform" or impl.startswith("custom_call:")):
      raise ExportError(
          f"disabled_checks[{i}] must be a DisabledSafetyCheck but is {dc!r} of type "
          f"{type(dc).__name__}. Build one with DisabledSafetyCheck.custom_call('target') "
          "or DisabledSafetyCheck.platform().")
    out.append(DisabledSafetyCheck(impl))
  return tuple(out)
