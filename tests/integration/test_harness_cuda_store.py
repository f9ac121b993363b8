"""A store's cuda entries in a CPU run: checked like lowering-only ones (both readers, targets,
signatures), their numerics skipped with the reason, the entries passing; and the cuda cases."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from _sessions import SessionResult, session_here
from _harness_paths import HARNESS_TESTS, ROOT, repo_project

from harness.cases import _cuda, _lowering_only  # noqa: E402
from harness.cases import case as lookup_case  # noqa: E402
from jaxport import _versions  # noqa: E402
from jaxport.golden._host import Accelerator, Host  # noqa: E402
from jaxport.golden._manifest import Comparison, Manifest, Producer  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402
from jaxport.harness._worker import _case_runs, _engine, _jax_setup, _lowering
from jaxport.harness._controller import _coverage
from jaxport.harness import default_tolerance
from jaxport.harness._protocol._answers import Stage  # noqa: E402
from jaxport.custom_calls import _registry  # noqa: E402
from _judging import reproduced  # noqa: E402
from jaxport.harness._judge._targets import module_target_verdicts  # noqa: E402

TODAY = datetime.date(2026, 12, 1)
GPU_HOST = Host(cpu_vendor="GenuineIntel", cpu_model="Some Xeon", cpu_flags=("avx", "avx2"),
                jaxlib="0.11.2", xla_flags="",
                accelerator=Accelerator("NVIDIA H200", "580.65.06", "13.0",
                                        "jax-cuda13-pjrt 0.11.2, jax-cuda13-plugin 0.11.2"))


def write_cuda_entry(store: GoldenStore, case_id: str, outputs: list[np.ndarray] | None = None):
  """A cuda entry of ``case_id`` as a cuda machine records it: the case exported for cuda here,
  with outputs (by default the function's result on this CPU, standing in for the device's)."""
  case = lookup_case(case_id)
  config = _jax_setup.case_jax_config(case)
  with _jax_setup.jax_config(config):
    exp = _case_runs.export_case(case)
    args, kwargs, inputs = _case_runs.case_inputs(case)
    if outputs is None:
      outputs = [np.asarray(x) for x in jax.tree.leaves(jax.jit(case.fun)(*args, **kwargs))]
  rtol, atol = default_tolerance(inputs[0].dtype)
  manifest = Manifest(
      case_id=case.case_id, family=case.family, platform="cuda", record_date=TODAY,
      producer=Producer.current(), host=GPU_HOST,
      calling_convention_version=exp.calling_convention_version,
      serialization_version=_versions.serialization_layout_version(),
      custom_call_targets=_lowering.signatures(exp.mlir_module_serialized),
      polymorphic_shapes=None, constraints=None, lowering_only=False,
      comparison=Comparison(case.checker, rtol, atol), jax_config=config)
  return store.write_entry(manifest, bytes(exp.serialize()), inputs, outputs, exp.mlir_module())


def test_every_stable_cuda_target_has_a_cuda_case_that_runs_it():
  cuda = {t for c in _cuda.cases() for t in c.targets}
  assert _registry.stable_targets("cuda") <= cuda
  assert {c.host_platform for c in _cuda.cases()} == {"cuda"}
  assert not any(c.lowering_only for c in _cuda.cases())
  rows = {suffix for platform, suffix, fun, *_ in _lowering_only._TABLE
          if platform == "cuda" and fun is not None}
  assert {c.case_id for c in _cuda.cases()} == {_cuda.PREFIX + s for s in rows}


def test_the_cuda_store_coverage_is_the_stable_cuda_table():
  required = _coverage.required_targets("cuda", repo_project())
  assert sorted(_registry.stable_targets("cuda")) == required and len(required) == 11


def test_a_cuda_entry_in_a_cpu_worker_is_read_not_run(tmp_path):
  engine = _engine.ReplayEngine(repo_project())
  store = GoldenStore(tmp_path)
  # Outputs no device could compute: a run would reject them, a check without running cannot.
  written = write_cuda_entry(store, "cuda_run_cholesky_f32", [np.full((4, 4), 7.0, np.float32)])
  try:
    answer = engine.replay(store.entry(written.entry_id).snapshot(), run=False)
  finally:
    engine.close()
  assert [reproduced(r) for r in answer.readers] == [True, True], answer.readers
  assert all(r.stage is Stage.MODULE and r.platforms == ("cuda",) for r in answer.readers)
  assert all(r.numerics is None for r in answer.readers)
  # Each reader reports the module as read; the judge finds its target stable from it.
  assert all(module_target_verdicts(written.manifest.custom_call_targets, r.platforms, None,
                                    r.allowed_targets) == {"cusolver_potrf_ffi": "stable"}
             for r in answer.readers)
  assert answer.today.signature_diff == () and answer.today.numerics is None
  assert answer.host.get("accelerator") is None, "the replaying host is this CPU host"


def _cpu_run(store: Path, report: Path, *extra: str) -> SessionResult:
  return session_here(ROOT, str(HARNESS_TESTS), "--platform=cpu", f"--compat-store={store}",
                      f"--compat-report={report}", f"--compat-today={TODAY}", *extra)


@pytest.mark.slow
def test_a_cpu_run_checks_cuda_entries_lowering_only_and_passes_them(tmp_path):
  store = GoldenStore(tmp_path / "store")
  ids = [write_cuda_entry(store, c).entry_id for c in ("cuda_run_cholesky_f32", "cuda_run_lu_f32")]
  # A wrong output is not seen without a device: the CPU run must not fail on numerics.
  case = lookup_case("cuda_run_qr_f32")
  bad = write_cuda_entry(store, case.case_id, [np.zeros((4, 4), np.float32)] * 2).entry_id
  report_path = tmp_path / "report.json"
  run = _cpu_run(store.root, report_path)
  report = json.loads(report_path.read_text())
  entries = {e["entry_id"]: e for e in report["entries"]}
  assert sorted(entries) == sorted(str(i) for i in [*ids, bad]), run.stdout[-3000:]
  for entry_id, e in entries.items():
    assert e["status"] == "pass", (entry_id, e["messages"])
    assert e["lowering_only"] is False and e["platforms"] == ["cuda"]
    assert set(e["target_verdicts"].values()) == {"stable"}
  skipped = {s["what"]: s["why"] for s in report["skips"]}
  for entry_id in entries:
    assert "numerics need a cuda device" in skipped[entry_id]
  assert "judged by a run on a cuda machine" in skipped["coverage of the cuda entries"]
  assert report["summary"]["present"] == report["summary"]["replayed"] == 3
  assert report["summary"]["fail"] == 0
  # The store has no cpu entries, so the cpu coverage fails; nothing else does, and no cuda
  # entry is taken for an orphan or a missing cpu case.
  assert report["session_failures"] and all(
      "cuda_run_" not in f and "tripwire" not in f for f in report["session_failures"])
  assert not any("cuda_run_" in w for w in report["session_warnings"])
  assert "cusolver_potrf_ffi" not in report["targets"]["missing_reachable"]


def test_an_empty_cuda_folder_lists_nothing_and_no_problem(tmp_path):
  (tmp_path / "cuda").mkdir()
  (tmp_path / "cuda" / ".gitkeep").write_text("")
  assert GoldenStore(tmp_path).listing() == ([], [])
  assert (ROOT / "compat_data" / "cuda").is_dir()
  assert GoldenStore(ROOT / "compat_data").listing()[1] == []
