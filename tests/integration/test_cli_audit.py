"""`jaxport audit`: stability, expiry, integrity and signature drift, text and JSON."""

import collections
import datetime
import json
import os
import re
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _cli_helpers import RECORD_DATE, qr_exported, qr_input, qr_rewritten, write_qr_entry
import jaxport
from jaxport.cli import _relower, main
from jaxport.golden._manifest import Comparison, Manifest, Producer
from jaxport.golden._store import GoldenStore
from jaxport.serde import _read

TODAY = RECORD_DATE + datetime.timedelta(days=10)


@pytest.fixture
def store(tmp_path):
  return GoldenStore(tmp_path / "compat_data")


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def test_clean_store_passes_and_reports_targets_and_expiry(store, capsys):
  write_qr_entry(store)
  rc, out, err = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 0
  assert f"ok      cpu/qr/qr_f32/2026-06-01_jax-{jax.__version__}" in out
  assert "target lapack_sgeqrf_ffi: cpu: stable" in out
  assert "expires in 170 days (180-day window)" in out
  assert "1 artifact(s) audited, 0 with problems." in out
  assert "auditing 1/1" in err


def test_json_output_and_window_days(store, capsys):
  write_qr_entry(store)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--window-days", "30", "--no-drift", "--json")
  report = json.loads(out)
  (art,) = report["artifacts"]
  assert rc == 0 and report["ok"] is True and report["window_days"] == 30
  assert art["days_to_expiry"] == 20
  assert art["warnings"] == ["expires in 20 days (window 30 days)"]
  assert {t["target"]: t["status_by_platform"] for t in art["custom_call_targets"]} == {
      "lapack_sgeqrf_ffi": {"cpu": "stable"}, "lapack_sorgqr_ffi": {"cpu": "stable"}}


def test_audit_reads_each_file_of_an_entry_once(store, capsys, monkeypatch):
  from jaxport.golden import _entry
  from jaxport.golden._manifest import Manifest as ManifestRecord
  entry = write_qr_entry(store)
  files = {str(entry.path / name) for name in entry.manifest.files} | {
      str(entry.path / "manifest.json")}
  reads, parses = collections.Counter(), []
  real_read, real_parse = _entry.read_bounded, ManifestRecord.from_json

  def counted_read(path, *args, **kwargs):
    reads[str(path)] += 1
    return real_read(path, *args, **kwargs)

  def counted_parse(*args, **kwargs):
    parses.append(1)
    return real_parse(*args, **kwargs)

  monkeypatch.setattr(_entry, "read_bounded", counted_read)
  monkeypatch.setattr(ManifestRecord, "from_json", staticmethod(counted_parse))
  rc, _, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 0
  assert {path: reads[path] for path in files} == dict.fromkeys(files, 1)
  assert len(parses) == 1


def test_expired_entry_warns_as_in_the_harness_and_fails_under_strict(store, capsys):
  write_qr_entry(store)
  late = RECORD_DATE + datetime.timedelta(days=200)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", late.isoformat(), "--no-drift")
  assert rc == 0 and "ok      cpu/qr/qr_f32" in out
  assert f"warning: recorded {RECORD_DATE}, 20 days past the 180-day compat window" in out
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", late.isoformat(), "--no-drift",
                   "--compat-strict")
  assert rc == 1
  assert "PROBLEM cpu/qr/qr_f32" in out
  assert f"problem: recorded {RECORD_DATE}, 20 days past the 180-day compat window" in out
  assert "jaxport prune" in out


@pytest.mark.parametrize("comparison, named", [
    (Comparison("none"), "checker 'none' on an entry that is run passes any outputs"),
    (Comparison("allclose", 1.0, 0.0), "rtol 1 lets an output differ"),
    (Comparison("allclose", 0.0, 1e300), "atol 1e+300 is as large as the recorded outputs"),
], ids=["checker none", "rtol", "atol"])
def test_a_comparison_that_passes_any_outputs_is_a_problem(store, capsys, comparison, named):
  write_qr_entry(store, comparison=comparison)  # a signed entry: the digest is unkeyed
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 1
  assert "PROBLEM cpu/qr/qr_f32" in out and f"the comparison is vacuous: {named}" in out


