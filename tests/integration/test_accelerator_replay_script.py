"""The accelerator run's script in its dry-run mode on the CPU: the same steps into a temporary
store, the output folder's layout (archive, report, log), its arguments, a run whose steps fail,
and the summary of a platform with no cases yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from _harness_paths import ROOT

from jaxport.golden._store import GoldenStore  # noqa: E402
from tools.accelerator import _accelerator_run as _run_steps  # noqa: E402

SCRIPT = ROOT / "tools" / "accelerator" / "replay_on_accelerator.sh"
STEPS = ["install", "probe", "cases", "seed", "record", "crosscheck", "replay", "corpus-import",
         "corpus"]
# Two cases (a CPU LAPACK one and a lowering-only cuda one) and one corpus file keep it short.
CASES = "--cases=cholesky_f32 and not release and not rocm"
CORPUS = "--corpus-files=cpu_cholesky_lapack_potrf.py"


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
  bindir = str(Path(sys.executable).parent)
  env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
  env.pop("JAXPORT_ACCELERATOR_PLATFORM", None)
  return subprocess.run([str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                        timeout=timeout)


def _layout(out: Path) -> dict:
  files = sorted(p.name for p in out.iterdir())
  assert all((out / f).is_file() for f in files), "the output folder holds files only"
  assert {_run_steps.ARCHIVE, _run_steps.REPORT, _run_steps.LOG} <= set(files) <= set(_run_steps.OUTPUT_FILES)
  assert len(files) <= 8
  return json.loads((out / _run_steps.REPORT).read_text())


@pytest.mark.slow
def test_the_dry_run_records_crosschecks_and_replays_into_an_archive_a_report_and_a_log(tmp_path):
  out = tmp_path / "out"
  run = _run(str(out), "--platform=cpu", CASES, CORPUS)
  report = _layout(out)
  assert run.returncode == 0 and report["ok"], (report["verdicts"], run.stdout[-3000:])
  assert report["platform"] == "cpu" and report["cases"]
  steps = {s["step"]: s for s in report["steps"]}
  assert list(steps) == STEPS
  # The install only tries itself on the CPU (pip --dry-run); whether this environment can build
  # the package is judged by the steps after it, which load jaxport from the checkout anyway.
  assert all(s["rc"] == 0 for name, s in steps.items() if name != "install"), report["steps"]
  assert report["corpus"]["imported"] == 4 and report["corpus"]["failing"] == []
  # The archive holds today's new entries under compat_data/, ready to unpack at the root.
  with tarfile.open(out / _run_steps.ARCHIVE) as tar:
    names = tar.getnames()
    assert names and all(n.startswith("compat_data/cpu/") for n in names)
    tar.extractall(tmp_path / "unpacked", filter="data")
  unpacked = GoldenStore(tmp_path / "unpacked" / "compat_data").entries()
  assert {e.manifest.case_id for e in unpacked} == {"cholesky_f32", "cuda_cholesky_f32"}
  for e in unpacked:
    e.verify()
  assert sorted(report["archive"]["entries"]) == sorted(str(e.entry_id) for e in unpacked)
  checked = {c["case_id"]: c for c in report["crosscheck"]}
  assert checked["cholesky_f32"]["status"] == "pass"
  assert checked["cholesky_f32"]["cpu_against_recorded"]["ok"]
  assert checked["cuda_cholesky_f32"]["status"] == "skipped"
  rows = {r["target"]: r for r in report["targets"]}
  assert rows["lapack_spotrf_ffi"]["status"] == "covered"
  assert rows["lapack_dpotrf_ffi"]["reason"] == "not selected by --cases"
  log = (out / _run_steps.LOG).read_text()
  assert "== record" in log and "== corpus" in log and "== summary" in log


@pytest.mark.slow
def test_a_run_whose_steps_fail_still_writes_its_report_archive_and_log(tmp_path):
  out = tmp_path / "out"
  run = _run(str(out), "--platform=cpu", "--cases=no_case_has_this_name",
             "--corpus-files=no_such_file.py")
  assert run.returncode == 1, run.stderr[-3000:]
  report = _layout(out)
  assert report["ok"] is False and report["archive"]["entries"] == []
  steps = {s["step"]: s["rc"] for s in report["steps"]}
  assert list(steps) == STEPS
  assert steps["record"] != 0 and steps["crosscheck"] != 0 and steps["corpus-import"] != 0
  assert not report["verdicts"]["crosscheck"]


@pytest.mark.parametrize("args,message", [
    ((), "name the output folder"),
    (("{out}",), "name the platform"),
    (("{out}", "--platform=gpu"), "expected cuda or rocm (a GPU), tpu"),
    (("{out}", "--platform=tpu", "--wheels={full}"), "expected a folder holding the wheels"),
    (("{out}", "--platform=tpu", "--budget-s=5"), "expected whole seconds"),
    (("{out}", "--platform=tpu", "--jobs=many"), "expected a whole number"),
    (("{out}", "--verbose"), "unknown option --verbose"),
    (("{out}", "{out}"), "one OUT_DIR only"),
    (("{full}", "--platform=tpu"), "is not an empty folder"),
])
def test_bad_arguments_are_refused_before_any_step(tmp_path, args, message):
  full = tmp_path / "full"
  full.mkdir()
  (full / "old-report.json").write_text("{}")
  args = [a.format(out=tmp_path / "new", full=full) for a in args]
  run = _run(*args, timeout=60)
  assert run.returncode == 2 and message in run.stderr
  assert not (tmp_path / "new").exists() and [p.name for p in full.iterdir()] == ["old-report.json"]


def test_the_script_parses_is_executable_and_the_nightly_cuda_job_runs_it():
  assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
  assert os.access(SCRIPT, os.X_OK)
  text = (ROOT / ".github" / "workflows" / "nightly-compat.yml").read_text()
  start = text.index("\n  record-replay-cuda:\n")
  job = text[start:text.index("\n  release-matrix:\n")]
  assert "python3.12 -m venv" in job and "-c .ci/constraints-py312.txt" in job
  assert 'jax[cuda13]==' in job and "cuda12" not in job
  assert ("tools/accelerator/replay_on_accelerator.sh reports/gpu --platform=cuda"
          in " ".join(job.split()))
  assert "reports/gpu/compat-replay.json" in job


def test_a_platform_with_no_cases_yet_is_judged_by_its_corpus_alone(tmp_path):
  work, out = tmp_path / "work", tmp_path / "out"
  work.mkdir()
  out.mkdir()
  rows = ["install\t0\t3\t90", "probe\t0\t12\t60", "cases\t0\t2\t30",
          "record\tnone\t0\t0", "crosscheck\tnone\t0\t0", "replay\tnone\t0\t0",
          "corpus-import\t0\t3\t45", "corpus\t0\t40\t180"]
  (work / _run_steps.STEPS_FILE).write_text("\n".join(rows) + "\n")
  corpus = {"summary": {"fail": 0, "replayed": 15}, "session_failures": [], "entries": []}
  (work / _run_steps.HARNESS_REPORTS["corpus"]).write_text(json.dumps(corpus))
  report = _run_steps.summarize(work, out, "tpu", None, tmp_path / "no_store")
  assert report["ok"], report
  assert set(report["verdicts"]) == {"steps", "corpus"}
  assert set(report["not_judged"]) == {"targets", "crosscheck", "replay"}
  assert "no tpu cases are registered yet" in report["not_judged"]["replay"]
  # The same run with a failing corpus replay is not ok: the corpus is what is judged.
  corpus["summary"]["fail"] = 1
  (work / _run_steps.HARNESS_REPORTS["corpus"]).write_text(json.dumps(corpus))
  out2 = tmp_path / "out2"
  out2.mkdir()
  assert not _run_steps.summarize(work, out2, "tpu", None, tmp_path / "no_store")["ok"]
