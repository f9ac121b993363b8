"""Hostile jax test-data folders, module texts and records: each refused with a JaxportError that
names the bad part, in time linear in the input, while the good files beside it still import."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from _build import without_fields
from jaxport.corpus import _import, _poly_specs
from jaxport.errors import CallError, SerializationError

JAX_DATA = Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_data"
GOOD_DATA = JAX_DATA / "cuda_lu_pivots_to_permutation.py"


# --- 1. jax test-data files: out-of-range fields and non-regular files --------------------------

def _with_field(field: str, value: int) -> str:
  text = GOOD_DATA.read_text()
  changed, n = re.subn(rf"\b{field}=\d+", f"{field}={value}", text, count=1)
  assert n == 1, f"{GOOD_DATA.name} states no {field}"
  return changed


OUT_OF_RANGE = {
    "huge_nr_devices.py": ("nr_devices", 2**40, "MAX_NR_DEVICES"),
    "huge_call_module_version.py": ("xla_call_module_version", int("9" * 4000), "MAX_FORMAT_VERSION"),
    "huge_testdata_version.py": ("testdata_version", int("9" * 4000), "MAX_FORMAT_VERSION"),
}


def test_out_of_range_fields_fail_their_file_and_the_good_file_imports(tmp_path):
  src = tmp_path / "src"
  src.mkdir()
  shutil.copy(GOOD_DATA, src)
  for name, (field, value, _) in OUT_OF_RANGE.items():
    (src / name).write_text(_with_field(field, value))
  result = _import.run_import([str(src)], str(tmp_path / "store"))
  assert len(result["imported"]) == 1 and GOOD_DATA.stem in result["imported"][0], result
  failed = {msg.split(":")[0]: msg for msg in result["failed"]}
  assert set(failed) == set(OUT_OF_RANGE), result["failed"]
  for name, (field, _, limit) in OUT_OF_RANGE.items():
    assert f"field {field}" in failed[name] and f"jaxport._limits.{limit}" in failed[name]
    assert "9999999999" not in failed[name]  # a 4,000-digit number is not repeated in full


def test_serialize_refuses_an_nr_devices_past_its_wire_field():
  exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((2,), np.float32))
  with pytest.raises(SerializationError, match="nr_devices .*uint32"):
    dataclasses.replace(exp, nr_devices=2**40).serialize()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_py_is_skipped_unopened_and_the_good_file_imports(tmp_path):
  src = tmp_path / "src"
  src.mkdir()
  shutil.copy(GOOD_DATA, src)
  os.mkfifo(src / "blocks_forever.py")  # opening it for reading would wait for a writer
  (src / "folder.py").mkdir()
  result = _import.run_import([str(src)], str(tmp_path / "store"))
  assert len(result["imported"]) == 1 and result["failed"] == [], result
  skipped = {msg.split(":")[0]: msg for msg in result["skipped"]}
  assert "not a regular file (a FIFO)" in skipped["blocks_forever.py"]
  assert "not a regular file (a directory)" in skipped["folder.py"]
  # Named on its own, it is skipped the same way, not reported as missing.
  result = _import.run_import([str(src / "blocks_forever.py")], str(tmp_path / "store2"))
  assert result["imported"] == [] and "FIFO" in result["skipped"][0]


# --- 2. scanning module text for shape specs is linear --------------------------------------------

_N = 200_000  # a quadratic scan of these texts takes hours; a linear one well under a second
_SIG = "func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {\n"
_WRAPPED = "func.func private @_wrapped_jax_export_main(%arg0: tensor<i32>, %arg1: tensor<?xf32>) -> x"
HOSTILE_TEXTS = {
    "main headers without an arrow": "func.func public @main(" * _N,
    "wrapped headers without an arrow": _SIG + "func.func private @_wrapped_jax_export_main(" * _N,
    "tensor types never closed": "func.func public @main(" + "tensor<" * _N + ") -> x {",
    "calls never closed": _SIG + "call @_wrapped_jax_export_main(" * _N + "\n" + _WRAPPED,
    "names never closed": (_SIG + " %0 = stablehlo.get_dimension_size %arg0, dim = 0 : x\n"
                           " call @_wrapped_jax_export_main(%0, %arg0)\n  }\n"
                           "func.func private @_wrapped_jax_export_main(%arg0: tensor<i32> {"
                           + 'jax.global_constant = ""' * _N + "}, %arg1: tensor<?xf32>) -> x"),
    "close parens without an arrow": "func.func public @main(" + ")" * _N + " " * _N,
}


@pytest.mark.parametrize("what", sorted(HOSTILE_TEXTS))
def test_scanning_a_crafted_module_text_finishes(what):
  text = HOSTILE_TEXTS[what]
  _poly_specs.is_shape_polymorphic(text)
  specs, why = _poly_specs.infer_from_module(text)
  assert specs is None and why


def test_converts_that_loop_are_refused_not_followed_forever():
  text = (_SIG + " %a = stablehlo.convert %b : x\n %b = stablehlo.convert %a : x\n"
          " call @_wrapped_jax_export_main(%a, %arg0)\n  }\n" + _WRAPPED)
  specs, why = _poly_specs.infer_from_module(text)
  assert specs is None and "dimension variable 0" in why


def test_the_linear_scan_still_reads_a_real_polymorphic_module():
  text = (_SIG + " %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>\n"
          " %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>\n"
          " %2 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?xf32>) -> x\n  }\n"
          'func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"}, '
          "%arg1: tensor<?xf32>) -> (tensor<?xf32>) {\n")
  assert _poly_specs.is_shape_polymorphic(text)
  assert _poly_specs.infer_from_module(text)[0] == ("b",)


# --- 3. a blob without shardings vectors ---------------------------------------------------------

@pytest.mark.parametrize("fields", [
    ("in_shardings", "in_shardings_idxs"),
    ("in_shardings", "in_shardings_idxs", "out_shardings", "out_shardings_idxs")])
def test_a_blob_without_shardings_reads_them_as_unspecified(fields):
  f = jax.jit(lambda x, y: (x + y, x * 2))
  spec = jax.ShapeDtypeStruct((3,), np.float32)
  blob = without_fields(bytes(jaxport.export(f)(spec, spec).serialize()), *fields)
  exp = jaxport.deserialize(bytearray(blob))
  assert exp._in_named_shardings == (None, None) and exp.in_shardings_hlo == (None, None)
  assert exp._out_named_shardings == (None, None) and exp.out_shardings_hlo == (None, None)
  again = jaxport.deserialize(exp.serialize())
  assert again.in_avals == exp.in_avals
  x = np.arange(3, dtype=np.float32)
  got = exp.call(x, x)
  np.testing.assert_allclose(got[0], 2 * x)
  np.testing.assert_allclose(got[1], 2 * x)


# --- 4. a record whose symbolic shapes the module does not take ---------------------------------

def test_a_symbolic_record_over_a_static_module_is_a_call_error():
  f = jax.jit(jnp.sin)
  static = jaxport.export(f)(jax.ShapeDtypeStruct((4,), np.float32))
  symbolic = jaxport.export(f)(jax.ShapeDtypeStruct(jaxport.symbolic_shape("b"), np.float32))
  bad = dataclasses.replace(symbolic, mlir_module_serialized=static.mlir_module_serialized)
  with pytest.raises(CallError, match=r"argument 0 .*tensor<4xf32>.*f32\[b\]"):
    bad.call(np.zeros(4, np.float32))
  # The sound records still call.
  np.testing.assert_allclose(symbolic.call(np.zeros(5, np.float32)), np.zeros(5))
  np.testing.assert_allclose(static.call(np.zeros(4, np.float32)), np.zeros(4))
