"""`jaxport import-jax-testdata`: jax's golden Python files read without executing them."""

import datetime
import json
import re
from pathlib import Path

import jax.export
import numpy as np
import pytest

import jaxport
from jaxport.golden import EntryId
from jaxport.cli import main
from jaxport.corpus import _jax_testdata
from jaxport.errors import GoldenDataError
from jaxport.golden._store import GoldenStore

JAX_DATA = (Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_data")


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def test_cpu_files_from_the_jax_wheel_import_and_replay(tmp_path, capsys):
  out_dir = tmp_path / "compat_data"
  sources = [str(JAX_DATA / "cpu_qr_lapack_geqrf.py"), str(JAX_DATA / "cpu_cholesky_lapack_potrf.py")]
  rc, out, err = run(capsys, "import-jax-testdata", *sources, "--out", str(out_dir), "--json")
  result = json.loads(out)
  assert rc == 0 and len(result["imported"]) == 8 and result["failed"] == []
  assert "reading" in err
  store = GoldenStore(out_dir)
  entries = store.entries()
  assert [str(e.entry_id) for e in entries][:2] == [
      "cpu/cholesky_lapack_potrf/jax_c128/2024-05-31_jax-unknown",
      "cpu/cholesky_lapack_potrf/jax_c64/2024-05-31_jax-unknown"]
  f32 = store.entry(EntryId.parse("cpu/qr_lapack_geqrf/jax_f32/2025-04-02_jax-unknown"))
  f32.verify()
  m = f32.manifest
  assert m.producer.jax is None and m.producer.numpy is None
  assert m.imported_from.source == "jax:cpu_qr_lapack_geqrf.py:data_2025_04_02['f32']"
  assert m.imported_from.details["serialized_date"] == "2025-04-02"
  assert m.imported_from.details["testdata_version"] == 1
  assert m.calling_convention_version == 9 and m.platform == "cpu"
  assert [s.target for s in m.custom_call_targets] == ["lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"]
  assert m.custom_call_targets[0].operand_types == ("tensor<3x3xf32>",)
  assert f32.module_text().lstrip().startswith("module @jit__lambda_")
  # The blob is a real Exported: both readers run it and reproduce jax's recorded outputs.
  for exp in (jaxport.deserialize(bytearray(f32.blob())), jax.export.deserialize(bytearray(f32.blob()))):
    assert exp.platforms == ("cpu",)
    got = exp.call(*f32.inputs())
    for g, w in zip(got, f32.expected_outputs()):
      np.testing.assert_allclose(np.asarray(g), w, rtol=m.comparison.rtol, atol=m.comparison.atol)


def test_reimport_leaves_entries_unchanged_and_platform_filter(tmp_path, capsys):
  out_dir = tmp_path / "compat_data"
  src = str(JAX_DATA / "cpu_triangular_solve_blas_trsm.py")
  assert run(capsys, "import-jax-testdata", src, "--out", str(out_dir))[0] == 0
  before = {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
  rc, out, _ = run(capsys, "import-jax-testdata", src, "--out", str(out_dir))
  assert rc == 0 and "0 imported, 4 exists" in out
  assert {p: p.read_bytes() for p in out_dir.rglob("*") if p.is_file()} == before
  rc, out, _ = run(capsys, "import-jax-testdata", src, "--out", str(tmp_path / "other"),
                   "--platform", "tpu")
  assert rc == 0 and "0 imported" in out and not (tmp_path / "other").exists()


def test_tpu_dataset_imports_as_a_tpu_entry(tmp_path, capsys):
  out_dir = tmp_path / "compat_data"
  rc, out, _ = run(capsys, "import-jax-testdata", str(JAX_DATA / "tpu_Qr.py"), "--out", str(out_dir),
                   "--mode", "qr", "--rtol", "0.001", "--atol", "0")
  assert rc == 0, out
  (entry,) = GoldenStore(out_dir).entries(platform="tpu")
  assert entry.manifest.comparison.mode == "qr" and entry.manifest.comparison.rtol == 0.001
  assert "Qr" in [s.target for s in entry.manifest.custom_call_targets]


def test_shape_polymorphic_datasets_import_with_the_specs_jax_states(tmp_path, capsys):
  rc, out, _ = run(capsys, "import-jax-testdata", str(JAX_DATA / "export_with_memory_space.py"),
                   str(JAX_DATA / "stablehlo_dynamic_top_k.py"),
                   str(JAX_DATA / "stablehlo_dynamic_approx_top_k.py"), "--out", str(tmp_path / "cd"))
  assert rc == 0 and "skipped: export_with_memory_space.py: serializations holds no back-compat dataset" in out
  assert "3 imported" in out
  store = GoldenStore(tmp_path / "cd")
  approx = store.entry(EntryId.parse("cpu/stablehlo_dynamic_approx_top_k/jax/2024-05-30_jax-unknown")).manifest
  assert approx.polymorphic_shapes == ("b + 4,",) and approx.comparison.mode == "top_k"
  assert "test_dynamic_approx_top_k" in approx.imported_from.details["polymorphic_shapes_source"]
  top_k = store.entry(EntryId.parse("cpu/stablehlo_dynamic_top_k/jax/2023-08-11_jax-unknown"))
  assert top_k.manifest.polymorphic_shapes == ("_, b",)
  exp = jaxport.deserialize(top_k.blob())
  assert [str(d) for d in exp.in_avals[0].shape] == ["4", "b"]


def test_checkers_are_chosen_per_dataset_and_mode_overrides(tmp_path, capsys):
  srcs = [str(JAX_DATA / f) for f in ("cpu_eig_lapack_geev.py", "cpu_triangular_solve_blas_trsm.py")]
  assert run(capsys, "import-jax-testdata", *srcs, "--out", str(tmp_path / "cd"))[0] == 0
  modes = {(e.manifest.family, e.manifest.comparison.mode) for e in GoldenStore(tmp_path / "cd").entries()}
  assert modes == {("eig_lapack_geev", "jax_eig"), ("triangular_solve_blas_trsm", "allclose")}
  eig = GoldenStore(tmp_path / "cd").entries()[0].manifest.imported_from.details
  assert "phase" in eig["checker_reason"] and eig["dataset_op"] == "eig"
  assert run(capsys, "import-jax-testdata", srcs[0], "--out", str(tmp_path / "o"), "--mode", "allclose")[0] == 0
  assert {e.manifest.comparison.mode for e in GoldenStore(tmp_path / "o").entries()} == {"allclose"}


MALICIOUS = [
    ("x = __import__('os').system('touch {marker}')\n", "cpu_evil.py:3: call of .*__import__.* is not allowed"),
    ("data_2024_01_01 = dict(inputs=(array([1], dtype=object),))\n", "dtype 'object' is not a numeric"),
    ("data_2024_01_01 = dict(inputs=(array([1]).tofile('{marker}'),))\n", "unsupported expression Attribute|call of"),
    ("def f():\n  pass\n", "unsupported statement FunctionDef"),
    ("data = {{}}\ndata[open('{marker}', 'w')] = 1\n", "unsupported statement Assign"),
    ("x = (lambda: 1)()\n", "call of"),
    ("x = 2 * 3\n", "unsupported expression BinOp|arithmetic"),
    ("x = array([1, ...])\n", "elided array"),
]


@pytest.mark.parametrize("code,match", MALICIOUS)
def test_code_in_a_data_file_is_refused_not_run(tmp_path, capsys, code, match):
  marker = tmp_path / "pwned"
  src = tmp_path / "cpu_evil.py"
  src.write_text("import numpy as np\narray = np.array\n" + code.format(marker=marker))
  rc, out, _ = run(capsys, "import-jax-testdata", str(src), "--out", str(tmp_path / "cd"))
  assert rc == 1
  assert "failed: cpu_evil.py: cpu_evil.py:" in out
  assert any(re.search(m, out) for m in match.split("|")), out
  assert not marker.exists()
  assert not (tmp_path / "cd").exists()


def test_literal_reader_handles_jax_array_reprs(tmp_path):
  src = tmp_path / "cpu_sample.py"
  src.write_text(
      "import datetime\nimport numpy as np\narray = np.array\nfloat32 = np.float32\n"
      "data_2025_01_02 = {'a': {}}\n"
      "data_2025_01_02['a']['c64'] = dict(platform='cpu', serialized_date=datetime.date(2025, 1, 2),\n"
      "    inputs=(array([[0.+1.j, -2.5-0.j]], dtype=complex64), array([nan, -inf], dtype=float32),\n"
      "            array(7, dtype=np.int32), float32(1.5)),\n"
      "    expected_outputs=(array([True, False]),), mlir_module_serialized=bytearray(b'ML'))\n")
  (ds,), notes = _jax_testdata.read_file(src)
  assert notes == [] and ds.variable == "data_2025_01_02" and ds.keys == ("a", "c64")
  x, y, z, w = ds.fields["inputs"]
  assert x.dtype == np.complex64 and x.tolist() == [[1j, -2.5 + 0j]]
  assert y.dtype == np.float32 and np.isnan(y[0]) and y[1] == -np.inf
  assert z.dtype == np.int32 and z.shape == () and w == np.float32(1.5)
  assert ds.fields["serialized_date"] == datetime.date(2025, 1, 2)
  assert ds.fields["mlir_module_serialized"] == b"ML"
  assert _jax_testdata.case_names(ds) == ("sample", "jax_a_c64")
  with pytest.raises(GoldenDataError, match=r"missing field\(s\) \['testdata_version'"):
    _jax_testdata.check_fields(ds)


def test_every_file_in_the_jax_wheel_parses_without_code(tmp_path):
  files = sorted(JAX_DATA.rglob("*.py"))
  assert len(files) >= 40  # 41 in jax 0.9.0, 51 in 0.10.2
  count = 0
  for f in files:
    datasets, _ = _jax_testdata.read_file(f)
    for ds in datasets:
      _jax_testdata.check_fields(ds)
      count += 1
  assert count >= 2 * len(files)  # 107 datasets in jax 0.9.0's wheel, 142 in 0.10.2's
