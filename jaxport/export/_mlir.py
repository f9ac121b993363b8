"""The one place that turns module bytes into MLIR objects and text, and back.

Owns jaxlib's MLIR bindings and jax's portable-artifact helpers for the rest
of jaxport.
"""

from __future__ import annotations

from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import _jax
from jax._src.lib.mlir import ir


def make_context() -> ir.Context:
  """A fresh MLIR context with every dialect jax lowers to registered."""
  return jax_mlir.make_ir_context()


def module_from_bytes(serialized: bytes) -> ir.Module:
  """Parse a StableHLO portable artifact (or plain bytecode) in the current context."""
  return _jax.mlir.deserialize_portable_artifact(serialized)


def module_text(serialized: bytes) -> str:
  """The StableHLO text of a serialized module."""
  with make_context():
    return jax_mlir.module_to_string(module_from_bytes(serialized))
