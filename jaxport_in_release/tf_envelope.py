"""The parts of a ``jax.export`` envelope that TensorFlow's ``XlaCallModule`` op needs, read
without jax.

A TensorFlow release environment holds TensorFlow and what it depends on (numpy, ml_dtypes,
flatbuffers), not jax: the releases the package index serves pin ``ml-dtypes`` and ``numpy``
ranges that no one jax release shares, and TensorFlow imports jax when it finds one. So the
envelope is read here with the ``flatbuffers`` package and jaxport's generated schema module
(``jaxport/serde/_schema_generated.py``), loaded by its path: whichever jax wrote the blob, the
fields read here are the ones every envelope since serialization version 2 has.
"""

from __future__ import annotations

import dataclasses
import os

try:
  import release_jax as _release
except ImportError:
  from jaxport_in_release import release_jax as _release

SCHEMA = os.path.join(_release.PACKAGE, os.pardir, "serde", "_schema_generated.py")
# The StableHLO portable artifact's bytecode header: magic, a version varint, then the
# producer string ``StableHLO_v<major>.<minor>.<patch>``, NUL-terminated.
_MAGIC = b"ML\xefR"
_PRODUCER = b"StableHLO_v"
# The envelope's dtype names (the schema's ``DType`` enum) as numpy/ml_dtypes names.
_DTYPES = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64", "f16": "float16",
    "f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128",
    "bf16": "bfloat16", "i4": "int4", "ui4": "uint4", "f8_e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8_e4m3fn": "float8_e4m3fn", "f8_e4m3fnuz": "float8_e4m3fnuz", "f8_e5m2": "float8_e5m2",
    "f8_e5m2fnuz": "float8_e5m2fnuz", "f8_e4m3": "float8_e4m3", "f8_e3m4": "float8_e3m4",
    "f8_e8m0fnu": "float8_e8m0fnu", "f4_e2m1fn": "float4_e2m1fn",
}
_CHECK_KINDS = {0: "platform", 1: "custom_call", 2: "shape_assertions"}


class EnvelopeError(Exception):
  """The blob does not read as a ``jax.export`` envelope this reader can call."""


@dataclasses.dataclass(frozen=True)
class Aval:
  """One argument's or result's shape (each dimension an int, or a symbolic expression's text)
  and dtype name (``None``: a PRNG key, a token or ``float0``, which XlaCallModule cannot take)."""
  shape: tuple[int | str, ...]
  dtype: str | None

  @property
  def static_shape(self) -> tuple[int | None, ...]:
    """The shape with each symbolic dimension ``None``, as ``XlaCallModule``'s ``Sout`` takes it."""
    return tuple(d if isinstance(d, int) else None for d in self.shape)


@dataclasses.dataclass(frozen=True)
class Envelope:
  """What ``XlaCallModule`` is called with, read from an envelope."""
  module: bytes
  calling_convention: int
  platforms: tuple[str, ...]
  disabled_checks: tuple[str, ...]
  in_avals: tuple[Aval, ...]
  out_avals: tuple[Aval, ...]
  kept_var_idx: tuple[int, ...]
  nr_devices: int
  ordered_effects: int
  vjp: Envelope | None  # the VJP's own envelope, when the blob carries one

  @property
  def stablehlo_version(self) -> str | None:
    """The StableHLO version the module's portable artifact was written for, None if unread."""
    return stablehlo_version(self.module)

  @property
  def uses_shardy(self) -> bool:
    """Whether the module carries Shardy's sharding dialect (``sdy``)."""
    return b"sdy." in self.module


def stablehlo_version(module: bytes) -> str | None:
  """The ``1.15.0`` of a portable artifact's ``StableHLO_v1.15.0`` producer, None if absent."""
  if not module.startswith(_MAGIC):
    return None
  at = module.find(_PRODUCER, len(_MAGIC), 64)
  end = module.find(b"\0", at)
  if at < 0 or end < 0:
    return None
  return module[at + len(_PRODUCER):end].decode("ascii", "replace")


def _schema():
  return _release.load_by_path("jaxport_tf_schema", os.path.normpath(SCHEMA))


def _aval(schema, a, where: str) -> Aval:
  if a.Kind() != schema.AbstractValueKind.shapedArray:
    return Aval((), None)
  names = {v: k for k, v in vars(schema.DType).items() if not k.startswith("_")}
  name = names.get(a.Dtype())
  if name is None:
    raise EnvelopeError(f"{where}: dtype code {a.Dtype()} is not one of the schema's")
  shape = []
  for j in range(a.ShapeLength()):
    text = a.Shape(j).decode("utf-8")
    shape.append(int(text) if text.lstrip("-").isdigit() else text)
  return Aval(tuple(shape), _DTYPES.get(name))


def _avals(schema, t, legacy: str, where: str) -> tuple[Aval, ...]:
  """An envelope's input or output avals: through ``unique_avals`` when the index vector is
  written (serialization 2026-04 on), else the legacy vector."""
  idxs = getattr(t, f"{legacy}AvalsIdxsLength")()
  if idxs:
    unique = [t.UniqueAvals(i) for i in range(t.UniqueAvalsLength())]
    picked = []
    for j in range(idxs):
      i = getattr(t, f"{legacy}AvalsIdxs")(j)
      if i >= len(unique):
        raise EnvelopeError(f"{where}: {legacy.lower()}_avals_idxs[{j}] = {i}, beyond the "
                            f"{len(unique)} unique avals")
      picked.append(_aval(schema, unique[i], where))
    return tuple(picked)
  return tuple(_aval(schema, getattr(t, f"{legacy}Avals")(j), where)
               for j in range(getattr(t, f"{legacy}AvalsLength")()))


def _envelope(schema, t) -> Envelope:
  checks = []
  for j in range(t.DisabledChecksLength()):
    c = t.DisabledChecks(j)
    kind = _CHECK_KINDS.get(c.Kind(), f"kind {c.Kind()}")
    checks.append(f"custom_call:{c.CustomCallTarget().decode()}" if kind == "custom_call"
                  else kind)
  module = t.MlirModuleSerializedAsNumpy()
  vjp = t.Vjp()
  return Envelope(
      module=bytes(module) if not isinstance(module, int) else b"",
      calling_convention=t.CallingConventionVersion(),
      platforms=tuple(t.Platforms(j).decode() for j in range(t.PlatformsLength())),
      disabled_checks=tuple(checks),
      in_avals=_avals(schema, t, "In", "in_avals"),
      out_avals=_avals(schema, t, "Out", "out_avals"),
      kept_var_idx=tuple(int(t.ModuleKeptVarIdx(j)) for j in range(t.ModuleKeptVarIdxLength())),
      nr_devices=int(t.NrDevices() or t.NrDevicesShort() or 1),
      ordered_effects=t.OrderedEffectsLength(),
      vjp=None if vjp is None else _envelope(schema, vjp))


def read(blob: bytes) -> Envelope:
  """The envelope in ``blob``; :class:`EnvelopeError` naming what does not read."""
  schema = _schema()
  try:
    return _envelope(schema, schema.Exported.GetRootAs(bytearray(blob), 0))
  except EnvelopeError:
    raise
  except Exception as e:  # noqa: BLE001  (flatbuffers raises anything on a damaged buffer)
    raise EnvelopeError(f"the blob does not read as a jax.export envelope: "
                        f"{type(e).__name__}: {e}") from None
