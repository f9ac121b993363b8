"""`jaxport audit`: stability, expiry, integrity and signature drift, text and JSON."""

import dataclasses
import datetime
import json
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _cli_helpers import RECORD_DATE, qr_exported, qr_input, write_qr_entry
from jaxport.cli import _relower, main
from jaxport.golden._store import GoldenStore

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


def test_expired_entry_is_a_problem(store, capsys):
  write_qr_entry(store)
  late = RECORD_DATE + datetime.timedelta(days=200)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", late.isoformat(), "--no-drift")
  assert rc == 1
  assert "PROBLEM cpu/qr/qr_f32" in out
  assert "expired 20 days ago" in out and "jaxport prune" in out


def test_tampered_entry_is_a_problem_naming_the_file(store, capsys):
  entry = write_qr_entry(store)
  (entry.path / "exported.bin").write_bytes(b"\x00" + (entry.path / "exported.bin").read_bytes()[1:])
  rc, out, _ = run(capsys, "audit", str(entry.path), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 1
  assert "exported.bin: sha256 mismatch" in out


def test_target_without_guarantee_is_a_problem(store, capsys):
  sigs = [dataclasses.replace(s, target="my_private_kernel") if s.target == "lapack_sorgqr_ffi" else s
          for s in qr_exported_signatures()]
  write_qr_entry(store, signatures=sigs)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--no-drift")
  assert rc == 1
  assert "target my_private_kernel: cpu: no compatibility guarantee" in out
  assert "custom-call target my_private_kernel is not stable on any platform" in out


def qr_exported_signatures():
  from jaxport.golden import _signatures
  return _signatures.signatures(qr_exported().mlir_module_serialized)


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


def _fake_registry(monkeypatch, tmp_path, cases):
  registry = types.SimpleNamespace(case=cases.get)
  monkeypatch.setattr(_relower, "harness_root", lambda path: tmp_path)
  monkeypatch.setattr(_relower, "load_registry", lambda root: registry)


def _qr_case(fun=None):
  return types.SimpleNamespace(
      case_id="qr_f32", fun=fun or (lambda x: jnp.linalg.qr(x)),
      make_inputs=lambda: ((qr_input(),), {}), polymorphic_shapes=None, constraints=None,
      export_platforms=lambda: ("cpu",))


def test_drift_against_todays_lowering(store, capsys, monkeypatch):
  write_qr_entry(store)
  _fake_registry(monkeypatch, store.root, {"qr_f32": _qr_case()})
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--harness", "repo", "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["drift"] == {"checked": True, "differences": []}

  # Today the case lowers to a 4x4 QR: same targets, other operand types.
  _fake_registry(monkeypatch, store.root, {"qr_f32": types.SimpleNamespace(
      **{**vars(_qr_case()), "make_inputs": lambda: ((np.eye(4, dtype=np.float32),), {})})})
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--harness", "repo")
  assert rc == 1
  assert "signature drift against today's lowering: target lapack_sgeqrf_ffi changed signature" in out
  assert "tensor<4x4xf32>" in out and "tensor<3x3xf32>" in out

  # Today's lowering no longer calls LAPACK at all.
  _fake_registry(monkeypatch, store.root, {"qr_f32": _qr_case(fun=lambda x: (x, x))})
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--harness", "repo")
  assert rc == 1 and "target lapack_sorgqr_ffi was recorded but the current lowering no longer emits it" in out


def test_partitioner_metadata_drift_is_a_warning(store, capsys, monkeypatch):
  def toggle(sig):
    attrs = dict(sig.attributes)
    if "sdy.sharding_rule" in attrs:
      del attrs["sdy.sharding_rule"]
    else:
      attrs["sdy.sharding_rule"] = "#sdy.op_sharding_rule<([i, j])->([i, j])>"
    return dataclasses.replace(sig, attributes=attrs)

  write_qr_entry(store, signatures=[toggle(s) for s in qr_exported_signatures()])
  _fake_registry(monkeypatch, store.root, {"qr_f32": _qr_case()})
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(),
                   "--harness", "repo", "--json")
  (art,) = json.loads(out)["artifacts"]
  assert rc == 0 and art["problems"] == []
  assert len(art["drift"]["differences"]) == 2
  assert all("changed attributes ['sdy.sharding_rule']; types unchanged" in d
             for d in art["drift"]["differences"])
  assert all(w.endswith("(partitioner metadata only)") for w in art["warnings"])


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


def test_drift_not_checked_without_a_case(store, capsys, monkeypatch):
  write_qr_entry(store, case_id="not_a_registered_case")
  _fake_registry(monkeypatch, store.root, {})
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--harness", "repo")
  assert rc == 0
  assert "drift: not checked (no case 'not_a_registered_case' in the harness registry)" in out


def test_drift_not_checked_without_a_named_harness(store, capsys, monkeypatch):
  write_qr_entry(store)
  def imported(root):
    raise AssertionError("audit imported a harness nobody named")
  monkeypatch.setattr(_relower, "load_registry", imported)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat())
  assert rc == 0 and "drift: not checked (no harness named: pass --harness REPO" in out


def test_a_harness_option_without_a_harness_is_an_error(store, capsys, tmp_path):
  write_qr_entry(store)
  rc, _, err = run(capsys, "audit", str(store.root), "--harness", str(tmp_path / "elsewhere"))
  assert rc == 2 and "no harness/conftest.py there" in err


def test_broken_registry_is_reported_not_fatal(store, capsys, monkeypatch, tmp_path):
  write_qr_entry(store)
  monkeypatch.setattr(_relower, "harness_root", lambda path: tmp_path)
  def broken(root):
    raise ImportError("no module named harness.cases")
  monkeypatch.setattr(_relower, "load_registry", broken)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY.isoformat(), "--harness", "repo")
  assert rc == 0 and "the harness case registry failed to import: ImportError" in out
