"""The recording host of a golden entry: its record, its classes, and manifest format 2."""

import dataclasses
import json
from pathlib import Path

import pytest

from jaxport.errors import GoldenDataError
from jaxport.golden import _host
from jaxport.golden._host import Accelerator, Host
from jaxport.golden._manifest import FORMAT_VERSION, Manifest
from jaxport.golden._store import GoldenStore

from test_golden_store import EXPECTED, INPUTS, make_manifest

ROOT = Path(__file__).resolve().parents[2]
HOST = Host(cpu_vendor="GenuineIntel", cpu_model="Some Xeon", cpu_flags=("fma", "avx2", "avx"),
            jaxlib="0.12.0.1", xla_flags="")

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile hypervisor ssse3

processor\t: 1
vendor_id\t: SomeoneElse
"""


def test_cpuinfo_keeps_the_first_processor_and_only_the_listed_flags():
  vendor, model, flags = _host.read_cpuinfo(CPUINFO)
  assert (vendor, model) == ("AuthenticAMD", "AMD EPYC 7B13")
  assert flags == ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
  assert _host.read_cpuinfo("") == (None, None, None)


def test_the_running_host_is_fully_known_on_linux_and_of_its_own_class():
  here = _host.current_host("cpu")
  if not _host.CPUINFO.exists():
    pytest.skip("no /proc/cpuinfo on this system: its CPU is unknown, so no class is known")
  assert here.jaxlib is not None and here.xla_flags is not None and here.accelerator is None
  assert here.same_class(_host.current_host("cpu"))


def test_two_hosts_are_one_class_only_when_every_field_is_known_and_equal():
  assert HOST.same_class(dataclasses.replace(HOST, cpu_flags=("avx", "avx2", "fma")))
  assert not HOST.same_class(None)
  for change in ({"cpu_flags": ("avx", "avx2", "fma", "avx512f")}, {"jaxlib": "0.12.0"},
                 {"xla_flags": "--xla_cpu_enable_fast_math=true"}, {"cpu_model": "Other"}):
    other = dataclasses.replace(HOST, **change)
    assert not HOST.same_class(other) and list(change)[0] in " ".join(HOST.differences(other))
  unknown = dataclasses.replace(HOST, cpu_model=None)
  assert not unknown.same_class(unknown)
  assert "cpu_model unknown" in HOST.differences(unknown)
  gpu = dataclasses.replace(HOST, accelerator=Accelerator("NVIDIA H200", "570.1", "cuda12", None))
  assert not gpu.same_class(gpu), "an unknown plugin version makes the class unknown"


def test_a_host_record_round_trips_through_a_manifest_and_its_digest(tmp_path):
  store = GoldenStore(tmp_path / "compat_data")
  entry = store.write_entry(make_manifest(host=HOST), b"blob", INPUTS, EXPECTED, "module @m {}\n")
  text = (entry.path / "manifest.json").read_text()
  d = json.loads(text)
  assert d["format_version"] == FORMAT_VERSION == 4
  assert d["host"]["cpu_flags"] == ["avx", "avx2", "fma"]
  assert entry.manifest.host == HOST
  entry.verify()


def test_entries_of_format_1_verify_unchanged_with_an_unknown_host():
  old = sorted((ROOT / "compat_data" / "cpu").glob("*/*/*/manifest.json"))
  assert old, "the repository's store holds entries"
  for path in old:
    text = path.read_text()
    m = Manifest.from_json(text, str(path))
    if json.loads(text)["format_version"] == 1:
      assert m.host is None and m.min_consumer is None
      assert json.loads(m.to_json()) == json.loads(text), f"{path}: re-serialized differently"


def _with(field, value, format_version=FORMAT_VERSION):
  d = json.loads(make_manifest().to_json())
  d.pop("digest")
  d["format_version"] = format_version
  d[field] = value
  from jaxport.golden._manifest import _digest
  d["digest"] = _digest(d)   # a careful forger: the digest matches
  return json.dumps(d)


@pytest.mark.parametrize("value,match", [
    ("AMD", "host: expected an object"),
    ({**HOST.to_json(), "cpu_flags": ["avx", "hypervisor"]}, "host.cpu_flags: expected null or"),
    ({**HOST.to_json(), "cpu_flags": ["avx2", "avx"]}, "host.cpu_flags: expected sorted flags"),
    ({**HOST.to_json(), "jaxlib": 3}, "host.jaxlib: expected null or printable text"),
    ({**HOST.to_json(), "cpu_model": "x" * 500}, "host.cpu_model: expected null or printable"),
    ({k: v for k, v in HOST.to_json().items() if k != "jaxlib"}, "host: missing jaxlib"),
    ({**HOST.to_json(), "gpu": "yes"}, "host: unknown key 'gpu'"),
    ({**HOST.to_json(), "accelerator": {"device_kind": "H200"}}, "host.accelerator: missing "),
])
def test_a_malformed_host_record_is_golden_data_error(value, match):
  with pytest.raises(GoldenDataError, match=match):
    Manifest.from_json(_with("host", value), "m.json")


def test_fields_of_format_2_are_refused_in_a_format_1_manifest():
  with pytest.raises(GoldenDataError, match="'host' needs format_version 2"):
    Manifest.from_json(_with("host", HOST.to_json(), format_version=1), "m.json")
  with pytest.raises(GoldenDataError, match="'min_consumer' needs format_version 2"):
    Manifest.from_json(_with("min_consumer", "0.9.2", format_version=1), "m.json")


def test_min_consumer_is_a_release_version():
  assert Manifest.from_json(_with("min_consumer", "0.9.2"), "m.json").min_consumer == "0.9.2"
  with pytest.raises(GoldenDataError, match="min_consumer: expected a jax release"):
    Manifest.from_json(_with("min_consumer", "latest"), "m.json")


class _FakeClient:
  platform_version = "cuda 13000"


class _FakeGpu:
  platform = "gpu"
  device_kind = "NVIDIA H200"
  client = _FakeClient()


class _Dist:
  def __init__(self, name, version):
    self.metadata, self.version = {"Name": name}, version


def _fake_gpu_machine(monkeypatch, tmp_path, driver_text: str | None):
  import jax
  monkeypatch.setattr(jax, "devices", lambda backend=None: [_FakeGpu()])
  monkeypatch.setattr(_host.md, "distributions", lambda: [
      _Dist("jax_cuda13_plugin", "0.11.2"), _Dist("jax-cuda13-pjrt", "0.11.2"),
      _Dist("jax-rocm7-plugin", "0.11.2"), _Dist("numpy", "2.3.0")])
  driver = tmp_path / "nvidia-version"
  if driver_text is not None:
    driver.write_text(driver_text)
  monkeypatch.setattr(_host, "NVIDIA_DRIVER_FILE", driver)


def test_a_cuda_host_record_names_device_kind_driver_cuda_and_plugin_versions(monkeypatch, tmp_path):
  _fake_gpu_machine(monkeypatch, tmp_path, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
                                           "580.65.06  Sun Jul 27 07:09:29 UTC 2025\n")
  host = _host.current_host("cuda")
  assert host.accelerator == Accelerator(
      device_kind="NVIDIA H200", driver="580.65.06", cuda="13.0",
      plugin="jax-cuda13-pjrt 0.11.2, jax-cuda13-plugin 0.11.2")
  assert host.fully_known and host.same_class(_host.current_host("cuda"))
  assert Host.from_json(host.to_json(), "here") == host


def test_a_cuda_host_without_the_proc_driver_file_asks_nvidia_smi(monkeypatch, tmp_path):
  _fake_gpu_machine(monkeypatch, tmp_path, None)
  answers = {"rc": 0, "out": "580.65.06\n"}

  def fake_run(cmd, **kwargs):
    assert cmd[0] == "nvidia-smi"
    return _host.subprocess.CompletedProcess(cmd, answers["rc"], answers["out"], "")
  monkeypatch.setattr(_host.subprocess, "run", fake_run)
  assert _host.current_host("cuda").accelerator.driver == "580.65.06"
  answers.update(rc=9, out="")
  assert _host.current_host("cuda").accelerator.driver is None


def test_runtime_versions_are_read_from_the_client_platform_version():
  assert _host.runtime_version("cuda 12080") == "12.8"
  assert _host.runtime_version("rocm 60300") == "6.3.0"
  assert _host.runtime_version("<unknown>") is None and _host.runtime_version(None) is None


def test_a_replay_on_the_recording_machine_with_another_jaxlib_is_not_called_another_host_class():
  from jaxport.harness._judge._findings import _Hosts
  newer = dataclasses.replace(HOST, jaxlib="0.99.0")
  assert HOST.same_machine(newer) and not HOST.same_class(newer)
  why = _Hosts(HOST, newer).why_not
  assert "another host class" not in why
  assert why.startswith("recorded on a machine of this class with other software (jaxlib ")
  assert "0.99.0" in why
  other_cpu = dataclasses.replace(newer, cpu_model="Another CPU")
  assert not HOST.same_machine(other_cpu)
  assert _Hosts(HOST, other_cpu).why_not.startswith("recorded on another host class (cpu_model")
  assert not HOST.same_machine(None)
  assert not dataclasses.replace(HOST, cpu_model=None).same_machine(HOST)
