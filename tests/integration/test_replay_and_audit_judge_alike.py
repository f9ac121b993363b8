"""A replay and an audit of one store judge each entry alike: the same status, and the same
findings but for those only running an entry can make (one judge, ``jaxport.harness._judge``).

The store holds a clean entry, an expired one, one whose case's lowering changed since (other
custom calls, the same results), the same change in an entry another jax release recorded
(whose change it is is unknown: no entry of the case recorded by the replaying jax lowers as
today), the same change in an entry another jax release recorded where the case's entry
recorded by the replaying jax lowers as today (a producer drift: jax's change), one whose
calling contract changed too, one whose calling contract alone changed (its output a tuple
now), one whose module lacks only the partitioner's rules that today's lowering emits (a
change of partitioner metadata only: the same rule as any lowering difference in both), an
entry whose custom-call target nothing promises any more (jax 0.4.30's LAPACK
kernel, which runs today only after ``jaxport.upgrade``), an entry whose manifest lists other
custom calls than its module makes, and one whose comparison passes any outputs (both signed
again: the digest is unkeyed, so golden verification finds them)."""

import dataclasses
import datetime
import json
import re
import shutil
import textwrap
from pathlib import Path

import jax
import pytest

import jaxport
from jaxport._jaxcompat import _envelope as jax_envelope
from jaxport.cli._main import main
from jaxport.export import _mlir
from jaxport.golden import _signatures
from jaxport.golden import EntryId
from jaxport.golden._manifest import MANIFEST_FILE, Comparison
from jaxport.golden._store import GoldenStore
from jaxport._vocabulary import RUN_ONLY_KINDS

from _downstream_project import CASE_PRELUDE, as_another_release, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TODAY = datetime.date(2026, 11, 30)
LONG_AGO = TODAY - datetime.timedelta(days=200)
# A repository entry of jax 0.4.30 whose cholesky kernel (lapack_spotrf) is off every table now.
OLD_KERNEL = "cpu/lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.4.30"

CASES = CASE_PRELUDE + """

def chol(a):
  return jnp.linalg.cholesky(a @ a.T + 4 * jnp.eye(3, dtype=a.dtype))


def changing(a):
  return LOWERING


def contract(a):
  return CONTRACT


def contract_only(a):
  return ONLY


def cases():
  return [Case("clean", "judged", chol, square),
          Case("expired", "judged", jnp.sin, square),
          Case("changed", "judged", changing, square),
          Case("other_release", "judged", changing, square),
          Case("producer", "judged", changing, square),
          Case("forged_targets", "judged", chol, square),
          Case("vacuous", "judged", chol, square),
          Case("contract", "judged", contract, square),
          Case("contract_only", "judged", contract_only, square),
          Case("partitioner", "judged", chol, square)]
"""
# Today the function calls QR's kernels too, for the same results; and one returns Q as well,
# another output tree.
BEFORE = {"LOWERING": "chol(a)", "CONTRACT": "chol(a)", "ONLY": "jnp.sin(a)"}
AFTER = {"LOWERING": "chol(a) + 0 * jnp.linalg.qr(a)[1]",
         "CONTRACT": "chol(a), jnp.linalg.qr(a)[0]", "ONLY": "(jnp.sin(a),)"}


def _cases(change: dict[str, str]) -> str:
  text = textwrap.dedent(CASES)
  for name, code in change.items():
    text = text.replace(name, code)
  return text


def _pytest(pytester, today: datetime.date, *args):
  return pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={today}", *args)


@pytest.fixture(autouse=True)
def _fresh_sources(monkeypatch):
  # The case module is rewritten within a second; stale bytecode must not hide the change.
  monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


def _forge(store: GoldenStore, case_id: str, **fields) -> EntryId:
  """Rewrite ``case_id``'s only entry's manifest with ``fields``, signed again; its id."""
  (entry,) = [e for e in store.entries() if e.manifest.case_id == case_id]
  (entry.path / MANIFEST_FILE).write_text(
      dataclasses.replace(entry.manifest, **fields).to_json())
  entry.verify()  # the forgery passes the digests: golden verification must find it
  return entry.entry_id


def _without_partitioner_rules(store: GoldenStore, case_id: str) -> EntryId:
  """Write ``case_id``'s only entry anew with its module's ``sdy.sharding_rule`` attributes
  dropped (its manifest recording the module's signatures): today's lowering differs from it
  in partitioner metadata only."""
  (entry,) = [e for e in store.entries() if e.manifest.case_id == case_id]
  exp = jaxport.deserialize(entry.blob())
  with _mlir.scratch_context():
    module = jax.interpreters.mlir.ir.Module.parse(re.sub(
        r", sdy\.sharding_rule = #sdy\.op_sharding_rule<.*?, custom>", "",
        _mlir.module_text(exp.mlir_module_serialized)))
    serialized = _mlir.module_to_portable_artifact(module)
  assert serialized != exp.mlir_module_serialized, "the case's module has no sharding rule"
  exp = dataclasses.replace(exp, mlir_module_serialized=serialized)
  inputs, expected = entry.inputs(), entry.expected_outputs()
  manifest = dataclasses.replace(entry.manifest,
                                 custom_call_targets=_signatures.signatures(serialized))
  shutil.rmtree(entry.path)
  return store.write_entry(manifest, bytes(exp.serialize()), inputs, expected,
                           exp.mlir_module()).entry_id


