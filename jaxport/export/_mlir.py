"""The one place that turns module bytes into MLIR objects and text, and back.

Owns jaxlib's MLIR bindings and jax's portable-artifact helpers for the rest
of jaxport.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator

from jaxport._jaxcompat._compilation import xla_bridge
from jax.errors import JaxRuntimeError
from jaxport._jaxcompat._lowering import hlo, ir
from jaxport._jaxcompat._lowering import mlir as jax_mlir

from jaxport._jaxcompat import _mlir as jax_mlir_compat
from jaxport.errors import DeserializationError


def make_context() -> ir.Context:
  """A fresh MLIR context with every dialect jax lowers to registered."""
  return jax_mlir.make_ir_context()


# How many uses a reused context serves before a fresh one replaces it (this module's
# scratch contexts, the harness's lowering contexts): what a context interns (types,
# attributes) lives as long as the context does.
SCRATCH_CONTEXT_USES = 256
_scratch = threading.local()


@contextlib.contextmanager
def scratch_context() -> Iterator[ir.Context]:
  """An MLIR context for modules that do not outlive the block (parsed to read, or rewritten
  and serialized): one per thread, reused, since making a context with every dialect costs
  more than parsing a small module."""
  context = getattr(_scratch, "context", None)
  if context is None or _scratch.uses >= SCRATCH_CONTEXT_USES:
    context = _scratch.context = make_context()
    _scratch.uses = 0
  _scratch.uses += 1
  with context:
    yield context


def module_from_bytes(serialized: bytes, fun_name: str | None = None) -> ir.Module:
  """Parse a StableHLO portable artifact (or plain bytecode) in the current context.

  Bytes that do not parse (a corrupted blob) raise ``DeserializationError``
  naming the function, not jaxlib's runtime error.
  """
  of = f" of the exported function '{fun_name}'" if fun_name is not None else ""
  try:
    module = jax_mlir_compat.deserialize_portable_artifact(serialized)
  except JaxRuntimeError as e:
    written, reads = artifact_version(serialized), jax_mlir_compat.current_stablehlo_version()
    if written is not None and reads is not None and _version_key(written) > _version_key(reads):
      why = (f"The module was written for StableHLO {written}, newer than the {reads} this "
             "jaxlib reads, so it may use what this jaxlib cannot read: load it with a newer "
             "jax, or export it again for this one.")
    else:
      why = ("The bytes are corrupted or are not a StableHLO portable artifact; export the "
             "function again or reload the original serialized blob.")
    raise DeserializationError(
        f"The StableHLO module{of} ({len(serialized)} bytes of mlir_module_serialized) "
        f"cannot be parsed: {e}. {why}") from None
  return module


_ARTIFACT_VERSION = re.compile(rb"StableHLO_v([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})")


def artifact_version(serialized: bytes) -> str | None:
  """The StableHLO version a portable artifact declares it was written for (its producer
  string, near the start of the bytecode), or None for plain bytecode."""
  m = _ARTIFACT_VERSION.search(bytes(serialized[:64]))
  return m.group(1).decode("ascii") if m else None


def _version_key(version: str) -> tuple[int, ...]:
  return tuple(int(x) for x in version.split("."))


def module_text(serialized: bytes, fun_name: str | None = None) -> str:
  """The StableHLO text of a serialized module."""
  with scratch_context():
    return jax_mlir.module_to_string(module_from_bytes(serialized, fun_name))


def module_text_without_locations(serialized: bytes) -> str:
  """The text of a serialized module without its locations: equal for modules that differ only
  in where their source lines were (the same computation)."""
  with scratch_context():
    return module_from_bytes(serialized).operation.get_asm(enable_debug_info=False)


# The argument attributes by which a module's ``main`` lets the compiled call reuse an input's
# buffer: aliased to an output (``tf.aliasing_output = N``), or handed over for any output
# (``jax.buffer_donor = true``, a multi-device function without output shardings).
DONATION_ATTRIBUTES = ("tf.aliasing_output", "jax.buffer_donor")


def main_donations(module: ir.Module) -> tuple[bool, ...]:
  """Whether each argument of the module's public ``main`` is donated, in order (empty where
  the module has no ``main``)."""
  for op in module.body.operations:
    if "sym_name" not in op.attributes or ir.StringAttr(op.attributes["sym_name"]).value != "main":
      continue
    if "arg_attrs" not in op.attributes:
      return (False,) * len(op.regions[0].blocks[0].arguments)
    return tuple(any(a in ir.DictAttr(d) for a in DONATION_ATTRIBUTES)
                 for d in ir.ArrayAttr(op.attributes["arg_attrs"]))
  return ()


def donations(serialized: bytes) -> tuple[bool, ...]:
  """:func:`main_donations` of a serialized module."""
  with scratch_context():
    return main_donations(module_from_bytes(serialized))


def text_and_donations(serialized: bytes) -> tuple[str, tuple[bool, ...]]:
  """:func:`module_text_without_locations` and :func:`main_donations` of a serialized module,
  from one parse (a replay compares both with today's)."""
  with scratch_context():
    module = module_from_bytes(serialized)
    return module.operation.get_asm(enable_debug_info=False), main_donations(module)


def text_without_locations(text: str) -> str:
  """:func:`module_text_without_locations` of a module's text (an entry's ``module.mlir``);
  text that does not parse raises ``DeserializationError`` with the parser's message."""
  with scratch_context():
    try:
      module = ir.Module.parse(text)
    except ir.MLIRError as e:
      raise DeserializationError(f"the module text ({len(text)} characters) cannot be parsed: "
                                 f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return module.operation.get_asm(enable_debug_info=False)


def copy_module(module: ir.Module) -> ir.Module:
  """A copy of ``module``, safe to mutate (jax caches lowered modules), in the same context.

  The copy clones the module's attributes and top-level operations, with their
  locations, into a new module of ``module``'s context: the same IR that a trip
  through bytecode into a fresh context gives, without making that context (on
  jaxlib releases that do not reuse contexts, making one costs more than the
  rest of wrapping ``main``) or serializing and parsing the module.
  """
  source = module.operation
  with module.context:
    copy = ir.Module.create(source.location)
    attributes = source.attributes
    for i in range(len(attributes)):
      named = attributes[i]
      copy.operation.attributes[named.name] = named.attr
    body = ir.InsertionPoint(copy.body)
    for op in module.body.operations:
      op.clone(ip=body)
  return copy


def module_to_portable_artifact(module: ir.Module, target_version: str | None = None) -> bytes:
  """Serialize ``module`` as a StableHLO portable artifact, the export wire form.

  The target StableHLO version is ``target_version`` when given (what an older
  consumer's jaxlib reads, see ``export._for_jax``), else the newest one at
  least four weeks old, so a consumer updated monthly can read the artifact.
  jaxlib's ``JaxRuntimeError`` for a module the target cannot express passes
  through to the caller, which names the consumer.
  """
  if target_version is None:
    target_version = default_target_version()
  return jax_mlir_compat.serialize_portable_artifact(
      module, target_version, xla_bridge.get_backend().serialize_with_sdy)


def default_target_version() -> str:
  """The StableHLO version exports target by default: the newest one at least four weeks old."""
  return str(hlo.get_version_from_compatibility_requirement(
      hlo.StablehloCompatibilityRequirement.WEEK_4))


def stablehlo_version_range() -> tuple[str | None, str | None]:
  """The oldest and newest StableHLO versions this jaxlib can write an artifact for."""
  return jax_mlir_compat.minimum_stablehlo_version(), jax_mlir_compat.current_stablehlo_version()


def version_key(version: str) -> tuple[int, ...]:
  """``"1.14.0"`` -> ``(1, 14, 0)``, for comparing StableHLO versions."""
  return _version_key(version)
