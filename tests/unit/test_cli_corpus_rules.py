"""Checker selection and symbolic-shape recovery for datasets of jax's own corpus."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.harness import checkers# noqa: E402
from jaxport.corpus import _corpus_rules, _poly_specs  # noqa: E402


@pytest.mark.parametrize("family, targets, checker, op", [
    ("eig_lapack_geev", ["lapack_sgeev_ffi"], "jax_eig", "eig"),
    ("eigh_lapack_syev", ["lapack_ssyevd_ffi"], "jax_eigh", "eigh"),
    ("Eigh", ["Eigh"], "jax_eigh", "eigh"),
    ("schur_lapack_gees", ["lapack_sgees_ffi"], "schur", "schur"),
    ("svd_cusolver_gesvd", ["cusolver_gesvdj_ffi"], "jax_svd", "svd"),
    ("lu_pivots_to_permutation", ["cu_lu_pivots_to_permutation"], "allclose", "lu_pivots_to_permutation"),
    ("tridiagonal_solve_lapack_gtsv", ["lapack_sgtsv_ffi"], "allclose", "tridiagonal_solve"),
    ("tridiagonal_lapack_sytrd_hetrd", ["lapack_ssytrd_ffi"], "jax_tridiagonal", "tridiagonal"),
    ("stablehlo_dynamic_top_k", ["stablehlo.dynamic_top_k"], "top_k", "top_k"),
    ("ApproxTopK", ["ApproxTopK"], "top_k", "approx_top_k"),
    # The family says nothing: the module's targets decide.
    ("my_factorization", ["lapack_zgees_ffi"], "schur", "schur"),
    ("mystery", ["some_target"], "allclose", None),
])
def test_checker_is_chosen_from_the_family_then_the_targets(family, targets, checker, op):
  choice = _corpus_rules.choose_checker(family, targets)
  assert (choice.checker, choice.op) == (checker, op)
  assert choice.reason


def test_every_checker_the_importer_writes_exists_in_the_harness():
  assert _corpus_rules.checker_names() <= set(checkers.BUILTIN)


_MODULE = """module @jit_f attributes {{jax.uses_shape_polymorphism = true}} {{
  func.func public @main(%arg0: tensor<{t0}> loc(unknown), %arg1: tensor<{t1}> loc(unknown)) -> (tensor<{t0}>) {{
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<{t0}>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
{extra}    %2 = call @_wrapped_jax_export_main({passed}, %arg0, %arg1) : (tensor<i64>, tensor<{t0}>, tensor<{t1}>) -> tensor<{t0}>
    return %2 : tensor<{t0}>
  }}
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {{jax.global_constant = "{name}"}}, %arg1: tensor<{t0}>, %arg2: tensor<{t1}>) -> (tensor<{t0}>) {{
    return %arg1 : tensor<{t0}>
  }}
}}
"""


def _module(t0="?x4xf32", t1="3xf32", extra="", passed="%1", name="batch"):
  return _MODULE.format(t0=t0, t1=t1, extra=extra, passed=passed, name=name)


def test_specs_come_from_the_module_where_it_reads_and_names_each_variable():
  specs, source = _poly_specs.infer_from_module(_module())
  assert specs == ("batch, 4", None) and "module" in source
  assert _poly_specs.resolve(_module(), "anything", "data_2024_01_01").specs == ("batch, 4", None)


@pytest.mark.parametrize("module, why", [
    (_module(extra="    %c = stablehlo.constant dense<-4> : tensor<i64>\n    %9 = stablehlo.add %1, %c : tensor<i64>\n",
             passed="%9"), "arithmetic"),
    (_module(t1="?xf32"), "no dimension variable is read"),
])
def test_a_module_that_does_not_say_its_specs_is_refused_without_a_stated_spec(module, why):
  specs, reason = _poly_specs.infer_from_module(module)
  assert specs is None and why in reason
  refused = _poly_specs.resolve(module, "my_dynamic_op", "data_2024_01_01")
  assert refused.specs is None
  assert why in refused.source and "states none for my_dynamic_op.data_2024_01_01" in refused.source


def test_the_stated_table_answers_where_the_module_cannot_and_cites_the_test():
  module = _module(t1="?xf32")
  stated = _poly_specs.resolve(module, "stablehlo_dynamic_top_k", "data_2023_07_16")
  assert stated.specs == ("_, b",)
  assert "test_stablehlo_dynamic_top_k" in stated.source and "export_back_compat_test.py" in stated.source


def test_a_static_module_is_not_shape_polymorphic():
  static = _module(t0="2x4xf32").replace("jax.uses_shape_polymorphism = true", "")
  assert not _poly_specs.is_shape_polymorphic(static)
  assert _poly_specs.is_shape_polymorphic(_module())
