"""jax's backend named as the harness names platforms (a CUDA or ROCm backend is jax's ``gpu``),
what a run makes of its worker's devices, and which platforms' entries a run checks, and how."""

from __future__ import annotations

import re

import pytest

from jaxport._isolation._process import PARENT_PID_ENV
from jaxport.golden import EntryId
from jaxport.harness._worker import _device_probe
from jaxport.harness import _devices
from jaxport.harness._controller._device_check import check_devices
from jaxport.harness._protocol._answers import DevicesAnswer
from jaxport.harness._protocol._requests import DevicesRequest
from jaxport._platforms import PLATFORMS


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


class _AnsweringPool:
  """A worker pool whose one worker answers a device probe with ``answer``."""

  def __init__(self, answer):
    self.answer_given = answer
    self.asked = 0

  def worker(self, num_devices: int = 1):
    return self

  def request(self, request):
    assert isinstance(request, DevicesRequest)
    self.asked += 1
    return self.answer_given

  def answer(self, reply, kind):
    return reply


def test_a_cuda_run_accepts_a_worker_whose_gpu_backend_is_cuda():
  pool = _AnsweringPool(DevicesAnswer("cuda", "NVIDIA H100", 1))
  check = check_devices(pool, "cuda")
  assert check.problem is None and check.count == 1 and pool.asked == 1


def test_a_cuda_run_on_a_rocm_or_cpu_worker_is_refused_naming_both():
  check = check_devices(_AnsweringPool(DevicesAnswer("rocm", "MI300", 1)), "cuda")
  assert check.mismatch and re.search("--compat-platform=cuda .* backend is rocm", check.problem)
  check = check_devices(_AnsweringPool(DevicesAnswer("cpu", "cpu", 1)), "cuda")
  assert check.mismatch and "pass --compat-platform=cpu" in check.problem


def test_a_cpu_run_asks_its_worker_nothing():
  pool = _AnsweringPool(DevicesAnswer("tpu", "TPU v5 lite", 1))
  assert check_devices(pool, "cpu").problem is None and pool.asked == 0


def test_a_device_that_did_not_open_names_the_holder_and_the_fix_and_is_no_mismatch():
  error = ("jax's backend did not open: RuntimeError: Unable to initialize backend 'tpu'. "
           "Holding the device: the pytest process that runs this harness, pid 7 (pytest)")
  check = check_devices(_AnsweringPool(DevicesAnswer("", "", 0, error=error)), "tpu")
  assert not check.mismatch
  assert "pid 7" in check.problem and "--compat-only" in check.problem
  assert "One process at a time can hold a tpu chip" in check.problem


def test_an_entry_needing_more_devices_than_the_machine_has_is_read_but_not_run():
  check = check_devices(_AnsweringPool(DevicesAnswer("tpu", "TPU v5 lite", 1)), "tpu")
  assert check.shortfall(1) is None
  why = check.shortfall(2)
  assert "needs 2 tpu devices and this machine has 1" in why
  assert check_devices(_AnsweringPool(None), "cpu").shortfall(8) is None


def test_a_cpu_runs_workers_are_held_to_the_cpu_and_others_keep_the_callers_setting():
  assert _devices.worker_environment("cpu", {"JAX_PLATFORMS": "tpu"})["JAX_PLATFORMS"] == "cpu"
  assert _devices.worker_environment("cpu", {})["JAX_PLATFORMS"] == "cpu"
  assert "JAX_PLATFORMS" not in _devices.worker_environment("tpu", {})


def test_the_holders_of_a_library_are_read_from_proc_and_the_parent_is_named(tmp_path,
                                                                             monkeypatch):
  def process(pid: int, maps: str, cmdline: bytes) -> None:
    folder = tmp_path / str(pid)
    folder.mkdir()
    (folder / "maps").write_text(maps)
    (folder / "cmdline").write_bytes(cmdline)

  process(11, "7f00-7f01 r-xp 0 0:0 0 /usr/lib/libtpu.so\n", b"python3\0-m\0pytest")
  process(12, "7f00-7f01 r-xp 0 0:0 0 /usr/lib/libc.so\n", b"bash")
  process(13, "7f00-7f01 r-xp 0 0:0 0 /opt/site/libtpu/libtpu.so\n", b"python3\0train.py")
  (tmp_path / "self").mkdir()
  monkeypatch.setenv(PARENT_PID_ENV, "11")
  holders = _device_probe.library_holders("libtpu", tmp_path)
  assert holders == ["the pytest process that runs this harness, pid 11 (python3 -m pytest)",
                     "another process, pid 13 (python3 train.py)"]


def test_a_cpu_run_checks_the_accelerators_entries_and_an_accelerator_run_only_its_own():
  assert _devices.checked_platforms("cpu") == PLATFORMS
  assert _devices.checked_platforms("cuda") == ("cuda",)
  assert _devices.numerics_skip("cuda", "cuda") is None
  assert _devices.numerics_skip("cpu", "cpu") is None
  why = _devices.numerics_skip("cpu", "cuda")
  assert "numerics need a cuda device" in why and "--compat-platform=cuda" in why


def test_the_skip_ledger_leaves_the_accelerators_coverage_to_their_own_runs():
  from jaxport.report import _coverage
  present = [EntryId.parse(text) for text in (
      "cpu/f/a/2026-01-01_jax-0.10.2", "cuda/run_cuda/b/2026-01-01_jax-0.11.2",
      "cuda/run_cuda/c/2026-01-01_jax-0.11.2")]
  (line,) = _coverage.device_store_skips("cpu", present)
  assert line.what == "coverage of the cuda entries"
  assert "--compat-platform=cuda" in line.why and "checked its 2 entries" in line.why
  assert _coverage.device_store_skips("cpu", present[:1]) == []
