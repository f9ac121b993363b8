"""jax's backend named as the harness names platforms (a CUDA or ROCm backend is jax's ``gpu``),
and which platforms' entries a run checks, and how."""

from __future__ import annotations

import pytest

from jaxport.harness import _devices, _plugin


@pytest.mark.parametrize("backend,version,platform", [
    ("gpu", "cuda 13000", "cuda"),
    ("gpu", "CUDA 12080", "cuda"),
    ("gpu", "rocm 60300", "rocm"),
    ("gpu", "hip 6.3", "rocm"),
    ("gpu", "<unknown>", "gpu"),
    ("cpu", "cpu", "cpu"),
    ("tpu", "PJRT C API", "tpu"),
    ("cuda", "", "cuda"),
])
def test_jax_backend_names_map_to_harness_platforms(backend, version, platform):
  assert _devices.harness_platform(backend, version) == platform


def _fake_backend(monkeypatch, platform: str, version: str) -> None:
  monkeypatch.setattr(_devices, "_jax_backend", lambda: (platform, version))


def test_a_cuda_run_accepts_jax_gpu_backend_when_its_client_names_cuda(monkeypatch):
  _fake_backend(monkeypatch, "gpu", "cuda 13000")
  assert _devices.backend_platform() == "cuda"
  _plugin._check_backend("cuda")  # no error: the gpu backend is cuda


def test_a_cuda_run_on_a_rocm_or_cpu_backend_is_a_usage_error_naming_both(monkeypatch):
  _fake_backend(monkeypatch, "gpu", "rocm 60300")
  with pytest.raises(pytest.UsageError, match="--compat-platform=cuda .* backend is rocm"):
    _plugin._check_backend("cuda")
  _fake_backend(monkeypatch, "cpu", "cpu")
  with pytest.raises(pytest.UsageError, match="pass --compat-platform=cpu"):
    _plugin._check_backend("cuda")


def test_a_cpu_run_checks_the_accelerators_entries_and_an_accelerator_run_only_its_own():
  assert _devices.checked_platforms("cpu") == ("cpu", "cuda", "rocm", "tpu")
  assert _devices.checked_platforms("cuda") == ("cuda",)
  assert _devices.numerics_skip("cuda", "cuda") is None
  assert _devices.numerics_skip("cpu", "cpu") is None
  why = _devices.numerics_skip("cpu", "cuda")
  assert "numerics need a cuda device" in why and "--compat-platform=cuda" in why


def test_the_skip_ledger_leaves_the_accelerators_coverage_to_their_own_runs():
  from jaxport.report import _coverage
  present = ["cpu/f/a/2026-01-01_jax-0.10.2", "cuda/run_cuda/b/2026-01-01_jax-0.11.2",
             "cuda/run_cuda/c/2026-01-01_jax-0.11.2"]
  (line,) = _coverage.device_store_skips("cpu", present)
  assert line.what == "coverage of the cuda entries"
  assert "--compat-platform=cuda" in line.why and "checked its 2 entries" in line.why
  assert _coverage.device_store_skips("cpu", present[:1]) == []
