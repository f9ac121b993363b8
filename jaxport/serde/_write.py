"""Writing an Exported as flatbuffer bytes, in the layout the installed jax writes.

The record is duck-typed (this module must not import the record module), so a
``jax.export.Exported`` serializes the same way. Objects are built in the same
order as jax builds them, which makes the bytes identical to jax's for the
same record when the jaxport extras are off (see ``serialize``). The header's
version number and whether ``jax_version`` (field 26) is always written follow
the installed jax (``_jaxcompat._envelope``: 3 and only on request up to jax
0.11.0; 12 and always from 0.11.1). On top of jax's layout jaxport may write
``jax_version`` where jax does not, and ``symbolic_constraints`` (field 40, the
explicit constraints of the symbolic scope, which jax drops).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any


from jaxport._jaxcompat._version import installed_jax_version
from jaxport import _limits
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import SerializationError, SerializationTypeError, UnregisteredNodeError
from jaxport.serde import _builder, _pytrees, _wire
from jaxport.serde import _schema_generated as fb


class _Uniques:
  """Each distinct aval, abstract mesh and named sharding once, in first-seen order."""

  __slots__ = ("avals", "meshes", "shardings")

  def __init__(self, exp: Any):
    self.avals: dict[Any, int] = {}
    self.meshes: dict[Any, int] = {}
    self.shardings: dict[Any, int] = {}
    for aval in itertools.chain(exp.in_avals, exp.out_avals):
      self.avals.setdefault(aval, len(self.avals))
    for s in itertools.chain(exp._in_named_shardings, exp._out_named_shardings):
      if s is None:
        continue
      amesh = s.mesh.abstract_mesh
      if amesh is not None:
        self.meshes.setdefault(amesh, len(self.meshes))
      self.shardings.setdefault(s, len(self.shardings))


def serialize(exported: Any, *, vjp_order: int = 0, jaxport_fields: bool = True,
              header_version: int | None = None) -> bytearray:
  """The bytes of ``exported`` with VJPs nested ``vjp_order`` deep.

  With ``jaxport_fields`` the producing jax version (field 26) is recorded
  whatever the installed jax does, the explicit symbolic-shape constraints
  (field 40, only when there are some) too, and each distinct string is
  written once, which more than pays for the version field. Without, the bytes
  are exactly those the installed ``jax.export`` writes for the same record.

  ``header_version`` writes the layout of another release instead of the
  installed jax's: 3 (the unique tables and legacy vectors, header 3, as jax
  0.10.0 to 0.11.0 write) or 12 (as jax 0.11.1 and newer write, ``jax_version``
  always); None is the installed jax's. An older consumer needs it
  (``export(..., for_jax=...)``).
  """
  header = jax_envelope.header_version() if header_version is None else header_version
  if header not in (jax_envelope.LEGACY_HEADER_VERSION, jax_envelope.REAL_HEADER_VERSION):
    raise SerializationError(
        f"header_version must be {jax_envelope.LEGACY_HEADER_VERSION} or "
        f"{jax_envelope.REAL_HEADER_VERSION} (the two layouts jaxport writes), got {header_version!r}.")
  jax_version = jaxport_fields or header == jax_envelope.REAL_HEADER_VERSION
  symbolic_constraints = share_strings = jaxport_fields
  if not isinstance(vjp_order, int) or vjp_order < 0:
    raise SerializationError(
        f"vjp_order must be a non-negative int, got {vjp_order!r}.")
  builder = _builder.Builder(65536, share_strings=share_strings)
  with _limits.recursion_room(_limits.MAX_TABLE_DEPTH):
    root = _exported(builder, exported, vjp_order, jax_version, symbolic_constraints, 0, header)
  builder.Finish(root)
  return builder.Output()


def _check_record(exp: Any) -> None:
  """Refuse a record that deserialize would refuse, before writing a blob nobody can read.

  Fresh exports always pass; a record edited with ``dataclasses.replace`` may not.
  """
  name = exp.fun_name
  problems = []
  if not isinstance(name, str):
    problems.append(f"fun_name must be a str, got {type(name).__name__} {name!r}")
  for side, tree, avals, shardings in (
      ("in", exp.in_tree, exp.in_avals, exp._in_named_shardings),
      ("out", exp.out_tree, exp.out_avals, exp._out_named_shardings)):
    if tree.num_leaves != len(avals):
      problems.append(f"{side}_tree has {tree.num_leaves} leaves but {side}_avals has "
                      f"{len(avals)} entries")
    if len(shardings) != len(avals):
      problems.append(f"_{side}_named_shardings has {len(shardings)} entries for "
                      f"{len(avals)} {side}_avals")
  platforms = exp.platforms
  if (isinstance(platforms, str) or not platforms
      or not all(isinstance(p, str) for p in platforms)):
    problems.append(f"platforms must be a non-empty tuple of platform names such as "
                    f"('cpu',), got {platforms!r}")
  kept = tuple(exp.module_kept_var_idx)
  if (not all(isinstance(i, int) for i in kept) or list(kept) != sorted(set(kept))
      or (kept and not 0 <= kept[0] <= kept[-1] < len(exp.in_avals))):
    problems.append(f"module_kept_var_idx {kept} is not a sorted set of indices below "
                    f"{len(exp.in_avals)} (the number of in_avals)")
  for field, wire in (("calling_convention_version", "uint16"), ("nr_devices", "uint32")):
    value = getattr(exp, field)
    top = 2**16 - 1 if wire == "uint16" else 2**32 - 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
      problems.append(f"{field} must be a positive int, got {value!r}")
    elif value > top:
      problems.append(f"{field} is {value if value < 10**20 else 'a huge number'}, past "
                      f"{top}, the largest the blob's {wire} field holds")
  bad_checks = [c for c in exp.disabled_safety_checks if not hasattr(c, "is_custom_call")]
  if bad_checks:
    problems.append(f"disabled_safety_checks must hold DisabledSafetyCheck objects, got "
                    f"{bad_checks[0]!r} of type {type(bad_checks[0]).__name__}")
  if problems:
    raise SerializationError(
        f"Cannot serialize the Exported '{name}': " + "; ".join(problems) + ". The blob "
        "would not deserialize. Serialize the record that export() or deserialize() "
        "returned, or fix these fields (dataclasses.replace) so they agree.")


def _exported(b: _builder.Builder, exp: Any, vjp_order: int, jax_version: bool,
              constraints: bool, depth: int, header: int) -> int:
  """The Exported table for ``exp``, nested ``depth`` tables below the root."""
  if not jax_envelope.has_named_shardings(exp):
    raise SerializationError(
        f"Cannot serialize the Exported '{exp.fun_name}': it carries HloShardings "
        "only, a form older readers produced. "
        "Re-export the function to get named shardings.")
  _check_record(exp)
  uniques = _Uniques(exp)
  fun_name = b.CreateString(exp.fun_name)
  in_tree = _pytreedef(b, exp.in_tree, depth + 1, "arguments")
  in_avals = _vector_of(b, _aval, exp.in_avals)
  out_tree = _pytreedef(b, exp.out_tree, depth + 1, "results")
  out_avals = _vector_of(b, _aval, exp.out_avals)
  in_shardings = _vector_of(b, lambda b, s: _legacy_sharding(b, s, uniques),
                            exp._in_named_shardings)
  out_shardings = _vector_of(b, lambda b, s: _legacy_sharding(b, s, uniques),
                             exp._out_named_shardings)
  ordered_effects = _vector_of(b, _effect, exp.ordered_effects)
  unordered_effects = _vector_of(b, _effect, exp.unordered_effects)
  disabled_checks = _vector_of(b, _disabled_check, exp.disabled_safety_checks)
  platforms = _vector_of(b, lambda b, p: b.CreateString(p), exp.platforms)
  mlir_module = b.CreateByteVector(exp.mlir_module_serialized)
  kept_var_idx = b.CreateScalarVector("H", exp.module_kept_var_idx)

  vjp = None
  if vjp_order > 0:
    if not exp.has_vjp():
      raise SerializationError(
          "serialization of an Exported that does not have vjps of high-enough "
          f"order: '{exp.fun_name}' has no VJP but {vjp_order} more order(s) were "
          "requested. Lower vjp_order, or serialize a fresh export (which can "
          "build VJPs of any order).")
    vjp = _exported(b, exp.vjp(), vjp_order - 1, jax_version, constraints, depth + 1, header)

  unique_avals = _vector_of(b, _aval, uniques.avals)
  unique_meshes = _vector_of(b, _abstract_mesh, uniques.meshes)
  unique_shardings = _vector_of(b, lambda b, s: _named_sharding(b, s, uniques),
                                uniques.shardings)
  in_avals_idxs = _u32_vector(b, [uniques.avals[a] for a in exp.in_avals])
  out_avals_idxs = _u32_vector(b, [uniques.avals[a] for a in exp.out_avals])
  in_shardings_idxs = _u32_vector(
      b, [0 if s is None else 1 + uniques.shardings[s] for s in exp._in_named_shardings])
  out_shardings_idxs = _u32_vector(
      b, [0 if s is None else 1 + uniques.shardings[s] for s in exp._out_named_shardings])
  version = b.CreateString(installed_jax_version()) if jax_version else None
  constraint_strs = _constraints_of(exp) if constraints else ()
  constraints_off = (_vector_of(b, lambda b, c: b.CreateString(c), constraint_strs)
                     if constraint_strs else None)

  fb.ExportedStart(b)
  fb.ExportedAddSerializationVersion(b, header)
  fb.ExportedAddFunctionName(b, fun_name)
  fb.ExportedAddInTree(b, in_tree)
  fb.ExportedAddInAvals(b, in_avals)
  fb.ExportedAddOutTree(b, out_tree)
  fb.ExportedAddOutAvals(b, out_avals)
  fb.ExportedAddNrDevices(b, exp.nr_devices)
  fb.ExportedAddInShardings(b, in_shardings)
  fb.ExportedAddOutShardings(b, out_shardings)
  fb.ExportedAddPlatforms(b, platforms)
  fb.ExportedAddOrderedEffects(b, ordered_effects)
  fb.ExportedAddUnorderedEffects(b, unordered_effects)
  fb.ExportedAddDisabledChecks(b, disabled_checks)
  fb.ExportedAddMlirModuleSerialized(b, mlir_module)
  fb.ExportedAddCallingConventionVersion(b, exp.calling_convention_version)
  fb.ExportedAddModuleKeptVarIdx(b, kept_var_idx)
  fb.ExportedAddUsesGlobalConstants(b, exp.uses_global_constants)
  if vjp is not None:
    fb.ExportedAddVjp(b, vjp)
  fb.ExportedAddUniqueAvals(b, unique_avals)
  fb.ExportedAddUniqueAbstractMeshes(b, unique_meshes)
  fb.ExportedAddUniqueNamedShardings(b, unique_shardings)
  fb.ExportedAddInAvalsIdxs(b, in_avals_idxs)
  fb.ExportedAddOutAvalsIdxs(b, out_avals_idxs)
  fb.ExportedAddInShardingsIdxs(b, in_shardings_idxs)
  fb.ExportedAddOutShardingsIdxs(b, out_shardings_idxs)
  if version is not None:
    fb.ExportedAddJaxVersion(b, version)
  if constraints_off is not None:
    fb.ExportedAddSymbolicConstraints(b, constraints_off)
  return fb.ExportedEnd(b)


def _vector_of(b: _builder.Builder, write_one: Callable[[_builder.Builder, Any], int],
               elements: Iterable[Any]) -> int:
  offsets = [write_one(b, e) for e in elements]
  b.StartVector(4, len(offsets), 4)
  for off in reversed(offsets):
    b.PrependUOffsetTRelative(off)
  return b.EndVector()


def _u32_vector(b: _builder.Builder, values: Sequence[int]) -> int:
  return b.CreateScalarVector("I", values)


def _constraints_of(exp: Any) -> tuple[str, ...]:
  """The explicit constraints of the symbolic scope shared by the avals, as written by the user."""
  for aval in itertools.chain(exp.in_avals, exp.out_avals):
    for d in getattr(aval, "shape", ()):
      scope = getattr(d, "scope", None)
      if scope is None:
        continue
      given = getattr(scope, "constraints", None)  # jaxport's scope: the strings given
      if not isinstance(given, tuple):  # jax's scope keeps parsed constraint objects
        given = [c.debug_str for c in getattr(scope, "_explicit_constraints", ())]
      return tuple(dict.fromkeys(str(c) for c in given))
  return ()


def _pytreedef(b: _builder.Builder, p: Any, depth: int, part: str) -> int:
  """The PyTreeDef table of ``p``, ``depth`` tables below the root; readers (jaxport's
  and jax's) bound that depth, so a deeper tree is refused here rather than written.
  ``part``: the Exported's "arguments" or "results", which ``p`` is part of."""
  if depth > _limits.MAX_TABLE_DEPTH:
    raise SerializationError(
        f"Cannot serialize a pytree nested deeper than the limit "
        f"{_limits.name('MAX_TABLE_DEPTH')} tables (each pytree level is one table); "
        "jax itself reads pytrees only about 490 levels deep. Flatten the arguments or "
        "results into a shallower structure.")
  node_data = p.node_data()
  children = p.children()
  children_off = (_vector_of(b, lambda b, c: _pytreedef(b, c, depth + 1, part), children)
                  if children else None)
  names_off = custom_name = custom_auxdata = None
  node_type = node_data[0] if node_data is not None else None
  if node_data is None:
    kind = fb.PyTreeDefKind.leaf
  elif node_type is type(None):
    kind = fb.PyTreeDefKind.none
  elif node_type is tuple:
    kind = fb.PyTreeDefKind.tuple
  elif node_type is list:
    kind = fb.PyTreeDefKind.list
  elif node_type is dict:
    kind = fb.PyTreeDefKind.dict
    names_off = _vector_of(b, _dict_key, node_data[1])
  else:
    reg = _pytrees.registration_for_type(node_type)
    if reg is None:
      raise _unregistered(node_type, part)
    kind = fb.PyTreeDefKind.custom
    custom_name = b.CreateString(reg.name)
    aux = reg.serialize_auxdata(node_data[1])
    if not isinstance(aux, (bytes, bytearray)):
      raise SerializationTypeError(
          f"The serialize_auxdata registered for `{node_type}` (as `{reg.name}`) "
          f"must return bytes, but it returned a {type(aux)}.")
    custom_auxdata = b.CreateByteVector(aux)
  fb.PyTreeDefStart(b)
  fb.PyTreeDefAddKind(b, kind)
  if children_off:
    fb.PyTreeDefAddChildren(b, children_off)
  if names_off:
    fb.PyTreeDefAddChildrenNames(b, names_off)
  if custom_name is not None:
    fb.PyTreeDefAddCustomName(b, custom_name)
  if custom_auxdata is not None:
    fb.PyTreeDefAddCustomAuxdata(b, custom_auxdata)
  return fb.PyTreeDefEnd(b)


def _unregistered(node_type: type, part: str) -> UnregisteredNodeError:
  """jax's refusal of ``node_type`` (jax.export refuses to write it too), then where it is
  and the fix."""
  fix = _pytrees.unregistered_fix(node_type)
  return UnregisteredNodeError(
      "Cannot serialize PyTreeDef containing an "
      f"unregistered type `{node_type}`. "
      "Use `export.register_pytree_node_serialization` or "
      "`export.register_namedtuple_serialization`.\n"
      f"The {part} hold it, and jax's deserialize reads a blob holding it only where the type "
      f"is registered. {fix}.", node_type=node_type, part=part, fix=fix)


def _dict_key(b: _builder.Builder, k: Any) -> int:
  if not isinstance(k, str):
    raise SerializationTypeError(
        "Serialization is supported only for dictionaries with string keys. "
        f"Found key {k} of type {type(k)}. Convert the keys to strings before exporting.")
  return b.CreateString(k)


def _aval(b: _builder.Builder, aval: Any) -> int:
  dims = [b.CreateString(str(d)) for d in aval.shape]
  b.StartVector(4, len(dims), 4)
  for d in reversed(dims):
    b.PrependUOffsetTRelative(d)
  shape = b.EndVector()
  dtype = _wire.DTYPE_TO_WIRE.get(aval.dtype)
  if dtype is None:
    raise SerializationError(
        f"Cannot serialize an array of dtype {aval.dtype}: the wire format has no "
        f"number for it. Supported: {sorted(map(str, _wire.DTYPE_TO_WIRE))}.")
  fb.AbstractValueStart(b)
  fb.AbstractValueAddKind(b, fb.AbstractValueKind.shapedArray)
  fb.AbstractValueAddShape(b, shape)
  fb.AbstractValueAddDtype(b, dtype)
  fb.AbstractValueAddMemorySpace(b, _wire.MEMORY_SPACE_TO_WIRE[aval.memory_space])
  return fb.AbstractValueEnd(b)


def _legacy_sharding(b: _builder.Builder, s: Any, uniques: _Uniques) -> int:
  named = None if s is None else _named_sharding(b, s, uniques)
  fb.ShardingStart(b)
  if named is not None:
    fb.ShardingAddNamedSharding(b, named)
  return fb.ShardingEnd(b)


def _named_sharding(b: _builder.Builder, s: Any, uniques: _Uniques) -> int:
  amesh = s.mesh.abstract_mesh
  mesh_idx = uniques.meshes[amesh]
  mesh_off = _abstract_mesh(b, amesh)
  spec_off = _partition_spec(b, s.spec)
  memory_kind = b.CreateString(s.memory_kind) if s.memory_kind is not None else None
  fb.NamedShardingStart(b)
  fb.NamedShardingAddMesh(b, mesh_off)
  fb.NamedShardingAddSpec(b, spec_off)
  if memory_kind is not None:
    fb.NamedShardingAddMemoryKind(b, memory_kind)
  fb.NamedShardingAddAbstractMeshIdx(b, mesh_idx)
  return fb.NamedShardingEnd(b)


def _abstract_mesh(b: _builder.Builder, amesh: Any) -> int:
  b.StartVector(4, len(amesh.axis_sizes), 4)
  for size in reversed(amesh.axis_sizes):
    b.PrependUint32(size)
  sizes = b.EndVector()
  names = _vector_of(b, lambda b, n: b.CreateString(n), amesh.axis_names)
  b.StartVector(1, len(amesh.axis_types), 1)
  for t in reversed(amesh.axis_types):
    b.PrependByte(_wire.AXIS_TYPE_TO_WIRE[t])
  types = b.EndVector()
  device = amesh.abstract_device
  device_off = _abstract_device(b, device) if device is not None else None
  fb.AbstractMeshStart(b)
  fb.AbstractMeshAddAxisSizes(b, sizes)
  fb.AbstractMeshAddAxisNames(b, names)
  fb.AbstractMeshAddAxisTypes(b, types)
  if device_off is not None:
    fb.AbstractMeshAddAbstractDevice(b, device_off)
  return fb.AbstractMeshEnd(b)


def _abstract_device(b: _builder.Builder, device: Any) -> int:
  kind = b.CreateString(device.device_kind)
  name = jax_mesh.device_platform(device)
  platform = None if name is None else b.CreateString(name)
  fb.AbstractDeviceStart(b)
  fb.AbstractDeviceAddDeviceKind(b, kind)
  if device.num_cores is not None:
    fb.AbstractDeviceAddNumCores(b, device.num_cores)
  if platform is not None:
    fb.AbstractDeviceAddPlatform(b, platform)
  return fb.AbstractDeviceEnd(b)


def _partition_spec(b: _builder.Builder, spec: Any) -> int:
  partitions = _vector_of(b, _partition_one_axis, jax_mesh.partition_spec_entries(spec))
  # Sorted, so that equal specs give equal bytes in every process (jax writes
  # the frozensets in iteration order, which varies with hash seeds).
  reduced = _vector_of(b, lambda b, n: b.CreateString(n), sorted(spec.reduced))
  unreduced = _vector_of(b, lambda b, n: b.CreateString(n), sorted(spec.unreduced))
  fb.PartitionSpecStart(b)
  fb.PartitionSpecAddPartitions(b, partitions)
  fb.PartitionSpecAddReduced(b, reduced)
  fb.PartitionSpecAddUnreduced(b, unreduced)
  return fb.PartitionSpecEnd(b)


def _partition_one_axis(b: _builder.Builder, axes: Any) -> int:
  if axes is None:
    axes = ()
  elif isinstance(axes, str):
    axes = (axes,)
  names = _vector_of(b, lambda b, n: b.CreateString(n), axes)
  fb.PartitionSpecOneAxisStart(b)
  fb.PartitionSpecOneAxisAddAxes(b, names)
  return fb.PartitionSpecOneAxisEnd(b)


def _effect(b: _builder.Builder, eff: Any) -> int:
  cls = type(eff)
  try:
    replica = cls()
  except Exception as e:
    raise SerializationError(
        f"Effect {eff} must have a nullary constructor to be serializable: "
        f"{cls.__name__}() raised {type(e).__name__}: {e}.") from None
  try:
    same = eff == replica and hash(eff) == hash(replica)
  except Exception as e:
    raise SerializationError(
        f"Effect {eff} must be hashable and comparable to be serializable: {e}.") from None
  if not same:
    raise SerializationError(
        f"Effect {eff} must have a nullary class constructor that produces an equal "
        f"effect object; {cls.__name__}() gives {replica}.")
  name = b.CreateString(str(cls))
  fb.EffectStart(b)
  fb.EffectAddTypeName(b, name)
  return fb.EffectEnd(b)


def _disabled_check(b: _builder.Builder, check: Any) -> int:
  target = check.is_custom_call()
  target_off = None
  if target is not None:
    kind = fb.DisabledSafetyCheckKind.custom_call
    target_off = b.CreateString(target)
  elif str(check) == "platform":
    kind = fb.DisabledSafetyCheckKind.platform
  else:
    raise SerializationError(
        f"Cannot serialize the disabled safety check {check}: only "
        "DisabledSafetyCheck.platform() and DisabledSafetyCheck.custom_call(t) "
        "have a wire form.")
  fb.DisabledSafetyCheckStart(b)
  fb.DisabledSafetyCheckAddKind(b, kind)
  if target_off is not None:
    fb.DisabledSafetyCheckAddCustomCallTarget(b, target_off)
  return fb.DisabledSafetyCheckEnd(b)