def test_tampered_entry_is_a_problem_naming_the_file(store, capsys):
  entry = write_qr_entry(store)
  (entry.path / "exported.bin").write_bytes(b"\x00" + (entry.path / "exported.bin").read_bytes()[1:])
  rc, out, _ = run(capsys, "audit", str(entry.path), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 1
  assert "exported.bin: sha256 mismatch" in out


def test_target_without_guarantee_warns_as_in_the_harness_and_fails_under_strict(store, capsys):
  blob, sigs = qr_rewritten(_private_kernel)
  write_qr_entry(store, signatures=sigs, blob=blob)
  for strict, rc_expected, line in ((False, 0, "warning"), (True, 1, "problem")):
    rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift",
                     *(["--compat-strict"] if strict else []))
    assert rc == rc_expected, out
    assert "target my_private_kernel: cpu: no compatibility guarantee" in out
    assert f"{line}: target my_private_kernel is not in the stable table of cpu" in out


def _private_kernel(text: str) -> str:
  """QR's module text with its orgqr call renamed to a target no table lists."""
  return text.replace("@lapack_sorgqr_ffi(", "@my_private_kernel(")


def test_bare_blob_and_directory_of_blobs(tmp_path, capsys):
  blobs = tmp_path / "blobs"
  (blobs / "nested").mkdir(parents=True)
  (blobs / "nested" / "qr.bin").write_bytes(bytes(qr_exported().serialize()))
  (blobs / "broken.bin").write_bytes(b"not a flatbuffer")
  (blobs / "notes.txt").write_text("ignored")
  rc, out, _ = run(capsys, "audit", str(blobs / "nested" / "qr.bin"), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["kind"] == "blob" and art["platforms"] == ["cpu"]
  assert [t["target"] for t in art["custom_call_targets"]] == ["lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"]
  assert art["days_to_expiry"] is None
  rc, out, _ = run(capsys, "audit", str(blobs), "--json")
  arts = {a["path"].rsplit("/", 1)[1]: a for a in json.loads(out)["artifacts"]}
  assert rc == 1 and sorted(arts) == ["broken.bin", "qr.bin"]
  assert arts["qr.bin"]["ok"] and not arts["broken.bin"]["ok"]
  assert "cannot read the blob" in arts["broken.bin"]["problems"][0]


def test_missing_path_and_empty_directory_are_errors(tmp_path, capsys):
  rc, _, err = run(capsys, "audit", str(tmp_path / "nope"))
  assert rc == 2 and "no such file or directory" in err
  rc, _, err = run(capsys, "audit", str(tmp_path))
  assert rc == 2 and "no artifacts found" in err


def _case_module(tmp_path, monkeypatch, name: str, fun: str = "lambda x: tuple(jnp.linalg.qr(x))",
                 inputs: str = "(qr_input(),)", case_id: str = "qr_f32") -> str:
  """A case module ``name`` on the path, registering one case ``case_id`` (``fun`` on ``inputs``,
  both Python source); its name, for ``--cases``."""
  (tmp_path / f"{name}.py").write_text(textwrap.dedent(f"""
      import jax.numpy as jnp
      import numpy as np
      from _cli_helpers import qr_input
      from jaxport.harness import Case

      def cases():
        return [Case({case_id!r}, "qr", {fun}, lambda: ({inputs}, {{}}))]
      """))
  _importable_from(tmp_path, monkeypatch)
  monkeypatch.delitem(sys.modules, name, raising=False)
  return name


def _importable_from(folder, monkeypatch) -> None:
  """``folder`` (and this test folder, whose helpers case modules import) on the PYTHONPATH of
  the processes audit starts: the case modules are imported in its module parser child."""
  paths = [str(folder), str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
  monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def test_drift_against_todays_lowering(store, capsys, monkeypatch, tmp_path):
  write_qr_entry(store)
  same = _case_module(tmp_path, monkeypatch, "audit_cases_same")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--cases", same, "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["drift"] == {"checked": True, "differences": []}

  # Today the case lowers to a 4x4 QR: same targets, other operand types.
  bigger = _case_module(tmp_path, monkeypatch, "audit_cases_bigger",
                        inputs="(np.eye(4, dtype=np.float32),)")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--cases", bigger)
  assert rc == 1
  assert "signature drift against today's lowering: target lapack_sgeqrf_ffi changed signature" in out
  assert "tensor<4x4xf32>" in out and "tensor<3x3xf32>" in out

  # Today's lowering no longer calls LAPACK at all.
  gone = _case_module(tmp_path, monkeypatch, "audit_cases_gone", fun="lambda x: (x, x)")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--cases", gone)
  assert rc == 1 and "target lapack_sorgqr_ffi was recorded but the current lowering no longer emits it" in out


def test_partitioner_metadata_drift_is_judged_as_any_lowering_difference(store, capsys,
                                                                        monkeypatch, tmp_path):
  # The entry's module (and so its manifest) lacks the partitioner's rules that today's
  # lowering emits: the replay's judge makes it lowering drift, and so does the audit.
  blob, sigs = qr_rewritten(lambda text: re.sub(
      r", sdy\.sharding_rule = #sdy\.op_sharding_rule<.*?, custom>", "", text))
  assert all("sdy.sharding_rule" not in s.attributes for s in sigs)
  write_qr_entry(store, signatures=sigs, blob=blob)
  cases = _case_module(tmp_path, monkeypatch, "audit_cases_metadata")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--cases", cases, "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 1 and art["status"] == "fail"
  assert len(art["drift"]["differences"]) == 2
  assert all("changed attributes ['sdy.sharding_rule']; types unchanged" in d
             for d in art["drift"]["differences"])
  assert {f["kind"] for f in art["findings"]} == {"lowering_drift"}
  assert not any("partitioner metadata only" in w for w in art["warnings"])


def test_entry_lowered_for_another_platform_is_judged_on_that_platform(store, capsys):
  import jax
  import jaxport
  exp = jaxport.export(jax.jit(lambda x: jnp.linalg.cholesky(x)), platforms=("cuda",))(
      jax.ShapeDtypeStruct((4, 4), np.float32))
  from jaxport.golden import _signatures
  from jaxport.golden._manifest import Comparison, Manifest, Producer
  m = Manifest(case_id="cuda_cholesky", family="lowering_cuda", platform="cpu",
               record_date=RECORD_DATE, producer=Producer.current(),
               calling_convention_version=exp.calling_convention_version, serialization_version=3,
               custom_call_targets=_signatures.signatures(exp.mlir_module_serialized),
               polymorphic_shapes=None, constraints=None, lowering_only=True,
               comparison=Comparison("none"))
  store.write_entry(m, bytes(exp.serialize()), [np.eye(4, dtype=np.float32)], None, exp.mlir_module())
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 0, out
  assert "platforms: cuda (recorded on a cpu host)" in out
  assert "target cusolver_potrf_ffi: cuda: stable" in out


def test_drift_not_checked_without_a_case(store, capsys, monkeypatch, tmp_path):
  write_qr_entry(store, case_id="not_a_registered_case")
  cases = _case_module(tmp_path, monkeypatch, "audit_cases_other")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--cases", cases)
  assert rc == 0
  assert ("drift: not checked (no case 'not_a_registered_case' in the case modules named with "
          "--cases)") in out


def test_drift_not_checked_without_a_named_case_module(store, capsys, monkeypatch):
  write_qr_entry(store)
  def imported(self):
    raise AssertionError("audit imported case modules nobody named")
  monkeypatch.setattr(_relower.CaseRegistry, "_loaded", property(imported))
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat())
  assert rc == 0 and "drift: not checked (no case module named: pass --cases MODULE" in out


def test_a_case_module_that_cannot_be_imported_is_an_error_not_a_pass(store, capsys):
  write_qr_entry(store)
  rc, out, err = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                     "--cases", "no_such_case_module_anywhere")
  assert rc == 2 and out == ""
  assert ("jaxport audit: error: importing the case modules named with --cases "
          "['no_such_case_module_anywhere'] failed: case module 'no_such_case_module_anywhere' "
          "cannot be imported") in err
  assert "pass --project DIR to import them from the project's root and pytest pythonpath" in err


