"""Shardings of an Exported: recording them at export, rebuilding them on a mesh.

At export every sharding is stored as a ``NamedSharding`` over an *abstract*
mesh (device-free), or None where jit left it unspecified, one per flat aval.
``shardings_on_mesh`` turns those records back into shardings on a concrete
or abstract mesh with the same axes. This module depends only on the record's
attributes, never on the record module.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from jaxport._jaxcompat._shardings import mesh_lib, sharding_impls
from jaxport._jaxcompat._tracing import core

from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import ExportError, ExportTypeError
from jaxport.shapes import _bridge
from jaxport._jaxcompat import _envelope as jax_envelope

NamedSharding = sharding_impls.NamedSharding


def _replicated(aval, mesh, memory_kind) -> NamedSharding:
  return NamedSharding(mesh, sharding_impls.PartitionSpec(*([None] * aval.ndim)),
                       memory_kind=memory_kind)


def _to_abstract_named(s, aval, mesh) -> NamedSharding | None:
  """One lowering sharding as a NamedSharding over an abstract mesh (None: unspecified)."""
  if isinstance(s, sharding_impls.UnspecifiedValue):
    return None
  if isinstance(s, NamedSharding):
    if isinstance(s.mesh, mesh_lib.Mesh) and jax_mesh.is_scalar_mesh(s.mesh):
      return _replicated(aval, s.mesh.abstract_mesh, s.memory_kind)
    return NamedSharding(s.mesh.abstract_mesh, s.spec, memory_kind=s.memory_kind)
  if isinstance(s, sharding_impls.SingleDeviceSharding):
    return _replicated(aval, mesh_lib.empty_abstract_mesh, s.memory_kind)
  if isinstance(s, sharding_impls.GSPMDSharding):
    if mesh is not None:
      return sharding_impls._gspmd_to_named_sharding_via_mesh(s, mesh)
    hlo = s._hlo_sharding
    if not hlo.tuple_elements():
      if hlo.is_replicated():
        return _replicated(aval, mesh_lib.empty_abstract_mesh, s.memory_kind)
      if hlo.is_tiled() and hlo.is_tile_assignment_iota():
        sizes = tuple(hlo.get_axis_sizes())
        synthetic = mesh_lib.AbstractMesh(sizes, tuple(f"_axis_{i}" for i in range(len(sizes))))
        return sharding_impls._gspmd_to_named_sharding_via_mesh(s, synthetic)
    raise ExportError(
        f"Cannot convert GSPMDSharding {s} into NamedSharding: only replicated "
        "and iota-tiled HLO shardings have an equivalent over a mesh. Give jit "
        "NamedShardings (in_shardings/out_shardings) instead.")
  raise ExportError(
      f"Cannot export sharding {s!r} of type {type(s).__name__} for an argument "
      f"of type {aval}; use NamedSharding or SingleDeviceSharding.")


def record_shardings(compile_args, module_kept_var_idx: Sequence[int],
                     in_avals: Sequence[Any], out_avals: Sequence[Any],
                     use_shardy: bool) -> tuple[tuple[Any, ...], tuple[Any, ...], Any]:
  """The (in, out) NamedSharding records and the export's abstract mesh (or None).

  jit reports input shardings only for the arguments it kept; dropped ones are
  recorded as unspecified.
  """
  kept_in = compile_args["in_shardings"]
  all_in: list[Any] = [sharding_impls.UNSPECIFIED] * len(in_avals)
  for idx, s in zip(sorted(module_kept_var_idx), kept_in):
    all_in[idx] = s
  out = compile_args["out_shardings"]
  mesh = None
  if use_shardy:
    mesh = next((s.mesh for s in itertools.chain(all_in, out) if isinstance(s, NamedSharding)), None)
    if isinstance(mesh, mesh_lib.Mesh):
      mesh = mesh.abstract_mesh
  in_named = tuple(_to_abstract_named(s, a, mesh) for s, a in zip(all_in, in_avals))
  out_named = tuple(_to_abstract_named(s, a, mesh) for s, a in zip(out, out_avals))
  return in_named, out_named, mesh


def named_sharding_on_mesh(named: NamedSharding | None, mesh, *, where: str = "") -> NamedSharding | None:
  """``named`` moved onto ``mesh`` (None keeps it as recorded); the axes must match."""
  if named is None or mesh is None:
    return named
  new = mesh.abstract_mesh
  old = named.mesh
  if (new.axis_sizes != old.axis_sizes or new.axis_names != old.axis_names
      or new.axis_types != old.axis_types):
    # jax's message first, so code matching it keeps working.
    raise ExportError(
        f"NamedSharding new mesh {mesh} does not match the mesh used for export {old}. "
        f"{where}expected axis names {old.axis_names}, sizes {old.axis_sizes} and types "
        f"{old.axis_types}; got {new.axis_names}, {new.axis_sizes} and {new.axis_types}. "
        "Build the mesh with the same axes as at export time.")
  return named.update(mesh=mesh)


def shardings_on_mesh(exported, mesh, *, which: str) -> tuple[Any, ...]:
  """Concrete shardings of ``exported``'s inputs (``which="in"``) or outputs on ``mesh``."""
  if which not in ("in", "out"):
    raise ExportError(f"which must be 'in' or 'out', got {which!r}")
  if mesh is not None and not isinstance(mesh, (mesh_lib.Mesh, mesh_lib.AbstractMesh)):
    raise ExportTypeError(
        f"{which}_shardings_jax of '{exported.fun_name}' takes a jax.sharding.Mesh or "
        f"AbstractMesh with the export mesh's axis names and sizes, got {type(mesh).__name__} "
        f"{mesh!r}. Build one with jax.sharding.Mesh(devices, axis_names).")
  if not jax_envelope.has_named_shardings(exported):
    hlos = exported.in_shardings_hlo if which == "in" else exported.out_shardings_hlo
    avals = exported.in_avals if which == "in" else exported.out_avals
    return tuple(_from_hlo_sharding(h, a, mesh) for h, a in zip(hlos, avals))
  if which == "in":
    records = jax_envelope.in_named_shardings(exported)
    where = lambda i: _bridge.arg_descriptor(exported.in_tree, i)
  else:
    records = jax_envelope.out_named_shardings(exported)
    where = lambda i: f"result[{i}] (flat)"
  return tuple(named_sharding_on_mesh(s, mesh, where=f"For {where(i)}: ")
               for i, s in enumerate(records))


def _from_hlo_sharding(hlo_sharding, aval, mesh) -> NamedSharding | None:
  """A legacy HLO sharding record (serialization version < 6) as a NamedSharding on ``mesh``."""
  if hlo_sharding is None:
    return None
  memory_kind = None
  if getattr(aval, "memory_space", None) is not None:
    memory_kind = core.mem_space_to_kind(aval.memory_space)
  spec = sharding_impls.parse_flatten_op_sharding(hlo_sharding, mesh)[0]
  return sharding_impls.cached_named_sharding(mesh, spec, memory_kind=memory_kind)
