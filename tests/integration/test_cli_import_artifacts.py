"""``jaxport import-artifacts``: blobs a project ships, written with plain ``jax.export`` and
saved with their sample inputs and outputs, imported as golden entries and replayed by a
project that has no case module; each bad input refused with its reason, nothing written."""

import contextlib
import io
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.cli import main
from jaxport.golden._manifest import is_imported_artifact
from jaxport.golden._store import GoldenStore

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
# A blob jax 0.8.0 wrote (the envelope jax 0.11.1 and newer refuse as expired), with its arrays.
OLD_ENTRY = ROOT / "compat_data/cpu/lapack_trsm/release_triangular_solve_f32/2026-11-29_jax-0.8.0"

FAMILY = "serving"
PYPROJECT = '[tool.pytest.ini_options]\njaxport_cases = []\njaxport_store = "golden"\n'
GOLDEN_TESTS = "from jaxport.harness.testing import test_record, test_replay  # noqa: F401\n"
X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def _save(folder: Path, name: str, exp, args, kwargs=None, *, inputs=True, expected=True):
  """``NAME.bin`` and, as a serving pipeline writes them, ``NAME.inputs.npz`` and
  ``NAME.expected.npz`` holding the flattened leaves in order."""
  kwargs = kwargs or {}
  (folder / f"{name}.bin").write_bytes(exp.serialize())
  if inputs:
    np.savez(folder / f"{name}.inputs.npz", *jax.tree_util.tree_leaves((args, kwargs)))
  if expected:
    np.savez(folder / f"{name}.expected.npz",
             *jax.tree_util.tree_leaves(exp.call(*args, **kwargs)))


def _build(folder: Path) -> None:
  """Ten artifacts of plain jax.export, and one file that is not an artifact."""
  folder.mkdir(parents=True)
  spd = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
  b, = export.symbolic_shape("b", constraints=("b >= 2",))
  batch = jax.ShapeDtypeStruct((b, 3), np.float32)
  tree = {"scale": np.float32(2.5) * np.ones(3, np.float32), "x": X}
  y = np.ones((3, 2), np.float32)
  exports = {
      "sin": (export.export(jax.jit(jnp.sin))(X), (X,)),
      "cholesky": (export.export(jax.jit(jnp.linalg.cholesky))(spd), (spd,)),
      "qr": (export.export(jax.jit(lambda a: tuple(jnp.linalg.qr(a))))(spd), (spd,)),
      "batch_double": (export.export(jax.jit(lambda v: v * 2 + 1))(batch), (X,)),
      "by_name": (export.export(jax.jit(lambda d: d["x"] * d["scale"]))(tree), (tree,)),
      "two_platforms": (export.export(jax.jit(jnp.cos), platforms=("cpu", "tpu"))(X), (X,)),
      "argmax": (export.export(jax.jit(lambda v: jnp.argmax(v, axis=1)))(X), (X,)),
      "pair": (export.export(jax.jit(lambda v: (v.sum(0), v.T)))(X), (X,)),
      "matmul": (export.export(jax.jit(jnp.matmul))(X, y), (X, y)),
  }
  for name, (exp, args) in exports.items():
    _save(folder, name, exp, args)
  # No npz files: inputs made from its avals (--dims b=4), outputs computed at import.
  _save(folder, "batch_bare", export.export(jax.jit(lambda v: v.sum(1)))(batch), (X,),
        inputs=False, expected=False)
  (folder / "README.txt").write_text("how these artifacts are made\n")


def _main(*argv: str) -> tuple[int, str, str]:
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main(list(argv))
  return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
  """A project (``jaxport_cases = []``) whose store holds the ten artifacts, imported once;
  (project folder, artifacts folder, the import's exit status and output)."""
  root = tmp_path_factory.mktemp("shipped")
  artifacts = root / "artifacts" / FAMILY
  _build(artifacts)
  project = root / "project"
  project.mkdir()
  (project / "pyproject.toml").write_text(PYPROJECT)
  (project / "test_golden.py").write_text(GOLDEN_TESTS)
  rc, out, err = _main("import-artifacts", str(artifacts), "--project", str(project),
                       "--dims", "b=4")
  return project, artifacts, rc, out + err


def _entries(project: Path) -> dict:
  return {e.entry_id.case_id: e for e in GoldenStore(project / "golden").entries()}