def test_a_case_module_that_raises_is_an_error_not_a_pass(store, capsys, monkeypatch, tmp_path):
  write_qr_entry(store)
  (tmp_path / "audit_cases_broken.py").write_text("raise ImportError('no module named mylib')\n")
  _importable_from(tmp_path, monkeypatch)
  rc, out, err = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                     "--cases", "audit_cases_broken")
  assert rc == 2 and out == "" and "no module named mylib" in err
  assert "importing the case modules named with --cases ['audit_cases_broken'] failed" in err


def test_several_case_modules_are_searched(store, capsys, monkeypatch, tmp_path):
  write_qr_entry(store)
  other = _case_module(tmp_path, monkeypatch, "audit_cases_first", case_id="another_case")
  qr = _case_module(tmp_path, monkeypatch, "audit_cases_second")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--cases", other, "--cases", qr, "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["drift"] == {"checked": True, "differences": []}


# --- the project's own targets: declared stable, or allowed by the artifact itself ----------

def _pivoted_qr_blob(target: str = "lapack_sgeqp3_ffi") -> bytes:
  """A blob calling LAPACK's pivoted QR, a cpu target off jax's stable table, exported with
  ``DisabledSafetyCheck.custom_call(target)``."""
  import jaxport
  fun = jax.jit(lambda x: jax.lax.linalg.qr(x, pivoting=True, full_matrices=False))
  exp = jaxport.export(fun, disabled_checks=[jaxport.DisabledSafetyCheck.custom_call(target)])(
      jax.ShapeDtypeStruct((4, 3), np.float32))
  return bytes(exp.serialize())


