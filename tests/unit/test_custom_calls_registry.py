"""The stable custom-call table: its data, its per-platform view, and the module walk."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src.export import _export as jax_export_impl

from _jax_releases import jax_allow_list_of_0_10
from jaxport.custom_calls import _registry, _walk
from jaxport.errors import ExportError
from jaxport.export import _checks


def test_table_holds_jax_allow_list():
  assert frozenset(jax_export_impl._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE) <= _registry.stable_targets()


@jax_allow_list_of_0_10
def test_table_matches_jax_allow_list_exactly():
  assert _registry.stable_targets() == frozenset(jax_export_impl._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
  assert len(_registry.stable_targets()) == 88


@pytest.mark.parametrize("platform, count", [("cpu", 48), ("cuda", 11), ("rocm", 11), ("tpu", 6), ("any", 12)])
def test_per_platform_counts(platform, count):
  assert len(_registry.stable_targets(platform)) == count


def test_platform_sets_are_disjoint_and_cover_the_table():
  by_platform = _registry.targets_by_platform()
  total = sum(len(t) for t in by_platform.values())
  assert total == len(_registry.stable_targets())
  assert "lapack_cungqr_ffi" in by_platform["cpu"]
  assert "cusolver_potrf_ffi" in by_platform["cuda"]
  assert "hipsolver_gesdd_ffi" in by_platform["rocm"]
  assert "shape_assertion" in by_platform["any"]


def test_operation_grouping_names_what_emits_each_target():
  assert set(_registry.targets_by_operation("cpu")["cholesky"]) == {
      "lapack_spotrf_ffi", "lapack_dpotrf_ffi", "lapack_cpotrf_ffi", "lapack_zpotrf_ffi"}


def test_triton_stays_off_the_table():
  assert "__gpu$xla.gpu.triton" in _registry.deliberately_unstable()
  assert "__gpu$xla.gpu.triton" not in _registry.stable_targets()


def test_unknown_platform_lists_the_known_ones():
  with pytest.raises(ExportError, match=r"Unknown platform 'gpu'.*\['any', 'cpu', 'cuda', 'rocm', 'tpu'\]"):
    _registry.stable_targets("gpu")


def _lowered_module(fun, *args):
  return jax.jit(fun).lower(*args).compiler_ir("stablehlo")


def test_walk_finds_calls_nested_in_regions():
  def f(a, p):
    # The cholesky sits inside a cond inside a fori_loop: two regions deep.
    body = lambda i, c: lax.cond(p, jnp.linalg.cholesky, lambda m: m, c)
    return lax.fori_loop(0, 2, body, a)
  a = np.eye(3, dtype=np.float32)
  module = _lowered_module(f, a, True)
  sites = _walk.custom_call_sites(module)
  assert [s.target for s in sites] == ["lapack_spotrf_ffi"]
  site = sites[0]
  assert site.operand_types == ("tensor<3x3xf32>",)
  assert site.result_types == ("tensor<3x3xf32>", "tensor<i32>")
  assert site.attribute("call_target_name") == '"lapack_spotrf_ffi"'
  assert site.attribute("no_such_attribute") is None
  assert "cholesky" in site.location


def test_list_custom_calls_reads_serialized_modules():
  exp = jax.export.export(jax.jit(jnp.linalg.qr))(np.ones((4, 3), np.float32))
  targets = [s.target for s in _checks.list_custom_calls(exp.mlir_module_serialized)]
  assert targets == ["lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"]


def test_disallowed_sites_respects_allow_all():
  module = _lowered_module(jnp.linalg.cholesky, np.eye(2, dtype=np.float32))
  assert [s.target for s in _walk.disallowed_sites(module, frozenset())] == ["lapack_spotrf_ffi"]
  assert _walk.disallowed_sites(module, frozenset(), allow_all=True) == []
  assert _walk.disallowed_sites(module, _registry.stable_targets("cpu")) == []