def test_ten_shipped_artifacts_import_with_their_bytes_arrays_and_what_the_blob_tells(shipped):
  project, artifacts, rc, text = shipped
  assert rc == 0, text
  assert "10 imported, 0 exists, 0 refused; 1 other file left alone" in text
  entries = _entries(project)
  assert len(entries) == 10
  for case_id, entry in entries.items():
    m = entry.manifest
    assert is_imported_artifact(m) and m.family == FAMILY and m.platform == "cpu"
    assert entry.blob() == (artifacts / f"{case_id}.bin").read_bytes()
    details = m.imported_from.details
    assert details["imported_on"] == m.record_date.isoformat()
    assert details["envelope_layout"] and details["calling_convention_version"] >= 9
  sin = entries["sin"]
  with np.load(artifacts / "sin.inputs.npz", allow_pickle=False) as npz:
    np.testing.assert_array_equal(sin.inputs()[0], npz["arr_0"])
  assert sin.manifest.imported_from.details["expected_from"] == "sin.expected.npz"
  assert any("lapack" in s.target for s in entries["cholesky"].manifest.custom_call_targets)
  assert entries["two_platforms"].manifest.imported_from.details["platforms"] == "cpu,tpu"
  assert entries["batch_double"].manifest.polymorphic_shapes == ("(b, 3)",)
  # jax.export keeps a constraint in the module's shape assertions, not in the envelope.
  assert entries["batch_double"].manifest.constraints == ()
  bare = entries["batch_bare"].manifest.imported_from.details
  assert bare["inputs_from"] == "made from the input avals (b=4)"
  assert bare["expected_from"] == f"computed at import by jax {jax.__version__}"
  assert [a.shape for a in entries["batch_bare"].inputs()] == [(4, 3)]
  assert len(entries["by_name"].inputs()) == 2 and len(entries["pair"].expected_outputs()) == 2


def test_imported_artifacts_replay_in_a_project_with_no_case_module(shipped, pytester):
  project, _, rc, text = shipped
  assert rc == 0, text
  for name in ("pyproject.toml", "test_golden.py"):
    shutil.copy(project / name, pytester.path / name)
  shutil.copytree(project / "golden", pytester.path / "golden")
  result = pytester.runpytest("-p", "no:cacheprovider")
  out = result.stdout.str()
  assert result.ret == 0, out[-4000:]
  assert "10 entries replayed of 10 present: 10 pass" in out, out[-4000:]
  # No case by design: not orphans, and the checks of today's export are said once.
  assert "no case module registers" not in out
  assert out.count("do not apply to them") == 1
  assert "10 imported artifacts (jaxport import-artifacts)" in out
  assert "current lowering not checked" not in out


def test_the_same_bytes_again_are_already_imported_and_nothing_is_written(shipped, tmp_path):
  project, artifacts, _, _ = shipped
  store = tmp_path / "store"
  assert _main("import-artifacts", str(artifacts / "sin.bin"), "--store", str(store))[0] == 0
  before = sorted(p.relative_to(store) for p in store.rglob("*"))
  rc, out, _ = _main("import-artifacts", str(artifacts / "sin.bin"), "--store", str(store))
  assert rc == 0
  assert "already imported as cpu/serving/sin/" in out and "(the same bytes)" in out
  assert "0 imported, 1 exists, 0 refused" in out
  assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


# --- bad input: each refused with its reason, nothing written for that blob ------------------

def _copy(artifacts: Path, name: str, folder: Path, *, npz: bool = True) -> Path:
  folder.mkdir(parents=True, exist_ok=True)
  shutil.copy(artifacts / f"{name}.bin", folder / f"{name}.bin")
  if npz:
    for kind in ("inputs", "expected"):
      shutil.copy(artifacts / f"{name}.{kind}.npz", folder / f"{name}.{kind}.npz")
  return folder / f"{name}.bin"


def _refused(path: Path, store: Path, *extra: str) -> str:
  rc, out, err = _main("import-artifacts", str(path), "--store", str(store), *extra)
  assert rc == 1, out + err
  assert "Traceback" not in out + err
  assert not store.exists() or not GoldenStore(store).entries()
  return out


def test_a_blob_that_does_not_read_is_refused(tmp_path):
  blob = tmp_path / FAMILY / "model.bin"
  blob.parent.mkdir()
  blob.write_bytes(b"these bytes were never serialized by jax.export")
  out = _refused(blob, tmp_path / "store")
  assert f"refused: {blob}: refused: it does not read as a jax.export artifact" in out
  assert "0 imported, 0 exists, 1 refused" in out


def test_inputs_with_another_leaf_count_are_refused(shipped, tmp_path):
  blob = _copy(shipped[1], "sin", tmp_path / FAMILY)
  np.savez(blob.with_name("sin.inputs.npz"), X, X)
  out = _refused(blob, tmp_path / "store")
  assert "sin.inputs.npz holds 2 arrays, but the blob has 1 input leaves (args[0])" in out


def test_inputs_of_another_shape_are_refused_naming_the_leaf(shipped, tmp_path):
  blob = _copy(shipped[1], "by_name", tmp_path / FAMILY)
  np.savez(blob.with_name("by_name.inputs.npz"), np.ones(4, np.float32), X)
  out = _refused(blob, tmp_path / "store")
  assert ("by_name.inputs.npz: arr_0 (args[0]['scale']) is float32[4], but the blob's aval "
          "is float32[3]") in out


