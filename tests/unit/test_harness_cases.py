"""The case registry reaches every stable CPU LAPACK target and the lowering-only targets."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import pytest  # noqa: E402

from jaxport.harness._controller import _coverage as coverage
from harness.cases import all_cases, cases_for  # noqa: E402
from jaxport.harness import _case# noqa: E402
from _harness_paths import repo_project  # noqa: E402


def test_declared_targets_cover_every_stable_cpu_target():
  declared = {t for c in cases_for("cpu") for t in c.targets}
  assert set(coverage.required_targets("cpu", repo_project())) <= declared


def test_lowering_only_cases_name_the_gpu_and_tpu_targets():
  lowering_only = {t for c in all_cases().values() if c.lowering_only for t in c.targets}
  assert {"cusolver_potrf_ffi", "hipsolver_potrf_ffi", "Eigh"} <= lowering_only


def test_case_ids_and_families_are_safe_directory_names():
  from jaxport.golden._manifest import is_safe_name
  for c in all_cases().values():
    assert is_safe_name(c.case_id) and is_safe_name(c.family), c


def test_inputs_are_deterministic():
  for c in cases_for("cpu")[:12]:
    (a1, k1), (a2, k2) = c.make_inputs(), c.make_inputs()
    assert all((x == y).all() for x, y in zip(a1, a2) if hasattr(x, "shape") and x.dtype.kind in "fc")
    assert sorted(k1) == sorted(k2)


def test_a_case_must_be_lowering_only_exactly_when_the_host_cannot_run_it():
  with pytest.raises(ValueError, match="lowering_only=False"):
    _case.Case("x", "f", abs, lambda: ((), {}), platforms=("cuda",))
  with pytest.raises(ValueError, match="platform '' is not a platform name"):
    _case.Case("x", "f", abs, lambda: ((), {}), platforms=("",))
