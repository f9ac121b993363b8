"""`jaxport inspect`: describe blobs (jax's and jaxport's) and golden entries."""

import json

import jax
import jax.export
import jax.numpy as jnp
import numpy as np

from _cli_helpers import write_qr_entry
from jaxport.cli import main
from jaxport.golden._store import GoldenStore


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def test_blob_written_by_jax_is_described(tmp_path, capsys):
  def f(x, y):
    return {"s": jnp.sin(x) + y, "c": jnp.cos(x)}

  exp = jax.export.export(jax.jit(f), platforms=("cpu", "cuda"))(
      jax.ShapeDtypeStruct((2, 3), np.float32), jax.ShapeDtypeStruct((3,), np.float32))
  path = tmp_path / "f.bin"
  path.write_bytes(exp.serialize())
  rc, out, _ = run(capsys, "inspect", str(path), "--json")
  info = json.loads(out)["exported"]
  assert rc == 0
  assert info["platforms"] == ["cpu", "cuda"]
  assert info["calling_convention_version"] == exp.calling_convention_version
  assert info["in_avals"] == ["float32[2,3]", "float32[3]"]
  assert info["out_avals"] == ["float32[2,3]", "float32[2,3]"]
  assert info["in_tree"] == str(exp.in_tree) and info["out_tree"] == str(exp.out_tree)
  assert info["custom_call_targets"] == [] and info["nr_devices"] == 1
  assert info["module_kept_var_idx"] == [0, 1]
  assert info["in_shardings"] == [None, None] and info["ordered_effects"] == []


def test_entry_by_directory_and_by_id_with_mlir(tmp_path, capsys):
  store = GoldenStore(tmp_path / "compat_data")
  entry = write_qr_entry(store)
  rc, out, _ = run(capsys, "inspect", str(entry.path))
  assert rc == 0
  assert out.startswith(f"cpu/qr/qr_f32/2026-06-01_jax-{jax.__version__}\n")
  assert "    lapack_sgeqrf_ffi\n" in out
  assert "lapack_sgeqrf_ffi(tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)" in out
  assert (f"manifest: case qr_f32, family qr, recorded 2026-06-01 with jax {jax.__version__}, "
          "comparison allclose") in out
  rc, out, _ = run(capsys, "inspect", "--root", str(store.root), entry.entry_id, "--json", "--mlir")
  info = json.loads(out)
  assert rc == 0
  assert info["manifest"]["case_id"] == "qr_f32" and len(info["manifest"]["digest"]) == 64
  assert info["exported"]["in_avals"] == ["float32[3,3]"]
  assert info["exported"]["has_vjp"] is False
  assert "stablehlo.custom_call @lapack_sgeqrf_ffi" in info["mlir"]


def test_tampered_entry_and_unknown_id_fail(tmp_path, capsys):
  store = GoldenStore(tmp_path / "compat_data")
  entry = write_qr_entry(store)
  rc, _, err = run(capsys, "inspect", "--root", str(store.root), "cpu/qr/qr_f32/2020-01-01_jax-0.1.0")
  assert rc == 2 and "no such entry" in err
  (entry.path / "module.mlir").write_text("edited")
  rc, _, err = run(capsys, "inspect", str(entry.path))
  assert rc == 2 and "module.mlir: sha256 mismatch" in err


def test_blob_that_is_not_an_exported_fails(tmp_path, capsys):
  path = tmp_path / "junk.bin"
  path.write_bytes(b"\x08\x00\x00\x00junk")
  rc, _, err = run(capsys, "inspect", str(path))
  assert rc == 2 and err.startswith("jaxport inspect: error: ")
