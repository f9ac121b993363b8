"""jax's shipped Pallas TPU kernels as cases, on a CPU host: each has a reference in plain
``jax.numpy`` with the kernel's outputs, a lowering-only sibling where the table asks for one,
and a Mosaic payload that names no install path."""

from __future__ import annotations

import base64
import json
import re

import jax
import numpy as np
import pytest

from _harness_paths import ROOT  # noqa: F401  (puts the repository on sys.path)

import jaxport  # noqa: E402
import harness.cases as repository  # noqa: E402
from harness.cases import _tpu_kernels  # noqa: E402
from jaxport.golden import _signatures  # noqa: E402

_RUN = [c for c in _tpu_kernels.cases() if not c.lowering_only]
_LOWERING = {c.case_id: c for c in _tpu_kernels.cases() if c.lowering_only}


def _shapes(tree):
  return [(tuple(x.shape), np.dtype(x.dtype)) for x in jax.tree.leaves(tree)]


@pytest.mark.parametrize("case", _RUN, ids=lambda c: c.case_id)
def test_each_kernel_case_has_a_reference_with_the_kernels_outputs(case):
  reference = repository.cpu_reference(case.case_id)
  assert reference is not None and reference is not case.fun
  args, kwargs = case.make_inputs()
  with jax.threefry_partitionable(True):
    want = jax.eval_shape(case.fun, *args, **kwargs)
    got = jax.eval_shape(reference, *args, **kwargs)
  assert _shapes(got) == _shapes(want)


def test_each_lowering_only_sibling_runs_the_tpu_cases_function_on_its_inputs():
  assert len(_LOWERING) == len(_tpu_kernels.LOWERING_ONLY)
  for suffix in _tpu_kernels.LOWERING_ONLY:
    sibling = _LOWERING[f"{_tpu_kernels.LOWERING_PREFIX}{suffix}"]
    case = repository.case(f"{_tpu_kernels.PREFIX}{suffix}")
    assert sibling.fun is case.fun and sibling.platforms == ("tpu",)
    (a, _), (b, _) = sibling.make_inputs(), case.make_inputs()
    assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))
  assert set(_tpu_kernels.WHY_TOLERANCE) == {
      s for s, *_, tolerance, _ in _tpu_kernels._KERNELS if tolerance is not None}


@pytest.mark.usefixtures("full_source_file_names")
def test_a_shipped_kernels_payload_names_its_file_relative_to_site_packages():
  case = repository.case("tpu_lowering_kernel_matmul_f32")
  args, _ = case.make_inputs()
  exp = jaxport.export(jax.jit(case.fun), platforms=("tpu",))(*args)
  [signature] = [s for s in _signatures.signatures(exp.mlir_module_serialized)
                 if s.target == "tpu_custom_call"]
  config = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)),
                  signature.attributes["backend_config"][1:-1])
  body = base64.b64decode(json.loads(config)["custom_call_config"]["body"])
  assert b"jax/experimental/pallas/ops/tpu/matmul.py" in body
  assert jax.__file__.encode() not in body and b"site-packages" not in body


def test_each_kernel_case_names_a_lowering_twin_of_the_same_shapes_and_routes_it():
  import dataclasses
  from jaxport.harness._protocol._answers import CaseFacts
  for case in _RUN:
    twin = _LOWERING[case.lowering_twin]
    (a, _), (b, _) = case.make_inputs(), twin.make_inputs()
    assert [(x.shape, x.dtype) for x in a] == [(y.shape, y.dtype) for y in b], case.case_id
  fact = CaseFacts(_RUN[0].case_id, "tpu", ("tpu",), False, None, _RUN[0].lowering_twin)
  assert CaseFacts.from_json(json.loads(json.dumps(fact.to_json())), "facts") == fact
  with pytest.raises(ValueError, match="lowering_twin"):
    dataclasses.replace(_RUN[0], lowering_twin=_RUN[0].case_id)
