"""Reading an Exported from flatbuffer bytes: every layout jax 0.10.2 reads.

Order of defence: ``_verify.decode`` checks the whole buffer's structure and
decodes it into plain Python values in one pass, before anything is built;
then every value is checked as it is read (enum numbers, indices, counts,
names), and the module bytes must be a StableHLO portable artifact before
anything native parses them. Every failure is a ``DeserializationError``
naming the field path (``Exported.in_avals[2].dtype``).

Layouts: the deduplicated ``unique_*`` tables with index vectors when the
index vectors are non-empty, else the legacy per-value vectors (named
shardings, or HloSharding protos before 2026, read only); ``nr_devices``
falls back to ``nr_devices_short``. jaxport's own ``symbolic_constraints``
field rebuilds the symbolic scope with its explicit constraints.

A nested VJP is verified with the rest of the buffer but built into a record
only when ``vjp()`` is first called (as jax does), so a semantic fault inside
it (an unknown dtype, a bad module) raises ``DeserializationError`` there.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from jax import tree_util
from jax.sharding import AbstractMesh, NamedSharding, PartitionSpec

from jaxport._jaxcompat._version import installed_jax_version
from jaxport import _limits
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport._jaxcompat import _mesh as jax_mesh
from jaxport.errors import (DeserializationError, ExpiredEnvelopeError, ExpiredEnvelopeWarning,
                            UnregisteredTypeError)
from jaxport.export._disabled_checks import DisabledSafetyCheck
from jaxport.export._exported import Exported
from jaxport.serde import _layout, _pytrees, _verify, _wire
from jaxport.shapes import _api

STABLEHLO_MAGIC = b"ML\xefR"

_LEAF = tree_util.tree_structure(0)
_NONE = tree_util.tree_structure(None)
_REGISTRY = tree_util.default_registry
_from_node = tree_util.PyTreeDef.from_node_data_and_children

# Field ids of the decoded tables (lists indexed by id), from the schema.
_X = _layout.field_ids("Exported")
_TREE = _layout.field_ids("PyTreeDef")
_AVAL = _layout.field_ids("AbstractValue")
_DEVICE = _layout.field_ids("AbstractDevice")
_MESH = _layout.field_ids("AbstractMesh")
_SPEC = _layout.field_ids("PartitionSpec")
_AXES = _layout.field_ids("PartitionSpecOneAxis")
_NAMED = _layout.field_ids("NamedSharding")
_SHARDING = _layout.field_ids("Sharding")
_EFFECT = _layout.field_ids("Effect")
_CHECK = _layout.field_ids("DisabledSafetyCheck")

_ENUMS = _layout.schema().enums
_TREE_KIND = _ENUMS["PyTreeDefKind"]
_KIND_LEAF, _KIND_NONE = _TREE_KIND["leaf"], _TREE_KIND["none"]
_KIND_TUPLE, _KIND_LIST = _TREE_KIND["tuple"], _TREE_KIND["list"]
_KIND_DICT, _KIND_CUSTOM = _TREE_KIND["dict"], _TREE_KIND["custom"]
_SHAPED_ARRAY = _ENUMS["AbstractValueKind"]["shapedArray"]
_CHECK_KIND = _ENUMS["DisabledSafetyCheckKind"]
_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from


def _bad(what: str, where: str, fix: str = "") -> DeserializationError:
  return DeserializationError(
      f"Not a valid serialized Exported: {what} at {where}."
      + (f" {fix}" if fix else " The bytes are corrupted or were not produced by serialize()."))


def _as_bytes(blob: Any) -> bytes:
  """The bytes of ``blob``: anything with the buffer protocol, as jax accepts
  (bytes, bytearray, memoryview, a numpy uint8 array loaded from an npz, mmap)."""
  if type(blob) is bytes:
    return blob
  try:
    view = memoryview(blob)
  except TypeError:
    raise DeserializationError(
        f"deserialize expects bytes, bytearray or another bytes-like object, got "
        f"{type(blob).__name__}. Pass the value returned by Exported.serialize().") from None
  with view:
    return view.tobytes()


def deserialize(blob: bytes | bytearray | memoryview) -> Exported:
  """The Exported stored in ``blob`` (from ``serialize`` here or in ``jax.export``).

  An envelope the installed jax refuses as expired is refused the same way
  (:class:`ExpiredEnvelopeError`), honouring ``jax_export_deserialize_expired_versions``.
  """
  return _read_root(_verify.decode(_as_bytes(blob)), "Exported", _JAX_POLICY)


def deserialize_expired(blob: bytes | bytearray | memoryview) -> Exported:
  """Like :func:`deserialize`, but reads expired envelopes too, silently: for rewriting them."""
  return _read_root(_verify.decode(_as_bytes(blob)), "Exported", _READ_ALL)


def deserialize_fields(table: list[Any], *, read_expired: bool = False) -> Exported:
  """The Exported of an envelope already decoded (``_verify.decode``), as :func:`deserialize`
  reads it (``read_expired``: as :func:`deserialize_expired` does): for readers that decode
  a blob once and read several things of it."""
  return _read_root(table, "Exported", _READ_ALL if read_expired else _JAX_POLICY)


# How the reader treats an envelope the installed jax refuses as expired.
_JAX_POLICY = "jax"
_READ_ALL = "all"


def _expired(t: list[Any], where: str, *, policy: str, hlo_shardings: bool) -> None:
  """Refuse (or, where jax's flag allows it, warn about) an expired envelope at ``where``."""
  if policy == _READ_ALL or not jax_envelope.REFUSES_EXPIRED:
    return
  producer = t[_X.jax_version]
  version = t[_X.serialization_version] or 0
  message = jax_envelope.expired_message(version, producer)
  if not hlo_shardings and jax_envelope.expired_versions_allowed():
    warnings.warn(message, ExpiredEnvelopeWarning, stacklevel=4)
    return
  what = ("stores shardings as HloSharding protos" if hlo_shardings
          else "keeps its device count only in the legacy 16-bit nr_devices_short")
  flag = ("" if hlo_shardings else
          f", or set jax.config.update('{jax_envelope.EXPIRED_FLAG}', True) to read it with a "
          "DeprecationWarning as jax does")
  raise ExpiredEnvelopeError(
      f"{message}\njaxport: the "
      + ("blob" if where == "Exported" else f"nested record {where}") + " was written by "
      + (f"jax {producer}" if producer else "an unknown producer (the blob names no jax version)")
      + f" in envelope version {version}; it {what}, which jax {installed_jax_version()} no "
      "longer reads. Run `jaxport upgrade BLOB -o NEW_BLOB` (or jaxport.upgrade_envelope(blob)) "
      f"to rewrite the envelope into the layout this jax reads, keeping the module{flag}.")


def read_jax_version(blob: bytes | bytearray | memoryview) -> str | None:
  """The jax version recorded by the producer (field 26), or None if absent."""
  return _verify.decode(_as_bytes(blob))[_X.jax_version]


def read_serialization_version(blob: bytes | bytearray | memoryview) -> int:
  """The header's ``serialization_version`` (field 0 of the root table, uint16); 0 if absent.

  Reads only the header, with bounds checks, so it works on blobs whose layout
  the installed reader cannot (yet) deserialize.
  """
  buf = _as_bytes(blob)
  try:
    table = _U32(buf, 0)[0]
    vtable = table - _I32(buf, table)[0]
    if vtable < 0:
      raise struct.error("vtable before the buffer")
    vtable_size = _U16(buf, vtable)[0]
    if vtable_size <= 4:
      return 0
    offset = _U16(buf, vtable + 4)[0]
    return _U16(buf, table + offset)[0] if offset else 0
  except struct.error:
    raise DeserializationError(
        f"not a serialized Exported: the {len(buf)}-byte blob is too short for a flatbuffer "
        "root table header.") from None


def _read_root(table: list[Any], where: str, policy: str) -> Exported:
  try:
    with _limits.recursion_room(_limits.MAX_TABLE_DEPTH):
      return _read_exported(table, where, policy)
  except RecursionError:
    raise _bad(f"nesting too deep to read (the limit {_limits.name('MAX_TABLE_DEPTH')})",
               where) from None


class _LazyVjp:
  """Builds the nested VJP record from its decoded table on the first ``vjp()``."""

  __slots__ = ("_table", "_where", "_policy", "_record")

  def __init__(self, table: list[Any], where: str, policy: str):
    self._table = table
    self._where = where
    self._policy = policy
    self._record: Exported | None = None

  def __call__(self, _primal: Any) -> Exported:
    if self._record is None:
      self._record = _read_root(self._table, self._where, self._policy)
    return self._record


def _text(raw: str | None, where: str) -> str:
  if raw is None:
    raise _bad("missing string", where)
  return raw


def _guard(where: str, what: str, fn: Callable[..., Any], *args, **kwargs) -> Any:
  """Runs a jax constructor, turning its complaint into a DeserializationError at ``where``."""
  try:
    return fn(*args, **kwargs)
  except DeserializationError:
    raise
  except Exception as e:
    raise _bad(f"{what} was refused ({type(e).__name__}: {e})", where) from e


# Longest dimension written as digits alone: int64 sizes have at most 19 digits;
# longer ones go to the shape parser, which refuses them with a ShapeError.
_MAX_INT_DIGITS = 19


def _is_int(dim: str) -> bool:
  return len(dim) <= _MAX_INT_DIGITS and dim.isascii() and dim.isdigit()


class _Scope:
  """The symbolic scope of one record, built on first use, and its parsed dimensions."""

  __slots__ = ("constraints", "_scope", "dims")

  def __init__(self, constraints: tuple[str, ...]):
    self.constraints = constraints
    self._scope = None
    self.dims: dict[str, Any] = {}

  def get(self):
    if self._scope is None:
      self._scope = _api.SymbolicScope(self.constraints)
    return self._scope

  def parse_all(self, aval_vectors: Sequence[list[Any] | None]) -> None:
    """Parses every distinct symbolic dimension of the avals in one call.

    Parsing has a high cost per call, so the distinct non-integer dimension
    strings are joined and parsed once. When that fails, nothing is recorded
    and each aval parses its own shape, which names the faulty one.
    """
    todo = {d: None for avals in aval_vectors if avals for a in avals
            for d in a[_AVAL.shape] or () if not _is_int(d)}
    if not todo:
      return
    try:
      parsed = _api.symbolic_shape(",".join(todo), scope=self.get())
    except Exception:
      return
    if len(parsed) == len(todo):
      self.dims = dict(zip(todo, parsed))


def _read_exported(t: list[Any], where: str, policy: str) -> Exported:
  X = _X
  constraints = tuple(t[X.symbolic_constraints] or ())
  scope = _Scope(constraints)
  if constraints:
    _guard(f"{where}.symbolic_constraints", "the symbolic scope", scope.get)

  avals_seen: dict[tuple, Any] = {}
  scope.parse_all((t[X.unique_avals], t[X.in_avals], t[X.out_avals]))
  unique_avals = [_read_aval(a, scope, avals_seen, f"{where}.unique_avals[{i}]")
                  for i, a in enumerate(t[X.unique_avals] or ())]
  unique_meshes = [_read_abstract_mesh(m, f"{where}.unique_abstract_meshes[{i}]")
                   for i, m in enumerate(t[X.unique_abstract_meshes] or ())]
  unique_shardings = [
      _read_named_sharding(s, unique_meshes, f"{where}.unique_named_shardings[{i}]")
      for i, s in enumerate(t[X.unique_named_shardings] or ())]

  fun_name = _text(t[X.function_name], f"{where}.function_name")
  nr_devices = t[X.nr_devices]
  if not nr_devices and t[X.nr_devices_short]:
    _expired(t, where, policy=policy, hlo_shardings=False)
    nr_devices = t[X.nr_devices_short]
  if nr_devices < 1:
    raise _bad(f"nr_devices is {nr_devices}, expected at least 1", f"{where}.nr_devices")

  in_shardings = _read_shardings(t[X.in_shardings_idxs], t[X.in_shardings],
                                 unique_shardings, unique_meshes, f"{where}.in_shardings")
  out_shardings = _read_shardings(t[X.out_shardings_idxs], t[X.out_shardings],
                                  unique_shardings, unique_meshes, f"{where}.out_shardings")
  is_hlo = _wire.is_hlo_sharding
  has_named = not any(s is not None and is_hlo(s) for s in (*in_shardings, *out_shardings))
  if not has_named:
    _expired(t, where, policy=policy, hlo_shardings=True)

  if has_named:
    in_avals = _read_avals(t[X.in_avals_idxs], t[X.in_avals], unique_avals, in_shardings,
                           scope, avals_seen, f"{where}.in_avals")
    out_avals = _read_avals(t[X.out_avals_idxs], t[X.out_avals], unique_avals,
                            out_shardings, scope, avals_seen, f"{where}.out_avals")
    # A blob without a shardings vector leaves every value unspecified, as jax reads it.
    in_shardings = in_shardings or (None,) * len(in_avals)
    out_shardings = out_shardings or (None,) * len(out_avals)
    in_named, out_named = in_shardings, out_shardings
    in_hlo = _hlo_shardings(in_shardings, in_avals, f"{where}.in_shardings")
    out_hlo = _hlo_shardings(out_shardings, out_avals, f"{where}.out_shardings")
  else:
    in_avals = tuple(_read_aval(a, scope, avals_seen, f"{where}.in_avals[{i}]")
                     for i, a in enumerate(t[X.in_avals] or ()))
    out_avals = tuple(_read_aval(a, scope, avals_seen, f"{where}.out_avals[{i}]")
                      for i, a in enumerate(t[X.out_avals] or ()))
    _same_count(len(in_shardings), len(in_avals), f"{where}.in_shardings")
    _same_count(len(out_shardings), len(out_avals), f"{where}.out_shardings")
    in_hlo = in_shardings or (None,) * len(in_avals)
    out_hlo = out_shardings or (None,) * len(out_avals)
    in_named, out_named = (None,) * len(in_avals), (None,) * len(out_avals)

  in_tree = _read_tree(t[X.in_tree], len(in_avals), f"{where}.in_tree")
  out_tree = _read_tree(t[X.out_tree], len(out_avals), f"{where}.out_tree")

  platforms = tuple(t[X.platforms] or ())
  if not platforms:
    raise _bad("no platforms", f"{where}.platforms")
  ordered_effects = tuple(_read_effect(e, f"{where}.ordered_effects[{i}]")
                          for i, e in enumerate(t[X.ordered_effects] or ()))
  unordered_effects = tuple(_read_effect(e, f"{where}.unordered_effects[{i}]")
                            for i, e in enumerate(t[X.unordered_effects] or ()))
  disabled = tuple(_read_disabled_check(c, f"{where}.disabled_checks[{i}]")
                   for i, c in enumerate(t[X.disabled_checks] or ()))

  module = t[X.mlir_module_serialized] or b""
  if module[:4] != STABLEHLO_MAGIC:
    raise _bad(f"module bytes start with {module[:4]!r}, not the StableHLO portable "
               f"artifact magic {STABLEHLO_MAGIC!r}", f"{where}.mlir_module_serialized")
  kept = t[X.module_kept_var_idx] or ()
  if (kept and kept[-1] >= len(in_avals)) or any(b <= a for a, b in zip(kept, kept[1:])):
    raise _bad(f"module_kept_var_idx {kept} is not a sorted set of indices below "
               f"{len(in_avals)} (the number of inputs)", f"{where}.module_kept_var_idx")

  vjp = t[X.vjp]
  return Exported(
      fun_name=fun_name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
      out_avals=out_avals,
      _in_named_shardings=in_named, _out_named_shardings=out_named,
      in_shardings_hlo=in_hlo, out_shardings_hlo=out_hlo, nr_devices=nr_devices,
      platforms=platforms, ordered_effects=ordered_effects,
      unordered_effects=unordered_effects, disabled_safety_checks=disabled,
      mlir_module_serialized=module,
      calling_convention_version=t[X.calling_convention_version],
      module_kept_var_idx=kept, uses_global_constants=t[X.uses_global_constants],
      _get_vjp=None if vjp is None else _LazyVjp(vjp, f"{where}.vjp", policy))


def _same_count(got: int, expected: int, where: str) -> None:
  if got and got != expected:
    raise _bad(f"{got} entries for {expected} values", where)


def _pick(idxs: Sequence[int], table: Sequence[Any], where: str, name: str,
          base: int = 0) -> list[Any]:
  """``table[k - base]`` for each index ``k``; index 0 means None when ``base`` is 1."""
  if max(idxs) - base < len(table):
    if base == 0:
      return [table[k] for k in idxs]
    return [None if k == 0 else table[k - 1] for k in idxs]
  i, k = next((i, k) for i, k in enumerate(idxs) if k - base >= len(table))
  raise _bad(f"index {k} into {name} of {len(table)} entries"
             + (" (1-based, 0 = unspecified)" if base else ""), f"{where}[{i}]")


def _read_shardings(idxs: Sequence[int] | None, legacy: list[Any] | None,
                    unique_shardings: list[Any], unique_meshes: list[Any],
                    where: str) -> tuple[Any, ...]:
  if idxs:
    return tuple(_pick(idxs, unique_shardings, f"{where}_idxs", "unique_named_shardings", 1))
  return tuple(_read_legacy_sharding(s, unique_meshes, f"{where}[{i}]")
               for i, s in enumerate(legacy or ()))


def _read_avals(idxs: Sequence[int] | None, legacy: list[Any] | None,
                unique_avals: list[Any], shardings: tuple[Any, ...], scope: _Scope,
                seen: dict[tuple, Any], where: str) -> tuple[Any, ...]:
  if idxs:
    base = _pick(idxs, unique_avals, f"{where}_idxs", "unique_avals")
  else:
    base = [_read_aval(a, scope, seen, f"{where}[{i}]") for i, a in enumerate(legacy or ())]
  _same_count(len(shardings), len(base), where.replace("avals", "shardings"))
  if not shardings or all(s is None for s in shardings):
    return tuple(base)
  return tuple(a if s is None else
               _guard(f"{where}[{i}]", "the sharding for this value",
                      _wire.aval_with_sharding, a, s)
               for i, (a, s) in enumerate(zip(base, shardings)))


def _hlo_shardings(shardings: tuple[Any, ...], avals: tuple[Any, ...],
                   where: str) -> tuple[Any, ...]:
  """The ``*_shardings_hlo`` of a record read with named shardings, as the installed jax reads it."""
  if not jax_envelope.READ_DERIVES_HLO_SHARDINGS:
    return (None,) * len(avals)
  return tuple(None if s is None else
               _guard(f"{where}[{i}]", "the sharding", _wire.named_to_hlo_sharding, s, a.ndim)
               for i, (s, a) in enumerate(zip(shardings, avals)))


def _read_aval(aval: list[Any], scope: _Scope, seen: dict[tuple, Any], where: str) -> Any:
  """The ShapedArray of a decoded AbstractValue; equal tables give the same object."""
  dims = aval[_AVAL.shape] or ()
  key = (aval[_AVAL.kind], aval[_AVAL.dtype], aval[_AVAL.memory_space], *dims)
  known = seen.get(key)
  if known is not None:
    return known
  kind = aval[_AVAL.kind]
  if kind != _SHAPED_ARRAY:
    raise _bad(f"abstract value kind {kind}, only shapedArray "
               f"({_SHAPED_ARRAY}) is supported", f"{where}.kind")
  dtype = _wire.WIRE_TO_DTYPE.get(aval[_AVAL.dtype])
  if dtype is None:
    raise _bad(f"unknown dtype number {aval[_AVAL.dtype]} (known: 0..{max(_wire.WIRE_TO_DTYPE)})",
               f"{where}.dtype", "The blob may come from a newer jax; upgrade jaxport.")
  memory_space = _wire.WIRE_TO_MEMORY_SPACE.get(aval[_AVAL.memory_space])
  if memory_space is None:
    raise _bad(f"unknown memory space number {aval[_AVAL.memory_space]}",
               f"{where}.memory_space")
  if all(_is_int(d) for d in dims):
    shape = tuple(map(int, dims))
  else:
    known = scope.dims
    shape = tuple(int(d) if _is_int(d) else known.get(d) for d in dims)
    if None in shape:
      shape = _read_symbolic_shape(dims, scope, f"{where}.shape")
  result = _guard(where, "the array type", _wire.ShapedArray, shape, dtype,
                  memory_space=memory_space)
  seen[key] = result
  return result


def _read_symbolic_shape(dims: Sequence[str], scope: _Scope, where: str) -> tuple[Any, ...]:
  spec = ",".join(dims)
  shown = spec if len(spec) <= 200 else spec[:200] + "..."
  shape = _guard(where, f"the symbolic shape {shown!r}", lambda: _api.symbolic_shape(
      spec, scope=scope.get()))
  if len(shape) != len(dims):
    raise _bad(f"shape {spec!r} parsed to {len(shape)} dimensions, expected {len(dims)}", where)
  return tuple(shape)


def _read_abstract_device(dev: list[Any] | None, where: str) -> Any:
  if dev is None:
    return None
  kind = _text(dev[_DEVICE.device_kind], f"{where}.device_kind")
  platform = dev[_DEVICE.platform]
  if not platform:
    platform = _wire.platform_from_device_kind(kind)
    if platform is None:
      raise _bad(f"no platform and device kind {kind!r} does not name one", where)
  return jax_mesh.make_abstract_device(kind, dev[_DEVICE.num_cores], platform)


def _read_abstract_mesh(m: list[Any], where: str) -> Any:
  sizes = tuple(m[_MESH.axis_sizes] or ())
  names = tuple(m[_MESH.axis_names] or ())
  types = []
  for i, wire in enumerate(m[_MESH.axis_types] or b""):
    t = _wire.WIRE_TO_AXIS_TYPE.get(wire)
    if t is None:
      raise _bad(f"unknown axis type number {wire}", f"{where}.axis_types[{i}]")
    types.append(t)
  if not len(sizes) == len(names) == len(types):
    raise _bad(f"{len(sizes)} axis sizes, {len(names)} names and {len(types)} types "
               "(must be equal)", where)
  device = _read_abstract_device(m[_MESH.abstract_device], f"{where}.abstract_device")
  return _guard(where, "the abstract mesh", AbstractMesh, sizes, names, tuple(types),
                abstract_device=device)


def _read_partition_spec(spec: list[Any] | None, where: str) -> Any:
  if spec is None:
    return PartitionSpec()
  parts = []
  for one in spec[_SPEC.partitions] or ():
    axes = one[_AXES.axes] or ()
    parts.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
  reduced = frozenset(spec[_SPEC.reduced] or ())
  unreduced = frozenset(spec[_SPEC.unreduced] or ())
  return _guard(where, "the partition spec", PartitionSpec, *parts, reduced=reduced,
                unreduced=unreduced)


def _read_named_sharding(s: list[Any], unique_meshes: Sequence[Any], where: str) -> Any:
  if unique_meshes:
    amesh = _pick((s[_NAMED.abstract_mesh_idx],), unique_meshes,
                  f"{where}.abstract_mesh_idx", "unique_abstract_meshes")[0]
  else:
    mesh = s[_NAMED.mesh]
    if mesh is None:
      raise _bad("named sharding without a mesh", f"{where}.mesh")
    amesh = _read_abstract_mesh(mesh, f"{where}.mesh")
  spec = _read_partition_spec(s[_NAMED.spec], f"{where}.spec")
  return _guard(where, "the named sharding", NamedSharding, amesh, spec,
                memory_kind=s[_NAMED.memory_kind])


def _read_legacy_sharding(s: list[Any], unique_meshes: Sequence[Any], where: str) -> Any:
  named = s[_SHARDING.named_sharding]
  if named is not None:
    return _read_named_sharding(named, unique_meshes, f"{where}.named_sharding")
  proto = s[_SHARDING.hlo_sharding_proto]
  if proto is not None:
    return _guard(f"{where}.hlo_sharding_proto", "the HloSharding proto",
                  _wire.hlo_sharding_from_proto, proto)
  return None


def _read_effect(eff: list[Any], where: str) -> Any:
  name = _text(eff[_EFFECT.type_name], f"{where}.type_name")
  cls = _wire.lowerable_effect_types().get(name)
  if cls is None:
    # A project's effect, registered when its code is imported: as a pytree type of its own.
    raise UnregisteredTypeError(str(_bad(
        f"effect type {name!r} is not a lowerable effect known to this process", where,
        "Import the module defining the effect before deserializing.")))
  return _guard(where, f"the effect {name} (needs a nullary constructor)", cls)


def _read_disabled_check(sc: list[Any], where: str) -> DisabledSafetyCheck:
  kind = sc[_CHECK.kind]
  if kind == _CHECK_KIND["custom_call"]:
    target = _text(sc[_CHECK.custom_call_target], f"{where}.custom_call_target")
    if not target:
      raise _bad("empty custom-call target", f"{where}.custom_call_target")
    return DisabledSafetyCheck.custom_call(target)
  if kind == _CHECK_KIND["platform"]:
    return DisabledSafetyCheck.platform()
  raise _bad(f"disabled safety check kind {kind} (known: platform "
             f"{_CHECK_KIND['platform']}, custom_call {_CHECK_KIND['custom_call']})",
             f"{where}.kind")


def _read_tree(p: list[Any] | None, n_leaves: int, where: str) -> Any:
  if p is None:
    raise _bad("missing pytree", where)
  tree = _read_node(p, where)
  if tree.num_leaves != n_leaves:
    raise _bad(f"pytree with {tree.num_leaves} leaves for {n_leaves} abstract values", where)
  return tree


def _read_node(p: list[Any], where: str) -> Any:
  kind = p[_TREE.kind]
  nodes = p[_TREE.children]
  if kind == _KIND_LEAF or kind == _KIND_NONE:
    if nodes:
      raise _bad(f"a {'leaf' if kind == _KIND_LEAF else 'None'} node with "
                 f"{len(nodes)} children", where)
    return _LEAF if kind == _KIND_LEAF else _NONE
  children = [_read_node(c, f"{where}.children[{i}]") for i, c in enumerate(nodes or ())]
  if kind == _KIND_TUPLE:
    return _from_node(_REGISTRY, (tuple, None), children)
  if kind == _KIND_LIST:
    return _from_node(_REGISTRY, (list, None), children)
  if kind == _KIND_DICT:
    keys = p[_TREE.children_names] or ()
    n = len(children)
    if len(keys) != n or len(set(keys)) != n:
      raise _bad(f"dict with {len(keys)} keys ({len(set(keys))} distinct) for {n} children",
                 where)
    if all(a < b for a, b in zip(keys, keys[1:])):
      return _from_node(_REGISTRY, (dict, list(keys)), children)
    pairs = sorted(zip(keys, children), key=lambda kv: kv[0])
    return _from_node(_REGISTRY, (dict, [k for k, _ in pairs]), [c for _, c in pairs])
  if kind == _KIND_CUSTOM:
    return _read_custom_node(p, children, where)
  raise _bad(f"unknown pytree node kind {kind}", f"{where}.kind")


def _unregistered(name: str, where: str) -> UnregisteredTypeError:
  """jax's message for an unknown serialized node name, then where it is and the fix.

  The blob itself is valid: the reading process lacks a registration, often
  because the producer registered the type with ``jax.export`` only.
  """
  return UnregisteredTypeError(
      "Cannot deserialize a PyTreeDef containing an "
      f"unregistered type `{name}`. "
      "Use `export.register_pytree_node_serialization` or "
      "`export.register_namedtuple_serialization`.\n"
      f"The blob is valid, but jaxport has no serialization registration named `{name}` (at "
      f"{where}). A type registered with jax.export is not registered with jaxport: register it "
      f"with jaxport.register_pytree_node_serialization(YourType, serialized_name={name!r}, ...) "
      "(or jaxport.register_namedtuple_serialization) before deserializing; that one call "
      "registers it with jax.export too, or keeps jax.export's registration under the same "
      f"name. Registered with jaxport: {_pytrees.registered_names()}.")


def _read_custom_node(p: list[Any], children: list[Any], where: str) -> Any:
  name = _text(p[_TREE.custom_name], f"{where}.custom_name")
  reg = _pytrees.registration_for_name(name)
  if reg is None:
    raise _unregistered(name, where)
  raw = p[_TREE.custom_auxdata] or b""
  aux = _guard(f"{where}.custom_auxdata", f"the auxdata of `{name}`",
               reg.deserialize_auxdata, raw)
  if reg.namedtuple_fields is not None:
    if tuple(aux) != reg.namedtuple_fields:
      raise _bad(f"namedtuple `{name}` with fields {list(aux)}, but the registered type "
                 f"{reg.nodetype.__name__} has {list(reg.namedtuple_fields)}", where)
    if len(children) != len(aux):
      raise _bad(f"namedtuple `{name}` with {len(children)} children for {len(aux)} fields",
                 where)
    return _from_node(_REGISTRY, (reg.nodetype, None), children)
  if reg.from_children is not None:
    subtrees = [c.unflatten([0.0] * c.num_leaves) for c in children]
    node = _guard(where, f"from_children of `{name}`", reg.from_children, aux, subtrees)
    return _guard(where, f"the node built by from_children of `{name}`",
                  tree_util.tree_structure, node)
  return _guard(where, f"the pytree node `{name}`", _from_node,
                _REGISTRY, (reg.nodetype, aux), children)
