"""export(): trace, lower, check and wrap a jitted function into an Exported.

Owns the jax internals of tracing and lowering for export
(``jax._src.stages``, ``jax._src.interpreters.mlir``/``pxla``,
``jax._src.xla_bridge``). The other steps live next door: ``_checks`` (what
may be exported), ``_wrap`` (the public ``main``), ``_shardings`` (sharding
records), ``_vjp`` (the lazily exported VJP), ``_mlir`` (module bytes).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from jax import tree_util
from jaxport._jaxcompat._compilation import xla_bridge
from jaxport._jaxcompat._lowering import ir, pxla, stages
from jaxport._jaxcompat._lowering import mlir as jax_mlir
from jaxport._jaxcompat._tracing import core, source_info_util

from jaxport import _config
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import ExportError, ShapeError
from jaxport.export import _checks, _for_jax, _for_tf, _mlir, _shardings, _vjp, _wrap
from jaxport.export._disabled_checks import DisabledSafetyCheck
from jaxport.export._exported import Exported
from jaxport.shapes import _api as shapes_api
from jaxport.shapes import _bridge

logger = logging.getLogger(__name__)

# Source locations in exported modules should point at the user's code, not at
# jaxport's frames (nor leak where jaxport is installed), as jax does for itself.
source_info_util.register_exclusion(os.path.dirname(os.path.dirname(__file__)) + os.sep)


def default_export_platform() -> str:
  """The platform exports target when none is given: the default backend's, canonical.

  One of ``cpu``, ``cuda``, ``rocm``, ``tpu`` (``gpu`` resolves to the vendor).
  """
  return xla_bridge.canonicalize_platform(xla_bridge.default_backend())


def export(fun_jit: Any, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = (),
           _override_lowering_rules: Sequence[tuple[Any, Any]] | None = None,
           for_jax: str | None = None, for_tf: str | None = None) -> Callable[..., Exported]:
  """Prepare to export ``fun_jit`` (a ``jax.jit`` result) for the given platforms.

  Returns ``do_export(*args_specs, **kwargs_specs)``, which takes pytrees of
  ``jax.ShapeDtypeStruct`` (or anything with ``.shape`` and ``.dtype``) and
  returns the :class:`Exported`. More than one platform adds a platform-index
  argument to the module. ``disabled_checks`` may allow custom-call targets
  without a stability guarantee.

  ``_override_lowering_rules`` is ``jax.export.export``'s private parameter with
  the same meaning: pairs ``(primitive, lowering_rule)`` used instead of the
  registered lowerings while lowering this function (jax2tf-style callers use
  it). The stability of what such rules emit is the caller's responsibility.

  ``for_jax`` names an older (or newer) consumer release, such as ``"0.9.2"``:
  the artifact is written for what that release reads (its StableHLO version,
  calling convention and envelope layout, from the release table), and what it
  cannot run is refused with an ``ExportError`` naming the release and the
  feature (see ``docs/export.md``). None (the default) writes for the installed jax.

  ``for_tf`` names a TensorFlow release instead, such as ``"2.21"``, whose ``XlaCallModule``
  serves the artifact (jax2tf, TF Serving): the module is written for the StableHLO version
  and calling convention that release reads (from jaxport's TensorFlow table), and a custom
  call it has no handler for (jaxlib's LAPACK kernels among them) or an operation newer than
  its StableHLO is refused naming the release. It cannot be given with ``for_jax``.
  """
  if not isinstance(fun_jit, stages.Wrapped):
    raise ExportError(
        f"Function to be exported must be the result of `jit` but is: {fun_jit}. "
        "Wrap it first: jaxport.export(jax.jit(f)).")
  checks = _checks.normalize_disabled_checks(disabled_checks)
  if platforms is not None:
    if isinstance(platforms, str):
      raise ExportError(
          f"platforms must be a sequence of platform names, got the string {platforms!r}; "
          f"write platforms=({platforms!r},).")
    platforms = tuple(platforms)
    if not platforms:
      raise ExportError("platforms must name at least one platform, got ().")

  override_rules = None if _override_lowering_rules is None else tuple(_override_lowering_rules)
  consumer = _consumer(for_jax, for_tf)

  def do_export(*args_specs, **kwargs_specs) -> Exported:
    lowering_platforms = platforms or (default_export_platform(),)
    version = (_config.calling_convention_version() if consumer is None
               else consumer.calling_convention_version)
    _check_one_symbolic_scope(fun_jit, args_specs, kwargs_specs)
    traced = fun_jit.trace(*args_specs, **kwargs_specs)
    lowered = traced.lower(
        lowering_platforms=lowering_platforms,
        _private_parameters=jax_mlir.LoweringParameters(
            override_lowering_rules=override_rules,
            for_export=True, hoist_constants_as_args=False,
            export_ignore_forward_compatibility=_config.ignore_forward_compatibility()))
    return _export_lowered(lowered, traced.jaxpr, traced.fun_name,
                           disabled_checks=checks, version=version, consumer=consumer)

  return do_export


def _consumer(for_jax: str | None, for_tf: str | None) -> _for_jax.ConsumerTarget | None:
  """The consumer release the export is written for (None: the installed jax)."""
  if for_jax is not None and for_tf is not None:
    raise ExportError(f"for_jax={for_jax!r} and for_tf={for_tf!r} name two consumers; an "
                      "artifact is written for one: export once for each.")
  if for_tf is not None:
    return _for_tf.consumer_target(for_tf)
  return None if for_jax is None else _for_jax.consumer_target(for_jax)


def _check_one_symbolic_scope(fun_jit, args_specs, kwargs_specs) -> None:
  """Refuse symbolic dimensions from different scopes before tracing turns it into a cryptic error."""
  first = None  # (scope, where, dim, index)
  leaves = tree_util.tree_flatten_with_path((args_specs, kwargs_specs))[0]
  for path, spec in leaves:
    for i, d in enumerate(getattr(spec, "shape", ()) or ()):
      if not shapes_api.is_symbolic_dim(d):
        if not core.is_constant_dim(d):
          where = f"{_bridge.args_kwargs_path_to_str(path)}.shape[{i}]"
          raise ShapeError(
              f"Dimension '{d}' in {where} is a {type(d).__module__}.{type(d).__name__}, "
              "neither an int nor a jaxport symbolic dimension (symbolic dimensions of "
              "jax.export.symbolic_shape are not interchangeable with jaxport's). Build "
              f"the shape with jaxport.symbolic_shape({str(d)!r}) or "
              "jaxport.symbolic_args_specs.")
        continue
      scope = d.scope
      if first is None:
        first = (scope, _bridge.args_kwargs_path_to_str(path), d, i)
      elif scope is not first[0]:
        name = getattr(fun_jit, "__name__", str(fun_jit))
        where = _bridge.args_kwargs_path_to_str(path)
        try:
          first[0]._check_same_scope(d, when=f"when exporting {name}",
                                     self_descr=f"current (from {first[1]}) ", other_descr=where)
        except ShapeError as e:
          raise ShapeError(
              f"{e}\n'{first[2]}' in {first[1]}.shape[{first[3]}] and '{d}' in {where}.shape[{i}] "
              "come from different jaxport.symbolic_shape calls. Create all symbolic shapes of "
              "one export in one scope: pass scope= to jaxport.symbolic_shape, or use "
              "jaxport.symbolic_args_specs.") from None


def _export_lowered(lowered, jaxpr, fun_name: str, *,
                    disabled_checks: tuple[DisabledSafetyCheck, ...], version: int,
                    consumer: _for_jax.ConsumerTarget | None = None) -> Exported:
  lowering = lowered._lowering
  if not isinstance(lowering, pxla.MeshComputation):
    raise ExportError(f"Export supports only jit-lowered functions, got {type(lowering).__name__} "
                      f"for '{fun_name}'.")
  compile_args = lowering.compile_args
  _checks.check_compile_args(compile_args, fun_name)

  in_avals = tuple(tree_util.tree_leaves(lowered.in_avals))
  if "kept_var_idx" in compile_args:
    module_kept_var_idx = tuple(sorted(compile_args["kept_var_idx"]))
  else:
    module_kept_var_idx = tuple(range(len(in_avals)))
  shape_poly_state = compile_args["shape_poly_state"]
  ordered_effects = tuple(compile_args["ordered_effects"])
  unordered_effects = tuple(compile_args["unordered_effects"])

  # The lowering's module is only annotated in place (an idempotent module
  # attribute); wrapping rewrites functions, so it works on a private copy.
  module = lowering.stablehlo()
  if _wrap.needs_wrapping(in_avals, bool(ordered_effects)):
    module = _wrap.wrap_main(
        _mlir.copy_module(module), in_avals, in_tree=lowered.in_tree,
        has_platform_index_argument=shape_poly_state.has_platform_index_argument,
        module_kept_var_idx=module_kept_var_idx,
        ignore_forward_compatibility=_config.ignore_forward_compatibility())
  with module.context:
    module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(
        shape_poly_state.uses_dim_vars)

  _checks.check_custom_calls(module, disabled_checks, fun_name)
  if consumer is None:
    serialized = _mlir.module_to_portable_artifact(module)
  else:
    sites = _checks.list_custom_calls(module)
    if consumer.consumer == _for_jax.TF:
      _for_tf.check_custom_calls(sites, consumer, disabled_checks, fun_name)
    else:
      _for_jax.check_custom_calls(sites, consumer, tuple(lowering._platforms), disabled_checks,
                                  fun_name)
    serialized = _for_jax.serialize_module(module, consumer, fun_name)
  if logger.isEnabledFor(logging.DEBUG):
    logger.debug("Exported %s: version=%d platforms=%s disabled_checks=%s, %d bytes",
                 fun_name, version, lowering._platforms, disabled_checks, len(serialized))

  out_avals = tuple(compile_args["global_out_avals"])
  in_named, out_named, mesh = _shardings.record_shardings(
      compile_args, module_kept_var_idx, in_avals, out_avals,
      use_shardy=_config.use_shardy_partitioner())

  export_fn = (export if consumer is None
               else functools.partial(export, **{consumer.option: consumer.release}))
  record = Exported(
      fun_name=fun_name,
      in_tree=lowered.in_tree,
      in_avals=in_avals,
      out_tree=lowered.out_tree,
      out_avals=out_avals,
      _in_named_shardings=in_named,
      _out_named_shardings=out_named,
      in_shardings_hlo=jax_mesh.export_hlo_shardings(in_named, in_avals),
      out_shardings_hlo=jax_mesh.export_hlo_shardings(out_named, out_avals),
      nr_devices=compile_args["num_devices"],
      platforms=tuple(lowering._platforms),
      ordered_effects=ordered_effects,
      unordered_effects=unordered_effects,
      disabled_safety_checks=disabled_checks,
      mlir_module_serialized=serialized,
      calling_convention_version=version,
      module_kept_var_idx=module_kept_var_idx,
      uses_global_constants=shape_poly_state.uses_dim_vars,
      _get_vjp=_vjp.vjp_getter(jaxpr, export_fn=export_fn, mesh=mesh),
  )
  if consumer is None:
    return record
  _for_jax.check_record(record, consumer)
  return _for_jax.attach(record, consumer)
