"""`jaxport inspect`: describe blobs (jax's and jaxport's) and golden entries."""

import datetime
import json
import pathlib
import re

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

from _cli_helpers import qr_exported, qr_fun, qr_input, write_qr_entry
from _python_child import run_cli
from jaxport import _versions
from jaxport._jaxcompat import _envelope
from jaxport.cli import main
from jaxport.golden import _signatures
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.golden._store import GoldenStore

# Seconds a command run in a child process may take.
CHILD_TIMEOUT_S = 300

pytest_plugins = ["pytester"]


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
  rc, out, _ = run(capsys, "inspect", "--root", str(store.root), str(entry.entry_id), "--json", "--mlir")
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


def _layout_entry(store):
  """An entry as the harness records it: the manifest's serialization_version is the layout."""
  exp = qr_exported()
  blob = bytes(exp.serialize())
  x = qr_input()
  manifest = Manifest(
      case_id="qr_f32", family="qr", platform="cpu", record_date=datetime.date(2026, 6, 1),
      producer=Producer.current(), calling_convention_version=exp.calling_convention_version,
      serialization_version=_versions.serialization_layout_version(),
      custom_call_targets=_signatures.signatures(exp.mlir_module_serialized),
      polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison("allclose", 1e-5, 1e-6))
  return store.write_entry(manifest, blob, [x], [np.asarray(o) for o in jax.jit(qr_fun)(x)],
                           exp.mlir_module())


def test_the_header_version_is_explained_beside_the_layout_the_manifest_records(tmp_path, capsys):
  header = _envelope.header_version()                 # 3 up to jax 0.11.0, 12 from 0.11.1
  layout = _versions.serialization_layout_version()   # 11 up to jax 0.11.0, 12 from 0.11.1
  entry = _layout_entry(GoldenStore(tmp_path / "compat_data"))
  rc, out, _ = run(capsys, "inspect", str(entry.path), "--json")
  info = json.loads(out)
  assert rc == 0 and info["manifest"]["serialization_version"] == layout
  exported = info["exported"]
  assert exported["serialization_version"] == header       # the key jax's header field keeps
  assert exported["serialization_layout"] == layout
  assert exported["serialization_version_meaning"].startswith(
      "the envelope header version jax reads")
  rc, out, _ = run(capsys, "inspect", str(entry.path))
  line, = [x for x in out.splitlines() if x.startswith("  serialization_version: ")]
  assert line.startswith(f"  serialization_version: {header} (the envelope header version jax "
                         f"reads; ")
  assert f"layout {layout}" in line
  if header != layout:
    assert "layouts 3 to 11 all write 3" in line and "manifest's serialization_version" in line
  assert f"  serialization_layout: {layout}\n" in out


def test_a_bare_blob_with_the_legacy_header_has_an_unknown_layout(tmp_path, capsys):
  def f(x):
    return jnp.sin(x)

  exp = jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct((2,), np.float32))
  path = tmp_path / "f.bin"
  path.write_bytes(exp.serialize())
  header = _envelope.header_version()
  rc, out, _ = run(capsys, "inspect", str(path), "--json")
  exported = json.loads(out)["exported"]
  assert rc == 0 and exported["serialization_version"] == header
  assert exported["serialization_layout"] == (None if header == 3 else header)
  rc, out, _ = run(capsys, "inspect", str(path))
  if header == 3:
    assert ("  serialization_version: 3 (the envelope header version jax reads; layouts 3 to 11 "
            "all write 3 so older readers keep reading them, and this blob's layout is not "
            "recorded beside it)\n") in out
    assert "  serialization_layout: unknown\n" in out
  else:
    assert f"  serialization_version: {header} (the envelope header version jax reads; it is " \
           f"the layout itself (layout {header}))\n" in out


def test_a_blobs_strings_reach_the_terminal_escaped(tmp_path, capsys):
  import dataclasses
  import jaxport
  exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((2,), np.float32))
  hostile = "f\x1b[31mred\nruns on cpu: every release (FAKE LINE)\r"
  path = tmp_path / "f.bin"
  path.write_bytes(dataclasses.replace(exp, fun_name=hostile).serialize())
  rc, out, _ = run(capsys, "inspect", str(path))
  assert rc == 0
  assert "\x1b" not in out and "\r" not in out
  assert not any(line.startswith("runs on cpu: every release") for line in out.splitlines())
  assert "f\\x1b[31mred\\nruns on cpu: every release (FAKE LINE)\\r" in out