@pytest.mark.parametrize("check", ["lapack_sgeqp3_ffi", "ALL"])
def test_a_target_the_blob_allows_is_explained_not_a_violation(tmp_path, capsys, check):
  blob = tmp_path / "pivoted_qr.bin"
  blob.write_bytes(_pivoted_qr_blob(check))
  rc, out, _ = run(capsys, "audit", str(blob), "--json")
  (art,) = json.loads(out)["artifacts"]
  targets = {t["target"]: t for t in art["custom_call_targets"]}
  assert rc == 0 and art["problems"] == []
  assert targets["lapack_sgeqp3_ffi"]["status_by_platform"] == {
      "cpu": "allowed by the artifact's disabled_safety_checks"}
  assert targets["lapack_sorgqr_ffi"]["status_by_platform"] == {"cpu": "stable"}
  (warning,) = art["warnings"]
  assert warning.startswith("custom-call target lapack_sgeqp3_ffi: neither jax's stable table")
  assert f"DisabledSafetyCheck.custom_call({check!r})" in warning and "--stable-targets" in warning
  rc, out, _ = run(capsys, "audit", str(blob))
  assert "target lapack_sgeqp3_ffi: cpu: allowed by the artifact's disabled_safety_checks" in out


def test_declared_stable_targets_count_as_stable(store, capsys, tmp_path):
  blob, sigs = qr_rewritten(_private_kernel)
  write_qr_entry(store, signatures=sigs, blob=blob)
  for key in ("cpu", "any"):
    declared = tmp_path / f"targets-{key}.json"
    declared.write_text(json.dumps({key: ["my_private_kernel"]}))
    rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift",
                     "--stable-targets", str(declared))
    assert rc == 0, out
    assert "target my_private_kernel: cpu: declared stable by the project" in out
  # Declared for another platform only: no guarantee on this one, and the problem says how to
  # declare it.
  declared = tmp_path / "targets-tpu.json"
  declared.write_text(json.dumps({"tpu": ["my_private_kernel"]}))
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift",
                   "--stable-targets", str(declared), "--compat-strict")
  assert rc == 1 and "target my_private_kernel: cpu: no compatibility guarantee" in out
  assert "list it in a stable-targets file (--stable-targets FILE)" in out


