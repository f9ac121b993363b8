"""The upgrade rule table and the refusals of ``jaxport.upgrade`` on modules it must not rewrite."""

import dataclasses
import glob
from pathlib import Path

import jax
import numpy as np
import pytest
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

import jaxport
from jaxport.custom_calls._registry import stable_targets
from jaxport.custom_calls._walk import CUSTOM_CALL_OP, walk_operations
from jaxport.export import _mlir
from jaxport.upgrades import _rules, _table, upgrade_with_report
from jaxport.upgrades import upgrade_envelope

ROOT = Path(__file__).resolve().parents[2]


def _entry_blob(case_id: str, producer: str) -> jaxport.Exported:
  [path] = glob.glob(str(ROOT / f"compat_data/cpu/*/{case_id}/*_jax-{producer}/exported.bin"))
  # Rewritten first where the installed jax refuses the old envelope as expired.
  return jaxport.deserialize(upgrade_envelope(Path(path).read_bytes()))


def _mutated(exp, target: str, mutate) -> jaxport.Exported:
  """``exp`` with ``mutate(op)`` applied to its call of ``target``, through the MLIR bindings."""
  with _mlir.make_context():
    module = _mlir.module_from_bytes(exp.mlir_module_serialized)
    op = next(o for o in walk_operations(module) if o.name == CUSTOM_CALL_OP
              and ir.StringAttr(o.attributes["call_target_name"]).value == target)
    with ir.InsertionPoint(op), op.location:
      mutate(op)
    data = _mlir.module_to_portable_artifact(module)
  return dataclasses.replace(exp, mlir_module_serialized=data)


def _scalar(value, dtype) -> ir.Value:
  return hlo.ConstantOp(ir.DenseElementsAttr.get(np.asarray(value, dtype))).result


def test_every_rule_maps_a_removed_target_onto_a_registered_one():
  cpu = stable_targets("cpu")
  for rule in _table.rules():
    assert rule.function in _rules.FUNCTIONS, rule.name
    for letter in rule.letters:
      assert rule.successor_target(letter) in cpu, (rule.name, letter)
      legacy = rule.legacy_target(letter)
      # Only the 3-operand trsm keeps its name: the rule then keys on the operand count.
      assert (legacy in cpu) == (legacy == rule.successor_target(letter)), legacy


def test_every_legacy_lapack_target_of_jax_0_4_has_exactly_one_rule():
  by_target = _table.rules_by_target()
  families = ["potrf", "getrf", "geqrf", "geev", "gesdd", "gees", "gehrd"]
  want = {f"lapack_{c}{f}" for c in "sdcz" for f in families}
  want |= {f"lapack_{c}orgqr" for c in "sd"} | {f"lapack_{c}ungqr" for c in "cz"}
  want |= {f"lapack_{c}syevd" for c in "sd"} | {f"lapack_{c}heevd" for c in "cz"}
  want |= {f"lapack_{c}sytrd" for c in "sd"} | {f"lapack_{c}hetrd" for c in "cz"}
  want |= {f"blas_{c}trsm" for c in "sdcz"}
  assert want <= set(by_target)
  assert all(len(by_target[t]) == 1 for t in want)


@pytest.mark.parametrize("change, message", [
    ({"new_operands": ["lower"]}, "must be data operands"),
    ({"sizes": {"a": "batch(a)"}}, "not size operands"),
    ({"aliases": {"a": "b"}}, "not a successor operand"),
    ({"letters": "sx"}, "subset of 'sdcz'"),
    ({"letters": "sc"}, "letter 'c' is complex, but legacy_results has no complex list"),
])
def test_malformed_rules_are_refused(change, message):
  row = {"name": "potrf", "legacy": "lapack_?potrf", "letters": "s", "successor": "lapack_?potrf_ffi",
         "operands": ["flag:lower", "size:n", "a"], "sizes": {"n": "dim(a,-1)"},
         "legacy_results": {"real": ["a", "info"], "complex": []},
         "results": {"real": ["a", "info"], "complex": []}, "new_operands": ["a"],
         "aliases": {"a": "a"}, "function": "potrf"}
  _table.parse_rule(row)
  with pytest.raises(_table.RuleTableError, match=message):
    _table.parse_rule({**row, **change})


def test_a_module_without_removed_targets_is_returned_as_is():
  exp = jaxport.export(jax.jit(lambda x: jax.numpy.linalg.cholesky(x)))(
      jax.ShapeDtypeStruct((3, 3), np.float32))
  report = upgrade_with_report(exp)
  assert report.rewrites == () and report.exported is exp