def test_a_replay_and_an_audit_of_one_store_judge_each_entry_alike(pytester, tmp_path, capsys):
  store = write_project(pytester, _cases(BEFORE))
  assert _pytest(pytester, LONG_AGO, "--compat-record", "-k", "expired").ret == 0
  assert _pytest(pytester, TODAY, "--compat-record", "-k", "not expired").ret == 0
  other = "0.10.1" if jax.__version__ != "0.10.1" else "0.10.2"
  other_id = as_another_release(store, "other_release", other)
  producer_id = as_another_release(store, "producer", other)
  (forged,) = [e for e in store.entries() if e.manifest.case_id == "forged_targets"]
  sig = forged.manifest.custom_call_targets[0]
  forged_id = _forge(store, "forged_targets", custom_call_targets=tuple(
      dataclasses.replace(s, target="lapack_sgeqrf_ffi") if s == sig else s
      for s in forged.manifest.custom_call_targets))
  vacuous_id = _forge(store, "vacuous", comparison=Comparison("allclose", 1.0, 0.0))
  shutil.copytree(REPO / "compat_data" / OLD_KERNEL, store.root / OLD_KERNEL)
  partitioner_id = _without_partitioner_rules(store, "partitioner")
  # Today's function: the forged entry's case is gone (its module alone is judged), and the
  # case of the producer drift is recorded by the replaying jax as it lowers today.
  (Path(pytester.path) / "mycases.py").write_text(_cases(AFTER).replace(
      '          Case("forged_targets", "judged", chol, square),\n', ""))
  assert _pytest(pytester, TODAY, "--compat-record", "-k", "producer").ret == 0

  report_file = tmp_path / "replay.json"
  replay = _pytest(pytester, TODAY, f"--compat-report={report_file}")
  replayed = {e["entry_id"]: e for e in json.loads(report_file.read_text())["entries"]}
  capsys.readouterr()  # what the pytest runs printed
  rc = main(["audit", "--project", str(pytester.path), "--today", str(TODAY), "--json"])
  audit = json.loads(capsys.readouterr().out)
  audited = {a["artifact"]: a for a in audit["artifacts"]}

  assert sorted(audited) == sorted(replayed) and len(replayed) == 12
  by_case = {e["case_id"]: e["entry_id"] for e in replayed.values()
             if e["entry_id"] != str(producer_id)}
  for entry_id, r in replayed.items():
    a = audited[entry_id]
    audit_kinds = sorted({f["kind"] for f in a["findings"]})
    assert a["status"] == r["status"], (entry_id, a, r)
    # What the audit found, the replay found; the replay finds more only by running.
    assert set(audit_kinds) <= set(r["kinds"]), (entry_id, audit_kinds, r["kinds"])
    assert set(r["kinds"]) - set(audit_kinds) <= {str(k) for k in RUN_ONLY_KINDS}, (
        entry_id, audit_kinds, r["kinds"])
  statuses = {case: replayed[entry_id]["status"] for case, entry_id in by_case.items()}
  assert statuses == {"clean": "pass", "expired": "warn", "changed": "fail",
                      "other_release": "warn", "contract": "fail", "contract_only": "fail",
                      "release_cholesky_f32": "warn", "producer": "pass",
                      "forged_targets": "fail", "vacuous": "fail", "partitioner": "fail"}
  assert (by_case["forged_targets"], by_case["vacuous"]) == (str(forged_id), str(vacuous_id))
  assert replayed[str(producer_id)]["status"] == "pass"
  assert {f["kind"] for f in audited[str(producer_id)]["findings"]} == {"producer_drift"}
  kinds = {case: audited[entry_id]["findings"] for case, entry_id in by_case.items()}
  assert {f["kind"] for f in kinds["clean"]} == set()
  assert {f["kind"] for f in kinds["expired"]} == {"expired"}
  assert {f["kind"] for f in kinds["changed"]} == {"lowering_drift"}
  assert {f["kind"] for f in kinds["other_release"]} == {"drift_unattributed"}
  # jax 0.4.30's envelope: a jax that refuses it as it is reads it after its rewrite, an
  # `upgraded` pass in the audit as in the replay.
  assert {f["kind"] for f in kinds["release_cholesky_f32"]} == (
      {"stale_target", "upgraded"} if jax_envelope.REFUSES_EXPIRED else {"stale_target"})
  assert {f["kind"] for f in kinds["contract"]} == {"lowering_drift", "signature_change"}
  assert {f["kind"] for f in kinds["contract_only"]} == {"signature_change"}
  assert {f["kind"] for f in kinds["producer"]} == set()
  assert {f["kind"] for f in kinds["partitioner"]} == {"lowering_drift"}
  assert by_case["partitioner"] == str(partitioner_id)
  assert all("changed attributes ['sdy.sharding_rule']; types unchanged" in f["message"]
             for f in kinds["partitioner"])
  assert {f["kind"] for f in kinds["forged_targets"]} == {"golden_data_error"}
  assert "golden_data_error" in {f["kind"] for f in kinds["vacuous"]}
  # Golden verification says the same of both in the replay and in the audit.
  for case, words in (("forged_targets", "custom_call_targets disagree with the module"),
                      ("vacuous", "the comparison is vacuous: rtol 1")):
    (said,) = [f["message"] for f in kinds[case] if f["kind"] == "golden_data_error"]
    assert words in said
    assert said in [f["message"] for f in replayed[by_case[case]]["findings"]], case
  assert replayed[by_case["contract_only"]]["kinds"] == ["signature_change"]
  assert "signature_change" in replayed[by_case["contract"]]["kinds"]
  assert "upgraded" in replayed[by_case["release_cholesky_f32"]]["kinds"]
  assert by_case["other_release"] == str(other_id)
  # The changed function and the forged golden data fail both; nothing else does.
  assert replay.ret == 1 and rc == 1
  assert sorted(a["artifact"] for a in audit["artifacts"] if not a["ok"]) == sorted(
      [by_case["changed"], by_case["contract"], by_case["contract_only"],
       by_case["forged_targets"], by_case["vacuous"], by_case["partitioner"]])
