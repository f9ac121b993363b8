"""``jaxport record/replay --with-jax``: thin calls into the multi-release tools."""

import sys
from pathlib import Path

from jaxport.cli import main


def test_record_with_jax_runs_the_recorder_tool(monkeypatch, tmp_path, fake_harness_run):
  calls = fake_harness_run()
  monkeypatch.chdir(tmp_path)
  assert main(["record", "--with-jax", "0.9.2", "--", "--case", "release_lu_f32"]) == 0
  (cmd, cwd), = calls
  assert cmd == [sys.executable, "harness/tools/record_with_jax.py", "--jax", "0.9.2",
                 "--case", "release_lu_f32"]
  assert Path(cwd) == tmp_path


def test_replay_with_jax_writes_the_matrix_where_the_report_goes(monkeypatch, tmp_path, fake_harness_run):
  calls = fake_harness_run()
  monkeypatch.chdir(tmp_path)
  assert main(["replay", "--with-jax", "0.8.3", "--compat-report", "out/fwd",
               "--current-build-only"]) == 0
  assert main(["replay", "--with-jax", "0.8.3"]) == 0
  (first, _), (second, _) = calls
  assert first == [sys.executable, "harness/tools/replay_with_jax.py", "--jax", "0.8.3", "--out",
                   str((tmp_path / "out" / "fwd").resolve()), "--current-build-only"]
  assert second[-1] == str((tmp_path / "reports" / "with-jax-0.8.3").resolve())


def test_without_the_flag_the_harness_runs_as_before(monkeypatch, tmp_path, fake_harness_run):
  calls = fake_harness_run()
  monkeypatch.chdir(tmp_path)
  assert main(["replay", "--platform", "cpu"]) == 0
  assert calls[0][0][1:5] == ["-m", "pytest", str(tmp_path), "--compat-only"]