def test_refuses_a_lower_flag_that_is_not_a_constant():
  exp = _entry_blob("release_cholesky_f32", "0.4.30")

  def computed_lower(op):
    op.operands[0] = hlo.GetDimensionSizeOp(op.operands[3], 0).result
  bad = _mutated(exp, "lapack_spotrf", computed_lower)
  with pytest.raises(jaxport.UpgradeError) as info:
    jaxport.upgrade(bad)
  text = str(info.value)
  assert "lapack_spotrf" in text and "'cholesky'" in text and "loc(" in text
  assert "operand 'lower' (operand 0)" in text and "must be a constant" in text
  assert "stablehlo.get_dimension_size" in text and "rule 'potrf'" in text


def test_refuses_a_size_operand_that_disagrees_with_the_operand_type():
  exp = _entry_blob("release_cholesky_f32", "0.4.30")

  def wrong_n(op):
    op.operands[2] = _scalar(5, np.int32)
  with pytest.raises(jaxport.UpgradeError, match=r"size operand 'n' is 5, but dim\(a,-1\).* is 4"):
    jaxport.upgrade(_mutated(exp, "lapack_spotrf", wrong_n))


def test_refuses_a_trsm_alpha_other_than_one():
  exp = _entry_blob("release_triangular_solve_f32", "0.5.3")

  def alpha_two(op):
    op.operands[2] = _scalar(2.0, np.float32)
  with pytest.raises(jaxport.UpgradeError, match="alpha is 2.0"):
    jaxport.upgrade(_mutated(exp, "lapack_strsm_ffi", alpha_two))


def test_refuses_a_lower_flag_the_successor_cannot_express():
  exp = _entry_blob("release_cholesky_f32", "0.4.30")

  def lower_seven(op):
    op.operands[0] = _scalar(7, np.int32)
  with pytest.raises(jaxport.UpgradeError, match=r"operand 'lower' is 7; the successor only expresses \[0, 1\]"):
    jaxport.upgrade(_mutated(exp, "lapack_spotrf", lower_seven))


def test_a_complex_alpha_is_read_and_checked():
  exp = _entry_blob("release_triangular_solve_c64", "0.4.30")
  report = upgrade_with_report(exp)
  [rewrite] = report.rewrites
  assert (rewrite.legacy_target, rewrite.target) == ("blas_ctrsm", "lapack_ctrsm_ffi")
  assert dict(rewrite.attributes) == {"side": "L", "uplo": "L", "trans_x": "N", "diag": "N"}


def test_a_constant_shared_by_several_dropped_operands_is_removed_once():
  exp = _entry_blob("release_cholesky_f32", "0.4.30")

  def share_one(op):
    op.operands[1] = op.operands[0]  # batch and lower are both the constant 1
  report = upgrade_with_report(_mutated(exp, "lapack_spotrf", share_one))
  assert report.rules_applied == ("potrf",)
  x = np.eye(4, dtype=np.float32) * 4
  np.testing.assert_allclose(report.exported.call(x)[0], np.eye(4) * 2, rtol=1e-6)


def test_hessenberg_row_range_becomes_32_bit_attributes():
  report = upgrade_with_report(_entry_blob("release_hessenberg_f64", "0.4.30"))
  [rewrite] = report.rewrites
  assert (rewrite.legacy_target, rewrite.target) == ("lapack_dgehrd", "lapack_dgehrd_ffi")
  assert dict(rewrite.attributes) == {"low": "1", "high": "4"}
  assert "low = 1 : i32" in report.exported.mlir_module()


def test_two_threads_upgrading_one_module_at_once_rewrite_it_once(monkeypatch):
  import threading
  import time
  from jaxport.upgrades import _upgrade
  exp = _entry_blob("release_lu_f32", "0.4.30")
  _upgrade._upgrade_module.cache_clear()
  parsed = []
  parse = _upgrade._mlir.module_from_bytes

  def slow_parse(*args, **kwargs):
    parsed.append(1)
    time.sleep(0.2)  # the other thread arrives while this one rewrites
    return parse(*args, **kwargs)

  monkeypatch.setattr(_upgrade._mlir, "module_from_bytes", slow_parse)
  start = threading.Barrier(2)
  results = []

  def upgrade():
    start.wait()
    results.append(upgrade_with_report(exp))

  threads = [threading.Thread(target=upgrade) for _ in range(2)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert len(parsed) == 1
  assert results[0].exported.mlir_module_serialized == results[1].exported.mlir_module_serialized
  assert results[0].rules_applied == results[1].rules_applied != ()