def test_inputs_of_another_dtype_are_refused_naming_the_leaf(shipped, tmp_path):
  blob = _copy(shipped[1], "matmul", tmp_path / FAMILY)
  np.savez(blob.with_name("matmul.inputs.npz"), X, np.ones((3, 2), np.int32))
  out = _refused(blob, tmp_path / "store")
  assert "matmul.inputs.npz: arr_1 (args[1]) is int32[3, 2], but the blob's aval is " \
         "float32[3, 2]" in out


def test_expected_outputs_that_do_not_fit_the_outputs_are_refused(shipped, tmp_path):
  blob = _copy(shipped[1], "pair", tmp_path / FAMILY)
  np.savez(blob.with_name("pair.expected.npz"), np.ones(3, np.float32), np.ones((2, 3)))
  out = _refused(blob, tmp_path / "store")
  assert "pair.expected.npz: arr_1 (output[1]) is float64[2, 3], but the blob's aval is " \
         "float32[3, 2]" in out


def test_a_symbolic_dimension_nothing_binds_is_refused_naming_it(shipped, tmp_path):
  blob = _copy(shipped[1], "batch_bare", tmp_path / FAMILY, npz=False)
  out = _refused(blob, tmp_path / "store")
  assert "its inputs have the symbolic dimension(s) b, which nothing binds" in out
  assert "pass --dims b=4" in out


def test_made_inputs_that_break_a_constraint_are_refused_with_the_shape_assertion(shipped,
                                                                                  tmp_path):
  blob = _copy(shipped[1], "batch_bare", tmp_path / FAMILY, npz=False)
  out = _refused(blob, tmp_path / "store", "--dims", "b=1")
  assert "no batch_bare.expected.npz beside it, and jax" in out
  assert "cannot run it to compute the outputs (ValueError: " in out


def test_an_npz_whose_symbolic_sizes_disagree_is_refused(shipped, tmp_path):
  blob = _copy(shipped[1], "batch_double", tmp_path / FAMILY)
  np.savez(blob.with_name("batch_double.expected.npz"), np.ones((5, 3), np.float32))
  out = _refused(blob, tmp_path / "store")
  assert ("batch_double.expected.npz: arr_0 (output) gives dimension b the size 5 at axis 0, "
          "but the inputs and the leaves before it make b = 2") in out


def test_two_blobs_of_one_stem_are_both_refused(shipped, tmp_path):
  one = _copy(shipped[1], "sin", tmp_path / "a")
  two = _copy(shipped[1], "sin", tmp_path / "b")
  rc, out, _ = _main("import-artifacts", str(tmp_path / "a"), str(tmp_path / "b"),
                     "--store", str(tmp_path / "store"), "--family", FAMILY)
  assert rc == 1
  assert f"{one}: refused: its name gives the case id 'sin', as {two} does" in out
  assert f"{two}: refused: its name gives the case id 'sin', as {one} does" in out
  assert not (tmp_path / "store").exists()


def test_an_id_the_store_holds_with_other_bytes_is_refused(shipped, tmp_path):
  store = tmp_path / "store"
  first = _copy(shipped[1], "sin", tmp_path / "old" / FAMILY)
  assert _main("import-artifacts", str(first), "--store", str(store))[0] == 0
  before = sorted(p.relative_to(store) for p in store.rglob("*"))
  other = _copy(shipped[1], "cholesky", tmp_path / "new" / FAMILY)
  other.rename(other.with_name("sin.bin"))
  rc, out, _ = _main("import-artifacts", str(other.with_name("sin.bin")), "--store", str(store))
  assert rc == 1
  assert "refused: the store already holds cpu/serving/sin/" in out
  assert "with other bytes; shipped bytes are never replaced" in out
  assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_some_refused_exit_1_and_the_others_are_imported(shipped, tmp_path):
  folder = tmp_path / FAMILY
  _copy(shipped[1], "sin", folder)
  (folder / "broken.bin").write_bytes(b"\x00" * 16)
  rc, out, _ = _main("import-artifacts", str(folder), "--store", str(tmp_path / "store"))
  assert rc == 1
  assert "1 imported, 0 exists, 1 refused; 0 other files left alone" in out
  assert [e.entry_id.case_id for e in GoldenStore(tmp_path / "store").entries()] == ["sin"]


@pytest.mark.parametrize("where", [(), ("--store", "s", "--project", "p")])
def test_naming_neither_or_both_stores_is_a_usage_error(where, tmp_path, capsys):
  with pytest.raises(SystemExit) as exc:
    main(["import-artifacts", str(tmp_path), *where])
  assert exc.value.code == 2
  assert "either --store DIR or --project DIR (not both)" in capsys.readouterr().err


