"""The Exported record: a function lowered to StableHLO plus its calling contract.

The record is pure data. Behaviour that needs other parts of jaxport is reached
through modules that depend only on the record's attributes, never on this
module, so imports point one way:
``serde._write`` (serialize), ``calling._call`` (call), ``export._shardings``
(concrete shardings), ``export._mlir`` (module text).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from jax import tree_util

from jaxport.calling import _call
from jaxport.export import _mlir, _shardings
from jaxport.serde import _write
from jaxport.export._disabled_checks import DisabledSafetyCheck
from jaxport.errors import ExportError


@dataclasses.dataclass(frozen=True)
class Exported:
  """A JAX function lowered to StableHLO, with everything needed to call it later.

  Fields mirror ``jax.export.Exported`` one to one (names, order and meaning), so
  code written against either works with both. Fields starting with ``_`` are
  not part of the stable API.
  """

  fun_name: str
  in_tree: tree_util.PyTreeDef
  in_avals: tuple[Any, ...]
  out_tree: tree_util.PyTreeDef
  out_avals: tuple[Any, ...]
  _in_named_shardings: tuple[Any, ...]
  _out_named_shardings: tuple[Any, ...]
  in_shardings_hlo: tuple[Any, ...]
  out_shardings_hlo: tuple[Any, ...]
  nr_devices: int
  platforms: tuple[str, ...]
  ordered_effects: tuple[Any, ...]
  unordered_effects: tuple[Any, ...]
  disabled_safety_checks: Sequence[DisabledSafetyCheck]
  mlir_module_serialized: bytes
  calling_convention_version: int
  module_kept_var_idx: tuple[int, ...]
  uses_global_constants: bool
  _get_vjp: Callable[["Exported"], "Exported"] | None

  @property
  def _has_named_shardings(self) -> bool:
    """False for a record read from an envelope that stores HloShardings only.

    jax 0.11.0 and older keep this as a field; later releases dropped it, as
    jaxport's record does, so it is derived from ``*_shardings_hlo`` unless the
    record was built with it (:func:`_init`).
    """
    declared = self.__dict__.get("_declared_named_shardings")
    if declared is not None:
      return declared
    return all(s is None for s in (*self.in_shardings_hlo, *self.out_shardings_hlo)) or any(
        s is not None for s in (*self._in_named_shardings, *self._out_named_shardings))

  def mlir_module(self) -> str:
    """The module as StableHLO text, for reading and diffing."""
    return _mlir.module_text(self.mlir_module_serialized, self.fun_name)

  def __str__(self) -> str:
    return f"Exported(fun_name={self.fun_name}, ...)"

  def has_vjp(self) -> bool:
    """Whether :meth:`vjp` can build the exported VJP."""
    return self._get_vjp is not None

  def vjp(self) -> "Exported":
    """The exported VJP: flat primals then output cotangents in, input cotangents out."""
    if self._get_vjp is None:
      raise ExportError(
          f"No VJP is available for the exported function '{self.fun_name}'. "
          "VJPs exist for fresh exports and, after deserialization, only up to "
          "the vjp_order given to serialize().")
    return self._get_vjp(self)

  def serialize(self, vjp_order: int = 0, *, jaxport_fields: bool = True) -> bytearray:
    """The flatbuffer bytes of this record, with VJPs nested ``vjp_order`` deep.

    ``jaxport_fields=False`` leaves out what jaxport adds to jax's layout (the
    producer's jax version where the installed jax does not write it, and
    explicit symbolic constraints), so the bytes are identical to what the
    installed ``jax.export`` writes for the same record.

    A record exported or retargeted for an older consumer
    (``export(..., for_jax=...)``) is written in the envelope layout that
    release reads (:attr:`for_jax`).
    """
    consumer = self.__dict__.get("_consumer")
    return _write.serialize(self, vjp_order=vjp_order, jaxport_fields=jaxport_fields,
                            header_version=None if consumer is None else consumer.header_version)

  @property
  def for_jax(self) -> Any:
    """The consumer release this record was exported or retargeted for (a
    ``jaxport.export._for_jax.ConsumerTarget`` with the StableHLO version, calling
    convention and envelope layout chosen for it), or None: the installed jax (or a
    TensorFlow release, :attr:`for_tf`).

    Kept outside the dataclass fields, which mirror ``jax.export.Exported``:
    ``dataclasses.replace`` returns a record without it.
    """
    consumer = self.__dict__.get("_consumer")
    return None if consumer is None or consumer.option != "for_jax" else consumer

  @property
  def for_tf(self) -> Any:
    """The TensorFlow release this record was exported for (``export(..., for_tf=...)``: a
    ``ConsumerTarget`` with the StableHLO version and calling convention chosen for it), or
    None."""
    consumer = self.__dict__.get("_consumer")
    return None if consumer is None or consumer.option != "for_tf" else consumer

  def call(self, *args: Any, **kwargs: Any) -> Any:
    """Call the exported function; same as ``jaxport.call(self)(*args, **kwargs)``."""
    return _call.call(self)(*args, **kwargs)

  def in_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
    """Concrete input shardings on ``mesh``, which must match the export mesh."""
    return _shardings.shardings_on_mesh(self, mesh, which="in")

  def out_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
    """Concrete output shardings on ``mesh``, which must match the export mesh."""
    return _shardings.shardings_on_mesh(self, mesh, which="out")


_fields_init = Exported.__init__


def _init(self: Exported, *args: Any, _has_named_shardings: bool | None = None,
          **kwargs: Any) -> None:
  """The record's constructor, also taking the ``_has_named_shardings`` keyword that
  ``jax.export.Exported`` of jax 0.11.0 and older has as a field (code written for those
  releases passes it); the value is kept apart from the fields, which match today's jax."""
  _fields_init(self, *args, **kwargs)
  if _has_named_shardings is not None:
    object.__setattr__(self, "_declared_named_shardings", bool(_has_named_shardings))


Exported.__init__ = _init
