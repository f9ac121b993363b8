"""The nightly workflow's cpu job runs repository commands; this test runs the same ones locally:
shards of a small store replayed by ``.ci/nightly-cpu shard``, merged by ``.ci/nightly-cpu merge``
into a report equal to the unsharded run's."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _sessions import session_here
from _report_helpers import without_cache_count

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

WORKFLOW = ROOT / ".github" / "workflows" / "nightly-compat.yml"
SCRIPT = ROOT / ".ci" / "nightly-cpu"
GOLDEN = ROOT / "compat_data" / "cpu"
ENTRIES = ("lapack_geqrf/qr_f32/2026-11-29_jax-0.10.2",
           "lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2",
           "lapack_getrf/release_lu_f32/2026-11-29_jax-0.4.30",
           "lapack_getrf/release_lu_f32/2026-11-29_jax-0.9.2")


def test_the_workflow_replays_every_shard_and_merges_them_with_the_script():
  text = WORKFLOW.read_text()
  count = int(re.search(r'\.ci/nightly-cpu shard "\$SHARD" (\d+) "\$FLAVOUR"', text).group(1))
  matrix = re.search(r"shard: \[([\d, ]+)\]", text).group(1)
  assert [int(x) for x in matrix.split(",")] == list(range(1, count + 1))
  assert "SHARD: ${{ matrix.shard }}" in text and "FLAVOUR: ${{ matrix.jax }}" in text
  for step in ("install", "merge", "corpus", "summary", "fuzz"):
    assert f'.ci/nightly-cpu {step} "$FLAVOUR"' in text


def _env(tmp_path: Path, root: Path) -> dict[str, str]:
  bindir = str(Path(sys.executable).parent)
  return dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
              REPORTS=str(tmp_path / "reports"), GOLDEN_ROOT=str(root),
              HARNESS="harness/test_replay.py",
              # One process a shard: four entries need no xdist workers, whose reports' merge
              # test_harness_sessions checks (the parallel report equals the serial one).
              WORKERS="0",
              PYTEST_ADDOPTS="--compat-today=2026-11-30 -p no:randomly -W ignore::DeprecationWarning")


def test_shard_reports_merge_into_the_unsharded_report(tmp_path):
  root = tmp_path / "golden"
  for e in ENTRIES:
    shutil.copytree(GOLDEN / e, root / "cpu" / e)
  env = _env(tmp_path, root)
  for i in ("1", "2"):
    subprocess.run([str(SCRIPT), "shard", i, "2", "test"], env=env, cwd=tmp_path,
                   capture_output=True, text=True)
  merged = subprocess.run([str(SCRIPT), "merge", "test"], env=env, cwd=tmp_path,
                          capture_output=True, text=True)
  # Four entries pass or fail as expected; the store covers few targets, so the run fails.
  assert merged.returncode == 1, merged.stderr[-3000:]
  assert "SESSION FAIL coverage:" in merged.stderr
  whole = tmp_path / "whole.json"
  session_here(ROOT, "harness/test_replay.py", "--platform=cpu", f"--compat-store={root}",
               f"--compat-report={whole}", *env["PYTEST_ADDOPTS"].split())
  report = json.loads((tmp_path / "reports" / "compat-cpu-test.json").read_text())
  assert without_cache_count(report) == without_cache_count(json.loads(whole.read_text()))
  assert report["summary"]["replayed"] == 4 and report["session_failures"]
  shard_ids = [{e["entry_id"] for e in json.loads(p.read_text())["entries"]}
               for p in sorted((tmp_path / "reports").glob("shard-cpu-test-*-of-2.json"))]
  assert len(shard_ids) == 2 and all(shard_ids) and not shard_ids[0] & shard_ids[1]
  assert (tmp_path / "reports" / "window-cpu-test.md").read_text()


def test_the_script_merges_with_the_checked_merge_of_the_project():
  text = SCRIPT.read_text()
  assert 'jaxport report merge --project . --store="$root"' in text
  assert "harness.tools.shards" not in text


def _night_report(data: dict, night: str, jax: str, failing: set[str]) -> dict:
  """``data`` as the report of an earlier night: its date, its jax build, and which entries
  failed that night."""
  out = json.loads(json.dumps(data))
  out["today"] = night
  out["versions"] = dict(out["versions"], jax=jax, jaxlib=jax)
  for e in out["entries"]:
    if e["entry_id"] not in failing:
      e.update(status="pass", kinds=[], messages=[], findings=[])
  return out


def test_the_nightly_dry_run_fails_on_a_broken_entry_and_names_the_first_nightly_showing_it(
    tmp_path):
  root = tmp_path / "golden"
  for e in ENTRIES[:2]:
    shutil.copytree(GOLDEN / e, root / "cpu" / e)
  # Tonight's break: the first entry's recorded outputs no longer match their digest.
  broken = f"cpu/{ENTRIES[0]}"
  outputs = root / broken / "expected.npz"
  outputs.write_bytes(outputs.read_bytes()[:-1] + bytes([outputs.read_bytes()[-1] ^ 1]))
  env = dict(_env(tmp_path, root), NIGHTLY_DRY_RUN="1", NIGHTLY_DATE="2026-11-30",
             HISTORY=str(tmp_path / "history"),
             GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
             GITHUB_OUTPUT=str(tmp_path / "outputs.txt"))
  step = lambda *a: subprocess.run([str(SCRIPT), *a], env=env, cwd=tmp_path,  # noqa: E731
                                   capture_output=True, text=True)
  installed = step("install", "nightly")
  assert installed.returncode == 0, installed.stderr[-3000:]
  assert "installed=true" in (tmp_path / "outputs.txt").read_text()
  replay = step("shard", "1", "1", "nightly")
  assert replay.returncode != 0, replay.stdout[-3000:]
  step("merge", "nightly")
  tonight = json.loads((tmp_path / "reports" / "compat-cpu-nightly.json").read_text())
  failing = {e["entry_id"] for e in tonight["entries"] if e["status"] == "fail"}
  assert failing == {broken}
  history = tmp_path / "history"
  history.mkdir()
  for night, jax, bad in (("2026-11-28", "0.12.1.dev20261127", set()),
                          ("2026-11-29", "0.12.1.dev20261128", failing)):
    (history / f"compat-cpu-nightly-{night}-1.json").write_text(
        json.dumps(_night_report(tonight, night, jax, bad)))
  summary = step("summary", "nightly")
  assert summary.returncode == 1, summary.stderr[-3000:]
  text = (tmp_path / "summary.md").read_text()
  assert "dry run: the installed jax stands in for this build" in text
  assert "## jaxport compatibility: cpu, 2026-11-30" in text
  assert (f"`{broken}`: failing in every run since; first shown by jax 0.12.1.dev20261128 "
          "(run 2026-11-29)") in text
  assert (tmp_path / "reports" / "compat-cpu-nightly.html").is_file()
  assert len(list(history.glob("compat-cpu-nightly-2026-11-30-*.json"))) == 1