def test_bisect_of_a_blob_over_one_release_checks_it_and_exits_by_its_verdict(shipped, tmp_path):
  artifacts, release = shipped[1], jax.__version__
  args = ["bisect", "--blob", str(artifacts / "sin.bin"), "--inputs",
          str(artifacts / "sin.inputs.npz"), "--releases", f"{release}..{release}"]
  rc, out, err = _main(*args, "--expected", str(artifacts / "sin.expected.npz"))
  assert rc == 0, out + err
  assert out == f"{artifacts / 'sin.bin'}: checked under jax {release}: pass: it loads, runs " \
                "and reproduces its outputs\n"
  assert "wrote golden entry" not in err and "bisect/blob" not in out + err
  np.savez(tmp_path / "wrong.npz", np.zeros((2, 3), np.float32))
  rc, out, err = _main(*args, "--expected", str(tmp_path / "wrong.npz"))
  assert rc == 1, out + err
  assert f"checked under jax {release}: fail at compare: " in out
  assert "elements differ beyond" in out


def test_a_shipped_envelope_jax_refuses_fails_naming_upgrade_and_its_upgraded_blob_passes(
    pytester):
  folder = pytester.path / "artifacts" / "legacy"
  folder.mkdir(parents=True)
  for stem in ("trsm", "trsm_upgraded"):
    for name, suffix in (("inputs.npz", ".inputs.npz"), ("expected.npz", ".expected.npz")):
      shutil.copy(OLD_ENTRY / name, folder / f"{stem}{suffix}")
  shutil.copy(OLD_ENTRY / "exported.bin", folder / "trsm.bin")
  rc, out, err = _main("upgrade", str(folder / "trsm.bin"), "-o", str(folder / "trsm_upgraded.bin"))
  assert rc == 0, out + err
  (pytester.path / "pyproject.toml").write_text(PYPROJECT)
  (pytester.path / "test_golden.py").write_text(GOLDEN_TESTS)
  rc, out, err = _main("import-artifacts", str(folder), "--project", str(pytester.path))
  assert rc == 0 and "2 imported" in out, out + err
  result = pytester.runpytest("-p", "no:cacheprovider")
  text = result.stdout.str()
  if jax_envelope.REFUSES_EXPIRED:  # jax 0.11.1 and newer: the shipped bytes do not load
    assert "2 entries replayed of 2 present: 1 pass" in text and "1 fail" in text, text[-4000:]
    assert "FAIL cpu/legacy/trsm/" in text
    assert (f"[compatibility_break] jaxport reader: jax {jax.__version__} refuses this shipped "
            "artifact as it is (envelope layout short-device-count") in text
    assert "the rewrite `jaxport upgrade BLOB -o NEW.bin` makes" in text
    assert result.ret == 1
  else:  # an older jax reads the envelope as shipped
    assert "2 entries replayed of 2 present: 2 pass" in text, text[-4000:]
    assert "refuses this shipped artifact" not in text and result.ret == 0


def test_an_npz_holding_pickled_objects_is_refused_without_unpickling(shipped, tmp_path):
  blob = _copy(shipped[1], "sin", tmp_path / FAMILY)
  np.savez(blob.with_name("sin.inputs.npz"), np.array([object()], dtype=object))
  out = _refused(blob, tmp_path / "store")
  assert "sin.inputs.npz: member arr_0.npy cannot be read without unpickling" in out


def test_an_imported_entry_is_checked_by_bisect_over_one_release(shipped):
  project, release = shipped[0], jax.__version__
  entry = _entries(project)["cholesky"]
  rc, out, err = _main("bisect", str(entry.entry_id), "--root", str(project / "golden"),
                       "--releases", f"{release}..{release}")
  assert rc == 0, out + err
  assert out == f"{entry.entry_id}: checked under jax {release}: pass: it loads, runs and " \
                "reproduces its outputs\n"


def test_a_blob_exported_only_for_another_platform_is_checked_without_running(tmp_path):
  folder = tmp_path / FAMILY
  folder.mkdir()
  exp = export.export(jax.jit(jnp.sin), platforms=("tpu",))(X)
  (folder / "tpu_sin.bin").write_bytes(exp.serialize())
  rc, out, err = _main("import-artifacts", str(folder), "--store", str(tmp_path / "store"))
  assert rc == 0, out + err
  (entry,) = GoldenStore(tmp_path / "store").entries()
  assert str(entry.entry_id).startswith("cpu/tpu_serving/tpu_sin/")
  assert entry.manifest.lowering_only and entry.expected_outputs() is None
  assert entry.manifest.imported_from.details["expected_from"].startswith(
      "none: exported for ['tpu'], checked on cpu without running")
