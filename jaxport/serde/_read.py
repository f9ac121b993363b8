"""Reading an Exported from flatbuffer bytes: every layout jax 0.10.2 reads.

Order of defence: ``_verify.verify`` checks the whole buffer's structure
before any accessor runs; then every value is checked as it is read (enum
numbers, indices, counts, names), and the module bytes must be a StableHLO
portable artifact before anything native parses them. Every failure is a
``DeserializationError`` naming the field path (``Exported.in_avals[2].dtype``).

Layouts: the deduplicated ``unique_*`` tables with index vectors when the
index vectors are non-empty, else the legacy per-value vectors (named
shardings, or HloSharding protos before 2026, read only); ``nr_devices``
falls back to ``nr_devices_short``. jaxport's own ``symbolic_constraints``
field rebuilds the symbolic scope with its explicit constraints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jax import tree_util
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec

from jaxport.errors import DeserializationError
from jaxport.export._disabled_checks import DisabledSafetyCheck
from jaxport.export._exported import Exported
from jaxport.serde import _pytrees, _verify, _wire
from jaxport.serde import _schema_generated as fb

STABLEHLO_MAGIC = b"ML\xefR"

_LEAF = tree_util.tree_structure(0)
_REGISTRY = tree_util.default_registry


def _bad(what: str, where: str, fix: str = "") -> DeserializationError:
  return DeserializationError(
      f"Not a valid serialized Exported: {what} at {where}."
      + (f" {fix}" if fix else " The bytes are corrupted or were not produced by serialize()."))


def deserialize(blob: bytes | bytearray | memoryview) -> Exported:
  """The Exported stored in ``blob`` (from ``serialize`` here or in ``jax.export``)."""
  if not isinstance(blob, (bytes, bytearray, memoryview)):
    raise DeserializationError(
        f"deserialize expects bytes or bytearray, got {type(blob).__name__}. "
        "Pass the value returned by Exported.serialize().")
  buf = bytes(blob)
  _verify.verify(buf)
  root = fb.Exported.GetRootAs(buf, 0)
  try:
    return _read_exported(root, "Exported")
  except DeserializationError:
    raise
  except RecursionError:
    raise _bad("nesting too deep to read", "Exported") from None


def read_jax_version(blob: bytes | bytearray | memoryview) -> str | None:
  """The jax version recorded by the producer (field 26), or None if absent."""
  buf = bytes(blob)
  _verify.verify(buf)
  v = fb.Exported.GetRootAs(buf, 0).JaxVersion()
  return None if v is None else v.decode("utf-8")


def _text(raw: bytes | None, where: str, *, required: bool = True) -> str | None:
  if raw is None:
    if required:
      raise _bad("missing string", where)
    return None
  return raw.decode("utf-8")


def _guard(where: str, what: str, fn: Callable[..., Any], *args, **kwargs) -> Any:
  """Runs a jax constructor, turning its complaint into a DeserializationError at ``where``."""
  try:
    return fn(*args, **kwargs)
  except DeserializationError:
    raise
  except Exception as e:
    raise _bad(f"{what} was refused ({type(e).__name__}: {e})", where) from e


class _Scope:
  """The symbolic scope of one record, built on first use."""

  __slots__ = ("constraints", "_scope")

  def __init__(self, constraints: tuple[str, ...]):
    self.constraints = constraints
    self._scope = None

  def get(self):
    if self._scope is None:
      from jaxport.shapes import _api
      self._scope = _api.SymbolicScope(self.constraints)
    return self._scope


def _read_exported(exp: fb.Exported, where: str) -> Exported:
  constraints = tuple(_text(exp.SymbolicConstraints(i), f"{where}.symbolic_constraints[{i}]")
                      for i in range(exp.SymbolicConstraintsLength()))
  scope = _Scope(constraints)
  if constraints:
    _guard(f"{where}.symbolic_constraints", "the symbolic scope", scope.get)

  unique_avals = [_read_aval(exp.UniqueAvals(i), scope, f"{where}.unique_avals[{i}]")
                  for i in range(exp.UniqueAvalsLength())]
  unique_meshes = [_read_abstract_mesh(exp.UniqueAbstractMeshes(i),
                                       f"{where}.unique_abstract_meshes[{i}]")
                   for i in range(exp.UniqueAbstractMeshesLength())]
  unique_shardings = [
      _read_named_sharding(exp.UniqueNamedShardings(i), unique_meshes,
                           f"{where}.unique_named_shardings[{i}]")
      for i in range(exp.UniqueNamedShardingsLength())]

  fun_name = _text(exp.FunctionName(), f"{where}.function_name")
  nr_devices = exp.NrDevices() or exp.NrDevicesShort()
  if nr_devices < 1:
    raise _bad(f"nr_devices is {nr_devices}, expected at least 1", f"{where}.nr_devices")

  in_shardings = _read_shardings(
      _as_list(exp.InShardingsIdxsAsNumpy()), exp.InShardingsLength(),
      exp.InShardings, unique_shardings, unique_meshes, f"{where}.in_shardings")
  out_shardings = _read_shardings(
      _as_list(exp.OutShardingsIdxsAsNumpy()), exp.OutShardingsLength(),
      exp.OutShardings, unique_shardings, unique_meshes, f"{where}.out_shardings")
  has_named = not any(_wire.is_hlo_sharding(s) for s in (*in_shardings, *out_shardings))

  if has_named:
    in_avals = _read_avals(_as_list(exp.InAvalsIdxsAsNumpy()), exp.InAvalsLength(),
                           exp.InAvals, unique_avals, in_shardings, scope, f"{where}.in_avals")
    out_avals = _read_avals(_as_list(exp.OutAvalsIdxsAsNumpy()), exp.OutAvalsLength(),
                            exp.OutAvals, unique_avals, out_shardings, scope,
                            f"{where}.out_avals")
    in_named, out_named = in_shardings, out_shardings
    in_hlo = tuple(_guard(f"{where}.in_shardings[{i}]", "the sharding",
                          _wire.named_to_hlo_sharding, s, a.ndim)
                   for i, (s, a) in enumerate(zip(in_shardings, in_avals)))
    out_hlo = tuple(_guard(f"{where}.out_shardings[{i}]", "the sharding",
                           _wire.named_to_hlo_sharding, s, a.ndim)
                    for i, (s, a) in enumerate(zip(out_shardings, out_avals)))
  else:
    in_avals = tuple(_read_aval(exp.InAvals(i), scope, f"{where}.in_avals[{i}]")
                     for i in range(exp.InAvalsLength()))
    out_avals = tuple(_read_aval(exp.OutAvals(i), scope, f"{where}.out_avals[{i}]")
                      for i in range(exp.OutAvalsLength()))
    _same_count(len(in_shardings), len(in_avals), f"{where}.in_shardings")
    _same_count(len(out_shardings), len(out_avals), f"{where}.out_shardings")
    in_hlo, out_hlo = in_shardings, out_shardings
    in_named, out_named = (None,) * len(in_avals), (None,) * len(out_avals)

  in_tree = _read_tree(exp.InTree(), len(in_avals), f"{where}.in_tree")
  out_tree = _read_tree(exp.OutTree(), len(out_avals), f"{where}.out_tree")

  platforms = tuple(_text(exp.Platforms(i), f"{where}.platforms[{i}]")
                    for i in range(exp.PlatformsLength()))
  if not platforms:
    raise _bad("no platforms", f"{where}.platforms")
  ordered_effects = tuple(_read_effect(exp.OrderedEffects(i), f"{where}.ordered_effects[{i}]")
                          for i in range(exp.OrderedEffectsLength()))
  unordered_effects = tuple(
      _read_effect(exp.UnorderedEffects(i), f"{where}.unordered_effects[{i}]")
      for i in range(exp.UnorderedEffectsLength()))
  disabled = tuple(_read_disabled_check(exp.DisabledChecks(i), f"{where}.disabled_checks[{i}]")
                   for i in range(exp.DisabledChecksLength()))

  module = exp.MlirModuleSerializedAsNumpy()
  module = b"" if isinstance(module, int) else module.tobytes()
  if module[:4] != STABLEHLO_MAGIC:
    raise _bad(f"module bytes start with {module[:4]!r}, not the StableHLO portable "
               f"artifact magic {STABLEHLO_MAGIC!r}", f"{where}.mlir_module_serialized")
  kept = exp.ModuleKeptVarIdxAsNumpy()
  kept = () if isinstance(kept, int) else tuple(kept.tolist())
  if any(b <= a for a, b in zip(kept, kept[1:])) or (kept and kept[-1] >= len(in_avals)):
    raise _bad(f"module_kept_var_idx {kept} is not a sorted set of indices below "
               f"{len(in_avals)} (the number of inputs)", f"{where}.module_kept_var_idx")

  vjp_table = exp.Vjp()
  get_vjp = None
  if vjp_table is not None:
    vjp = _read_exported(vjp_table, f"{where}.vjp")
    get_vjp = lambda _primal: vjp  # noqa: E731

  return Exported(
      fun_name=fun_name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
      out_avals=out_avals, _has_named_shardings=has_named,
      _in_named_shardings=in_named, _out_named_shardings=out_named,
      in_shardings_hlo=in_hlo, out_shardings_hlo=out_hlo, nr_devices=nr_devices,
      platforms=platforms, ordered_effects=ordered_effects,
      unordered_effects=unordered_effects, disabled_safety_checks=disabled,
      mlir_module_serialized=module,
      calling_convention_version=exp.CallingConventionVersion(),
      module_kept_var_idx=kept, uses_global_constants=exp.UsesGlobalConstants(),
      _get_vjp=get_vjp)


def _same_count(got: int, expected: int, where: str) -> None:
  if got and got != expected:
    raise _bad(f"{got} entries for {expected} values", where)


def _index(idx: int, table: Sequence[Any], where: str, name: str, base: int = 0) -> Any:
  if not 0 <= idx - base < len(table):
    raise _bad(f"index {idx} into {name} of {len(table)} entries"
               + (" (1-based, 0 = unspecified)" if base else ""), where)
  return table[idx - base]


def _as_list(numpy_or_zero: Any) -> list[int]:
  """A generated ``*AsNumpy()`` result as a list (the accessor returns 0 when absent)."""
  return [] if isinstance(numpy_or_zero, int) else numpy_or_zero.tolist()


def _read_shardings(idxs: list[int], n_legacy: int, legacy_at, unique_shardings,
                    unique_meshes, where: str) -> tuple[Any, ...]:
  if idxs:
    return tuple(None if k == 0 else
                 _index(k, unique_shardings, f"{where}_idxs[{i}]", "unique_named_shardings", 1)
                 for i, k in enumerate(idxs))
  return tuple(_read_legacy_sharding(legacy_at(i), unique_meshes, f"{where}[{i}]")
               for i in range(n_legacy))


def _read_avals(idxs: list[int], n_legacy: int, legacy_at, unique_avals, shardings,
                scope: _Scope, where: str) -> tuple[Any, ...]:
  if idxs:
    base = [_index(k, unique_avals, f"{where}_idxs[{i}]", "unique_avals")
            for i, k in enumerate(idxs)]
  else:
    base = [_read_aval(legacy_at(i), scope, f"{where}[{i}]") for i in range(n_legacy)]
  _same_count(len(shardings), len(base), where.replace("avals", "shardings"))
  if not shardings:
    return tuple(base)
  return tuple(a if s is None else
               _guard(f"{where}[{i}]", "the sharding for this value",
                      _wire.aval_with_sharding, a, s)
               for i, (a, s) in enumerate(zip(base, shardings)))


def _read_aval(aval: fb.AbstractValue, scope: _Scope, where: str) -> Any:
  kind = aval.Kind()
  if kind != fb.AbstractValueKind.shapedArray:
    raise _bad(f"abstract value kind {kind}, only shapedArray "
               f"({fb.AbstractValueKind.shapedArray}) is supported", f"{where}.kind")
  dtype = _wire.WIRE_TO_DTYPE.get(aval.Dtype())
  if dtype is None:
    raise _bad(f"unknown dtype number {aval.Dtype()} (known: 0..{max(_wire.WIRE_TO_DTYPE)})",
               f"{where}.dtype", "The blob may come from a newer jax; upgrade jaxport.")
  memory_space = _wire.WIRE_TO_MEMORY_SPACE.get(aval.MemorySpace())
  if memory_space is None:
    raise _bad(f"unknown memory space number {aval.MemorySpace()}", f"{where}.memory_space")
  dims = [aval.Shape(i).decode("utf-8") for i in range(aval.ShapeLength())]
  if all(d.isascii() and d.isdigit() for d in dims):
    shape = tuple(map(int, dims))
  else:
    shape = _read_symbolic_shape(dims, scope, f"{where}.shape")
  return _guard(where, "the array type", _wire.ShapedArray, shape, dtype,
                memory_space=memory_space)


def _read_symbolic_shape(dims: list[str], scope: _Scope, where: str) -> tuple[Any, ...]:
  from jaxport.shapes import _api
  spec = ",".join(dims)
  shape = _guard(where, f"the symbolic shape {spec!r}", lambda: _api.symbolic_shape(
      spec, scope=scope.get()))
  if len(shape) != len(dims):
    raise _bad(f"shape {spec!r} parsed to {len(shape)} dimensions, expected {len(dims)}", where)
  return tuple(shape)


def _read_abstract_device(dev: fb.AbstractDevice | None, where: str) -> Any:
  if dev is None:
    return None
  kind = _text(dev.DeviceKind(), f"{where}.device_kind")
  platform = _text(dev.Platform(), f"{where}.platform", required=False)
  if not platform:
    platform = _wire.platform_from_device_kind(kind)
    if platform is None:
      raise _bad(f"no platform and device kind {kind!r} does not name one", where)
  return _wire.AbstractDevice(kind, dev.NumCores(), platform)


def _read_abstract_mesh(m: fb.AbstractMesh, where: str) -> Any:
  sizes = tuple(m.AxisSizes(i) for i in range(m.AxisSizesLength()))
  names = tuple(_text(m.AxisNames(i), f"{where}.axis_names[{i}]")
                for i in range(m.AxisNamesLength()))
  types = []
  for i in range(m.AxisTypesLength()):
    t = _wire.WIRE_TO_AXIS_TYPE.get(m.AxisTypes(i))
    if t is None:
      raise _bad(f"unknown axis type number {m.AxisTypes(i)}", f"{where}.axis_types[{i}]")
    types.append(t)
  if not len(sizes) == len(names) == len(types):
    raise _bad(f"{len(sizes)} axis sizes, {len(names)} names and {len(types)} types "
               "(must be equal)", where)
  device = _read_abstract_device(m.AbstractDevice(), f"{where}.abstract_device")
  return _guard(where, "the abstract mesh", AbstractMesh, sizes, names, tuple(types),
                abstract_device=device)


def _read_partition_spec(spec: fb.PartitionSpec | None, where: str) -> Any:
  if spec is None:
    return PartitionSpec()
  parts = []
  for i in range(spec.PartitionsLength()):
    one = spec.Partitions(i)
    axes = tuple(_text(one.Axes(j), f"{where}.partitions[{i}][{j}]")
                 for j in range(one.AxesLength()))
    parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  reduced = frozenset(_text(spec.Reduced(i), f"{where}.reduced[{i}]")
                      for i in range(spec.ReducedLength()))
  unreduced = frozenset(_text(spec.Unreduced(i), f"{where}.unreduced[{i}]")
                        for i in range(spec.UnreducedLength()))
  return _guard(where, "the partition spec", PartitionSpec, *parts, reduced=reduced,
                unreduced=unreduced)


def _read_named_sharding(s: fb.NamedSharding, unique_meshes: Sequence[Any], where: str) -> Any:
  if unique_meshes:
    amesh = _index(s.AbstractMeshIdx(), unique_meshes, f"{where}.abstract_mesh_idx",
                   "unique_abstract_meshes")
  else:
    mesh = s.Mesh()
    if mesh is None:
      raise _bad("named sharding without a mesh", f"{where}.mesh")
    amesh = _read_abstract_mesh(mesh, f"{where}.mesh")
  spec = _read_partition_spec(s.Spec(), f"{where}.spec")
  memory_kind = _text(s.MemoryKind(), f"{where}.memory_kind", required=False)
  return _guard(where, "the named sharding", NamedSharding, amesh, spec,
                memory_kind=memory_kind)


def _read_legacy_sharding(s: fb.Sharding, unique_meshes: Sequence[Any], where: str) -> Any:
  named = s.NamedSharding()
  if named is not None:
    return _read_named_sharding(named, unique_meshes, f"{where}.named_sharding")
  if not s.HloShardingProtoIsNone():
    proto = s.HloShardingProtoAsNumpy().tobytes()
    return _guard(f"{where}.hlo_sharding_proto", "the HloSharding proto",
                  _wire.hlo_sharding_from_proto, proto)
  return None


def _read_effect(eff: fb.Effect, where: str) -> Any:
  name = _text(eff.TypeName(), f"{where}.type_name")
  cls = _wire.lowerable_effect_types().get(name)
  if cls is None:
    raise _bad(f"effect type {name!r} is not a lowerable effect known to this process",
               where, "Import the module defining the effect before deserializing.")
  return _guard(where, f"the effect {name} (needs a nullary constructor)", cls)


def _read_disabled_check(sc: fb.DisabledSafetyCheck, where: str) -> DisabledSafetyCheck:
  kind = sc.Kind()
  if kind == fb.DisabledSafetyCheckKind.custom_call:
    target = _text(sc.CustomCallTarget(), f"{where}.custom_call_target")
    if not target:
      raise _bad("empty custom-call target", f"{where}.custom_call_target")
    return DisabledSafetyCheck.custom_call(target)
  if kind == fb.DisabledSafetyCheckKind.platform:
    return DisabledSafetyCheck.platform()
  raise _bad(f"disabled safety check kind {kind} (known: platform "
             f"{fb.DisabledSafetyCheckKind.platform}, custom_call "
             f"{fb.DisabledSafetyCheckKind.custom_call})", f"{where}.kind")


def _read_tree(p: fb.PyTreeDef | None, n_leaves: int, where: str) -> Any:
  if p is None:
    raise _bad("missing pytree", where)
  tree = _read_node(p, where)
  if tree.num_leaves != n_leaves:
    raise _bad(f"pytree with {tree.num_leaves} leaves for {n_leaves} abstract values", where)
  return tree


def _read_node(p: fb.PyTreeDef, where: str) -> Any:
  kind = p.Kind()
  n = p.ChildrenLength()
  children = [_read_node(p.Children(i), f"{where}.children[{i}]") for i in range(n)]
  if kind == fb.PyTreeDefKind.leaf or kind == fb.PyTreeDefKind.none:
    if n:
      raise _bad(f"a {'leaf' if kind == fb.PyTreeDefKind.leaf else 'None'} node with "
                 f"{n} children", where)
    return _LEAF if kind == fb.PyTreeDefKind.leaf else tree_util.tree_structure(None)
  if kind == fb.PyTreeDefKind.tuple:
    return tree_util.PyTreeDef.from_node_data_and_children(_REGISTRY, (tuple, None), children)
  if kind == fb.PyTreeDefKind.list:
    return tree_util.PyTreeDef.from_node_data_and_children(_REGISTRY, (list, None), children)
  if kind == fb.PyTreeDefKind.dict:
    keys = [_text(p.ChildrenNames(i), f"{where}.children_names[{i}]")
            for i in range(p.ChildrenNamesLength())]
    if len(keys) != n or len(set(keys)) != n:
      raise _bad(f"dict with {len(keys)} keys ({len(set(keys))} distinct) for {n} children",
                 where)
    pairs = sorted(zip(keys, children), key=lambda kv: kv[0])
    return tree_util.PyTreeDef.from_node_data_and_children(
        _REGISTRY, (dict, [k for k, _ in pairs]), [c for _, c in pairs])
  if kind == fb.PyTreeDefKind.custom:
    return _read_custom_node(p, children, where)
  raise _bad(f"unknown pytree node kind {kind}", f"{where}.kind")


def _read_custom_node(p: fb.PyTreeDef, children: list[Any], where: str) -> Any:
  name = _text(p.CustomName(), f"{where}.custom_name")
  reg = _pytrees.registration_for_name(name)
  if reg is None:
    raise _bad(
        f"unregistered pytree node type `{name}`", where,
        f"Register it with jaxport.register_pytree_node_serialization(..., "
        f"serialized_name={name!r}) or register_namedtuple_serialization before "
        f"deserializing. Registered: {_pytrees.registered_names()}.")
  raw = p.CustomAuxdataAsNumpy()
  raw = b"" if isinstance(raw, int) else raw.tobytes()
  aux = _guard(f"{where}.custom_auxdata", f"the auxdata of `{name}`",
               reg.deserialize_auxdata, raw)
  if reg.namedtuple_fields is not None:
    if tuple(aux) != reg.namedtuple_fields:
      raise _bad(f"namedtuple `{name}` with fields {list(aux)}, but the registered type "
                 f"{reg.nodetype.__name__} has {list(reg.namedtuple_fields)}", where)
    if len(children) != len(aux):
      raise _bad(f"namedtuple `{name}` with {len(children)} children for {len(aux)} fields",
                 where)
    return tree_util.PyTreeDef.from_node_data_and_children(
        _REGISTRY, (reg.nodetype, None), children)
  if reg.from_children is not None:
    subtrees = [c.unflatten([0.0] * c.num_leaves) for c in children]
    node = _guard(where, f"from_children of `{name}`", reg.from_children, aux, subtrees)
    return _guard(where, f"the node built by from_children of `{name}`",
                  tree_util.tree_structure, node)
  return _guard(where, f"the pytree node `{name}`",
                tree_util.PyTreeDef.from_node_data_and_children,
                _REGISTRY, (reg.nodetype, aux), children)