@pytest.mark.parametrize("text,match", [
    ("not json", "invalid JSON at line 1 column 1"),
    ('{"gpu": ["x"]}', "unknown key 'gpu'"),
    ('{"cpu": "x"}', "cpu: expected list, got 'x'"),
])
def test_a_bad_stable_targets_file_is_an_error_naming_it(store, capsys, tmp_path, text, match):
  write_qr_entry(store)
  bad = tmp_path / "targets.json"
  bad.write_text(text)
  rc, out, err = run(capsys, "audit", str(store.root), "--stable-targets", str(bad))
  assert rc == 2 and out == ""
  assert f"stable-targets file {bad}" in err or str(bad) in err
  assert match in err


# --- a project named with --project: its pytest configuration, as the harness reads it ------

PROJECT_CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case


def cases():
  x = np.arange(9, dtype=np.float32).reshape(3, 3) + np.eye(3, dtype=np.float32)
  return [Case("qr_f32", "qr", lambda x: tuple(jnp.linalg.qr(x)), lambda: ((x,), {}))]
"""
PROJECT_CONFIG = """
[tool.pytest.ini_options]
jaxport_cases = ["mycases"]
jaxport_store = "golden"
"""


@pytest.fixture
def project(tmp_path):
  """A downstream project in ``tmp_path/proj``: ``mycases`` (not importable from here) and its
  store ``golden`` with one entry of that case."""
  root = tmp_path / "proj"
  root.mkdir()
  (root / "pyproject.toml").write_text(PROJECT_CONFIG)
  (root / "mycases.py").write_text(PROJECT_CASES)
  write_qr_entry(GoldenStore(root / "golden"))
  sys.modules.pop("mycases", None)
  yield root
  sys.modules.pop("mycases", None)


def test_project_audit_reads_its_store_and_imports_its_cases_from_its_root(project, capsys):
  # Named by hand, the project's case module is not importable from here: an error, not
  # "0 with problems" with drift never checked.
  rc, out, err = run(capsys, "audit", str(project / "golden"), "--cases", "mycases", "--today",
                     TODAY.isoformat())
  assert rc == 2 and out == ""
  assert "case module 'mycases' cannot be imported" in err and "--project DIR" in err

  rc, out, err = run(capsys, "audit", "--project", str(project), "--today", TODAY.isoformat(),
                     "--json")
  report = json.loads(out)
  (art,) = report["artifacts"]
  assert rc == 0 and report["ok"] is True, err
  assert art["path"].startswith(str(project / "golden"))
  assert art["drift"] == {"checked": True, "differences": []}
  assert str(project) not in sys.path, "the project's root stays on sys.path after the audit"


def test_project_audit_without_drift_still_imports_the_projects_cases(project, capsys):
  # The case modules register the project's pytree and effect types, which reading its
  # artifacts may need, whether or not drift is checked: the module parser child imports
  # them, and one that does not import stops the audit.
  rc, out, err = run(capsys, "audit", "--project", str(project), "--no-drift", "--today",
                     TODAY.isoformat(), "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["drift"]["checked"] is False, err
  (project / "mycases.py").write_text("raise ImportError('no module named mylib')\n")
  rc, out, err = run(capsys, "audit", "--project", str(project), "--no-drift", "--today",
                     TODAY.isoformat())
  assert rc == 2 and out == "" and "no module named mylib" in err


def test_case_code_runs_only_in_a_worker_not_in_the_commands_process(store, capsys,
                                                                   monkeypatch, tmp_path):
  write_qr_entry(store)
  bigger = _case_module(tmp_path, monkeypatch, "audit_cases_elsewhere",
                        inputs="(np.eye(4, dtype=np.float32),)")
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--cases", bigger, "--json")
  (art,) = json.loads(out)["artifacts"]
  # Today's lowering was compared (it differs), and the case module was never imported here.
  assert rc == 1 and art["drift"]["checked"] is True and art["drift"]["differences"]
  assert bigger not in sys.modules


TREE_CASES = """
import collections

import jax
import jax.numpy as jnp

import jaxport
from jaxport.harness import Case

Pair = collections.namedtuple("Pair", ["total", "largest"])
jaxport.register_namedtuple_serialization(Pair, serialized_name="treecases.Pair",
                                          jax_export=jax.export)


def summarize(x):
  return Pair(jnp.sum(x), jnp.max(x))


