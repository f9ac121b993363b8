"""The tpu cases on a CPU host: every one lowers for the TPU here, a Pallas kernel's Mosaic
payload depends on the kernel and not on where its module lies, a changed kernel is named in
the drift of its ``tpu_custom_call``, and a CPU reference stands in for each kernel."""

from __future__ import annotations

import importlib.util
import sys

import jax
import numpy as np
import pytest

from _harness_paths import ROOT

import jaxport  # noqa: E402
from harness.cases import _tpu  # noqa: E402
import harness.cases as repository  # noqa: E402
from jaxport.golden import _signatures  # noqa: E402
from jaxport.harness import checkers# noqa: E402

_X = np.ones((256, 256), np.float32)


def _kernel_signatures(module, tile: int | None = None):
  if tile is not None:
    module._TILE = tile
  try:
    exp = jaxport.export(jax.jit(lambda a, b: module._pallas_matmul(a, b)),
                         platforms=("tpu",))(_X, _X)
  finally:
    module._TILE = 128
  return _signatures.signatures(exp.mlir_module_serialized)


def test_a_pallas_payload_does_not_depend_on_where_the_case_module_lies(tmp_path):
  moved = tmp_path / "elsewhere" / "moved_tpu_cases.py"
  moved.parent.mkdir()
  # The same module in another folder, with lines added above the kernels.
  moved.write_text("\n\n\n# moved\n" + (ROOT / "harness" / "cases" / "_tpu.py").read_text())
  spec = importlib.util.spec_from_file_location("moved_tpu_cases", moved)
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module
  try:
    spec.loader.exec_module(module)
    assert _signatures.drift(_kernel_signatures(_tpu), _kernel_signatures(module)) == []
  finally:
    del sys.modules[spec.name]


def test_a_pallas_kernel_at_another_block_size_is_a_tpu_custom_call_change_naming_it():
  changes = _signatures.drift(_kernel_signatures(_tpu), _kernel_signatures(_tpu, tile=256))
  assert [c.target for c in changes] == ["tpu_custom_call"]
  assert "(kernel '_matmul_kernel') changed signature" in changes[0].message
  assert "backend_config" in changes[0].message


@pytest.mark.parametrize("case", [c for c in _tpu.cases() if c.targets == ("tpu_custom_call",)
                                  and not c.lowering_only], ids=lambda c: c.case_id)
def test_each_pallas_case_lowers_for_the_tpu_here_and_its_cpu_reference_computes(case):
  args, kwargs = case.make_inputs()
  exp = jaxport.export(jax.jit(case.fun), platforms=("tpu",))(*args, **kwargs)
  assert "tpu_custom_call" in {s.target for s in _signatures.signatures(
      exp.mlir_module_serialized)}
  reference = repository.cpu_reference(case.case_id)
  assert reference is not None and reference is not case.fun
  got = [np.asarray(x) for x in jax.tree.leaves(jax.jit(reference)(*args, **kwargs))]
  assert [x.shape for x in got] == [tuple(s.shape) for s in exp.out_avals]


def test_the_interpreted_gather_kernel_picks_the_prefetched_blocks():
  (rows, x), _ = _tpu._gather_inputs()
  got = np.asarray(repository.cpu_reference("tpu_run_pallas_prefetch_gather_f32")(rows, x))
  want = np.concatenate([x[r * _tpu._ROWS:(r + 1) * _tpu._ROWS] * 2 for r in rows])
  assert checkers.check("allclose", [], [want], [got], rtol=1e-6, atol=0).ok
  assert not checkers.check("allclose", [], [want[::-1]], [got], rtol=1e-6, atol=0).ok


def test_there_is_a_tpu_case_for_every_stable_tpu_target():
  from jaxport.custom_calls import _registry
  covered = {t for c in _tpu.cases() if c.host_platform == "tpu" for t in c.targets}
  assert set(_registry.stable_targets("tpu")) <= covered
  assert len([c for c in _tpu.cases() if c.host_platform == "tpu"]) >= 20


def test_a_recorded_tpu_entrys_outputs_moved_past_its_tolerance_fail_its_checker():
  from jaxport.golden import GoldenStore
  entry = next(e for e in GoldenStore(ROOT / "compat_data").entries(platform="tpu")
               if e.manifest.case_id == "tpu_run_matmul_f32_highest")
  m = entry.manifest
  per_output = [checkers.OutputTolerance(t.path, t.rtol, t.atol) for t in m.tolerances or ()]
  recorded = entry.expected_outputs()

  def verdict(got):
    return checkers.BUILTIN.check(m.comparison.mode, entry.inputs(), recorded, got,
                                  rtol=m.comparison.rtol, atol=m.comparison.atol,
                                  outputs=per_output or None)

  assert verdict(recorded).ok
  moved = verdict([np.asarray(x) * 1.5 + 1.0 for x in recorded])
  assert not moved.ok and "differ beyond" in moved.problems[0]
