"""Shared builders for the command-line tests: real blobs and golden entries."""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import jaxport
from jaxport.export import _mlir
from jaxport.golden import _signatures
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.golden._store import GoldenStore
from jaxport.harness import Case, _case
from jaxport.serde import _read

RECORD_DATE = datetime.date(2026, 6, 1)


def qr_fun(x):
  return tuple(jnp.linalg.qr(x))  # jax.export serializes no QRResult unregistered


@functools.cache
def qr_exported():
  """jaxport's export of a 3x3 float32 QR (LAPACK geqrf/orgqr custom calls on CPU)."""
  return jaxport.export(jax.jit(qr_fun), platforms=("cpu",))(
      jax.ShapeDtypeStruct((3, 3), np.float32))


def qr_rewritten(rewrite: Callable[[str], str]) -> tuple[bytes, tuple]:
  """The QR export with its module text rewritten by ``rewrite`` (a custom call renamed, an
  attribute dropped), serialized, and its module's signatures: an entry whose manifest records
  what its module really calls."""
  exp = qr_exported()
  with _mlir.scratch_context():
    module = jax.interpreters.mlir.ir.Module.parse(
        rewrite(_mlir.module_text(exp.mlir_module_serialized)))
    serialized = _mlir.module_to_portable_artifact(module)
  assert serialized != exp.mlir_module_serialized, "the rewrite changed nothing"
  exp = dataclasses.replace(exp, mlir_module_serialized=serialized)
  return bytes(exp.serialize()), _signatures.signatures(serialized)


def qr_input() -> np.ndarray:
  return np.arange(9, dtype=np.float32).reshape(3, 3) + np.eye(3, dtype=np.float32)


def write_qr_entry(store: GoldenStore, *, case_id: str = "qr_f32",
                   record_date: datetime.date = RECORD_DATE, signatures=None, blob=None,
                   comparison: Comparison | None = None):
  """A QR entry in ``store``; its comparison settings are, unless given, those a recording of
  the QR case (``qr_fun`` on ``qr_input``) writes, so that an audit finds none changed."""
  exp = qr_exported()
  if comparison is None:
    case = Case(case_id, "qr", qr_fun, lambda: ((qr_input(),), {}))
    outputs = [(f"[{i}]", np.asarray(o).dtype) for i, o in enumerate(jax.jit(qr_fun)(qr_input()))]
    found = _case.comparison_of(case, outputs)
    comparison = Comparison(found.checker, found.rtol, found.atol)
  blob = bytes(exp.serialize()) if blob is None else blob
  x = qr_input()
  expected = [np.asarray(o) for o in jax.jit(qr_fun)(x)]
  sigs = _signatures.signatures(exp.mlir_module_serialized) if signatures is None else signatures
  manifest = Manifest(
      case_id=case_id, family="qr", platform="cpu", record_date=record_date,
      producer=Producer.current(), calling_convention_version=exp.calling_convention_version,
      serialization_version=_read.read_serialization_version(blob),
      custom_call_targets=sigs, polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=comparison)
  return store.write_entry(manifest, blob, [x], expected, exp.mlir_module())