def cases():
  return []
"""


def test_project_audit_reads_entries_of_the_projects_pytree_types(tmp_path, capsys):
  # An entry whose output is a pytree type of the project's own reads only where the case
  # module registered it: in the audit's parser child too, which says which releases run it.
  root = tmp_path / "treeproj"
  root.mkdir()
  (root / "pyproject.toml").write_text(
      PROJECT_CONFIG.replace('"mycases"', '"treecases"'))
  (root / "treecases.py").write_text(TREE_CASES)
  sys.path.insert(0, str(root))
  try:
    import treecases
  finally:
    sys.path.remove(str(root))
  try:
    x = np.arange(6, dtype=np.float32)
    exp = jaxport.export(jax.jit(treecases.summarize))(x)
    blob = bytes(exp.serialize())
    manifest = Manifest(
        case_id="summarize", family="tree", platform="cpu", record_date=RECORD_DATE,
        producer=Producer.current(), calling_convention_version=exp.calling_convention_version,
        serialization_version=_read.read_serialization_version(blob), custom_call_targets=(),
        polymorphic_shapes=None, constraints=None, lowering_only=False,
        comparison=Comparison("allclose", 1e-5, 1e-6))
    expected = [np.asarray(o) for o in jax.tree.leaves(treecases.summarize(x))]
    GoldenStore(root / "golden").write_entry(manifest, blob, [x], expected, exp.mlir_module())
    rc, out, err = run(capsys, "audit", "--project", str(root), "--no-drift", "--today",
                       TODAY.isoformat(), "--json")
  finally:
    sys.modules.pop("treecases", None)
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0, err
  assert jax.__version__ in (art["runs_on"] or {}).get("cpu", ()), art


def test_project_audit_uses_pythonpath_and_declared_targets(project, capsys):
  (project / "src").mkdir()
  (project / "mycases.py").rename(project / "src" / "mycases.py")
  (project / "targets.json").write_text(json.dumps({"cpu": ["my_private_kernel"]}))
  (project / "pyproject.toml").write_text(
      PROJECT_CONFIG + 'pythonpath = ["src"]\njaxport_stable_targets = "targets.json"\n')
  rc, out, err = run(capsys, "audit", "--project", str(project), "--today", TODAY.isoformat(),
                     "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["drift"] == {"checked": True, "differences": []}, err
  assert str(project / "src") not in sys.path

  # The project's declared target counts as stable, besides a --stable-targets file.
  blob, sigs = qr_rewritten(_private_kernel)
  other = GoldenStore(project / "other")
  write_qr_entry(other, signatures=sigs, blob=blob)
  rc, out, _ = run(capsys, "audit", str(other.root), "--project", str(project), "--no-drift",
                   "--today", TODAY.isoformat())
  assert rc == 0, out
  assert "target my_private_kernel: cpu: declared stable by the project" in out


def test_project_audit_errors_name_the_project_and_the_fix(tmp_path, project, capsys):
  rc, _, err = run(capsys, "audit", "--project", str(tmp_path / "nowhere"))
  assert rc == 2 and f"--project {tmp_path / 'nowhere'}: no such directory" in err
  (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
  rc, _, err = run(capsys, "audit", "--project", str(project))
  assert rc == 2 and "sets no jaxport_cases and no jaxport_store, so it has not opted into" in err
  (project / "pyproject.toml").write_text(PROJECT_CONFIG.replace('"golden"', '"unrecorded"'))
  rc, _, err = run(capsys, "audit", "--project", str(project))
  assert rc == 2 and "no golden store yet: jaxport_store of the project" in err
  (project / "pyproject.toml").write_text(PROJECT_CONFIG.replace("mycases", "mycases_gone"))
  rc, out, err = run(capsys, "audit", "--project", str(project), "--today", TODAY.isoformat())
  assert rc == 2 and out == ""
  assert ("importing the project's case modules (jaxport_cases) ['mycases_gone'] failed" in err
          and f"Looked in the project's paths ['{project}'" in err)
  rc, _, err = run(capsys, "audit")
  assert rc == 2 and "name what to audit: one or more PATHs" in err