def test_an_entry_copied_out_of_its_store_is_refused_naming_where_it_should_be(tmp_path, capsys,
                                                                               monkeypatch):
  import shutil
  from jaxport.errors import GoldenDataError
  from jaxport.golden._entry import Entry
  entry = write_qr_entry(GoldenStore(tmp_path / "compat_data"))
  loose = tmp_path / "loose"
  shutil.copytree(entry.path, loose)
  rc, out, err = run(capsys, "inspect", str(loose))
  assert rc == 2 and out == "" and "Traceback" not in err
  assert f"the manifest describes {str(entry.entry_id)!r}" in err
  # Fewer than four folders above it (a copy near the file system's root) names the layout.
  monkeypatch.chdir(tmp_path)
  with pytest.raises(GoldenDataError, match=r"does not end in <platform>/<family>/<case_id>/.*"
                     r"inspect STORE/" + re.escape(str(entry.entry_id))):
    Entry(pathlib.Path("loose")).manifest
  rc, out, _ = run(capsys, "inspect", str(entry.path))
  assert rc == 0 and str(entry.entry_id) in out


def test_the_stored_symbolic_constraints_are_shown_beside_the_shapes(tmp_path, capsys):
  import jaxport
  a, b = jaxport.symbolic_shape("a, b", constraints=("a >= b", "b <= 8"))
  exp = jaxport.export(jax.jit(lambda x: x[:, :1] * 2))(
      jax.ShapeDtypeStruct((a, b), np.float32))
  path = tmp_path / "sym.bin"
  path.write_bytes(exp.serialize())
  rc, out, _ = run(capsys, "inspect", str(path), "--json")
  assert rc == 0
  info = json.loads(out)["exported"]
  assert info["in_avals"] == ["float32[a,b]"]
  assert info["symbolic_constraints"] == ["a >= b", "b <= 8"]
  rc, out, _ = run(capsys, "inspect", str(path))
  assert "  symbolic_constraints: \n    a >= b\n    b <= 8\n" in out
  static = tmp_path / "static.bin"
  static.write_bytes(jaxport.export(jax.jit(jnp.sin))(
      jax.ShapeDtypeStruct((2,), np.float32)).serialize())
  rc, out, _ = run(capsys, "inspect", str(static))
  assert rc == 0 and "  symbolic_constraints: (none)\n" in out


PYTREE_CASES = """
import jax
import jax.numpy as jnp
import numpy as np
import jaxport
from jaxport.harness import Case, random_matrix


class Params:
  def __init__(self, w):
    self.w = w


jax.tree_util.register_pytree_node(Params, lambda p: ((p.w,), None), lambda _, c: Params(*c))
jaxport.register_pytree_node_serialization(
    Params, serialized_name="mycases.Params", serialize_auxdata=lambda _: b"",
    deserialize_auxdata=lambda _: None)


def inputs():
  return (Params(random_matrix(0, (3,), np.float32)),), {}


def cases():
  return [Case("dense", "mine", lambda p: Params(jnp.sin(p.w)), inputs)]
"""


@pytest.mark.slow
def test_an_entry_of_the_projects_pytree_type_opens_by_id_from_the_projects_store(pytester):
  from _downstream_project import write_project
  store = write_project(pytester, PYTREE_CASES)
  recorded = pytester.runpytest("-p", "no:cacheprovider", "--compat-record")
  assert recorded.ret == 0, recorded.stdout.str()
  (entry,) = store.entries()
  # A child process each: the project's case module registers its type where it is imported.
  project = ["--project", str(pytester.path)]
  by_id = run_cli(["inspect", *project, str(entry.entry_id), "--json"], timeout=CHILD_TIMEOUT_S)
  assert by_id.returncode == 0, by_id.stderr
  info = json.loads(by_id.stdout)
  assert info["artifact"] == str(entry.entry_id) and "Params" in info["exported"]["in_tree"]
  by_dir = run_cli(["inspect", *project, str(entry.path)], timeout=CHILD_TIMEOUT_S)
  assert by_dir.returncode == 0 and "CustomNode(Params" in by_dir.stdout
  bare = run_cli(["inspect", str(entry.path)], timeout=CHILD_TIMEOUT_S)
  assert bare.returncode == 2
  err = bare.stderr
  assert "unregistered type `mycases.Params`" in err and "pass --project DIR" in err
  assert "Traceback" not in err
