"""The command line as a new user meets it: version, producer version, store folders, progress, errors."""

import datetime
import importlib.metadata as md
import io
import json
import logging
from pathlib import Path

import jax
import pytest

from _cli_helpers import RECORD_DATE, qr_exported, write_qr_entry
from jaxport import _progress
from jaxport.cli import _harness_run, main
from jaxport.golden._store import GoldenStore

pytest_plugins = ["pytester"]
STORE = Path(__file__).resolve().parents[2] / "compat_data"
TODAY = (RECORD_DATE + datetime.timedelta(days=10)).isoformat()


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


@pytest.fixture
def store(tmp_path):
  return GoldenStore(tmp_path / "compat_data")


def test_version_names_jaxport_and_the_jax_it_runs_on(capsys):
  with pytest.raises(SystemExit) as exc:
    main(["--version"])
  assert exc.value.code == 0
  assert capsys.readouterr().out.strip() == (
      f"jaxport {md.version('jaxport')} (jax {jax.__version__}, jaxlib {md.version('jaxlib')})")


def test_inspect_shows_the_producing_jax_version_the_blob_records(store, tmp_path, capsys):
  entry = write_qr_entry(store)
  rc, out, _ = run(capsys, "inspect", str(entry.path))
  assert rc == 0 and f"  producer_jax_version: {jax.__version__}\n" in out
  # A blob of jax 0.9.2, which recorded no producer (jax writes one from 0.11.1 on).
  bare = next(STORE.glob("cpu/*/release_*/*_jax-0.9.2/exported.bin"))
  rc, out, _ = run(capsys, "inspect", str(bare), "--json")
  assert rc == 0 and json.loads(out)["exported"]["producer_jax_version"] is None
  rc, out, _ = run(capsys, "inspect", str(bare))
  assert "  producer_jax_version: not recorded\n" in out


@pytest.mark.parametrize("folder", ["cpu", "cpu/qr", "cpu/qr/qr_f32"])
def test_audit_of_a_store_folder_audits_its_entries_as_entries(store, capsys, folder):
  write_qr_entry(store)
  write_qr_entry(store, case_id="qr_f32", record_date=RECORD_DATE - datetime.timedelta(days=200))
  for strict in (False, True):
    rc, out, _ = run(capsys, "audit", str(store.root / folder), "--today", TODAY, "--no-drift",
                     "--json", *(["--compat-strict"] if strict else []))
    records = json.loads(out)["artifacts"]
    assert [r["kind"] for r in records] == ["entry", "entry"]
    assert sorted(r["days_to_expiry"] for r in records) == [-30, 170]
    said = [p for r in records for p in r["problems" if strict else "warnings"]]
    assert any("30 days past the 180-day compat window" in p for p in said)
    assert rc == (1 if strict else 0)


def test_audit_prints_plain_progress_lines_when_not_on_a_terminal(store, capsys):
  write_qr_entry(store)
  write_qr_entry(store, case_id="qr_b")
  rc, _, err = run(capsys, "audit", str(store.root), "--today", TODAY, "--no-drift")
  assert rc == 0
  assert "jaxport: auditing 1/2 cpu/qr/qr_b/" in err and "jaxport: auditing 2/2 cpu/qr/qr_f32/" in err
  assert "\r" not in err


class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_progress_is_a_bar_redrawn_in_place_on_a_terminal(monkeypatch, caplog):
  monkeypatch.setenv("TERM", "xterm")
  caplog.set_level(logging.INFO, logger="jaxport")
  term = _Terminal()
  assert list(_progress.track(["a", "b", "c", "d"], "auditing", stream=term)) == ["a", "b", "c", "d"]
  text = term.getvalue()
  assert text.count("\r") == 4 and text.endswith("\n")
  assert "auditing [######..................] 1/4 a" in text
  assert "auditing [########################] 4/4 d" in text


def test_audit_on_a_terminal_draws_the_bar_and_clears_it_for_messages(store, monkeypatch, capsys):
  monkeypatch.setenv("TERM", "xterm")
  write_qr_entry(store)
  term = _Terminal()
  monkeypatch.setattr("sys.stderr", term)
  rc, out, _ = run(capsys, "audit", str(store.root), "--today", TODAY, "--no-drift")
  assert rc == 0 and "1 artifact(s) audited" in out
  err = term.getvalue()
  assert err.startswith("\r\x1b[Kauditing [########################] 1/1 cpu/qr/qr_f32/")
  assert "jaxport: auditing" not in err and err.endswith("\n")


def test_harness_runs_show_progress_lines_instead_of_dots(pytester):
  pytester.makepyfile(test_three="def test_a(): pass\ndef test_b(): assert 0\ndef test_c(): pass\n")
  result = pytester.runpytest("-p", "no:randomly", *_harness_run.PROGRESS_ARGS)
  out = result.stdout.str()
  for i, name in enumerate(("test_a", "test_b", "test_c"), 1):
    assert "harness [" in out and f"] {i}/3 test_three.py::{name}" in out
  assert "test_three.py .F." not in out
  result.stdout.fnmatch_lines(["FAILED test_three.py::test_b - assert 0"])
  result.assert_outcomes(passed=2, failed=1)


def test_errors_name_the_command_once(monkeypatch, tmp_path, capsys):
  monkeypatch.chdir(tmp_path)
  rc, _, err = run(capsys, "record", "--project", "nowhere")
  assert rc == 2
  assert err.count("jaxport record:") == 1
  assert err.startswith("jaxport record: error: --project nowhere: no such directory")


def test_replay_without_the_test_extra_names_the_package_to_install(
    monkeypatch, tmp_path, capsys, fake_harness_run):
  calls = fake_harness_run()
  monkeypatch.chdir(tmp_path)
  real = _harness_run.importlib.util.find_spec
  monkeypatch.setattr(_harness_run.importlib.util, "find_spec",
                      lambda name, *a: None if name == "pytest" else real(name, *a))
  rc, _, err = run(capsys, "replay")
  assert rc == 2 and calls == []
  assert "cannot import pytest" in err and "pip install pytest" in err


def test_the_command_line_keeps_xlas_info_log_lines_out_of_its_output(tmp_path):
  import os
  import subprocess
  import sys
  from jaxport.cli._native_logs import NATIVE_LOG_LEVEL_ENV
  env = {k: v for k, v in os.environ.items() if k != NATIVE_LOG_LEVEL_ENV}
  code = ("import os, jaxport.cli, jax; jax.devices(); "
          f"print(os.environ[{NATIVE_LOG_LEVEL_ENV!r}])")
  done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.strip() == "1"
  assert " pjrt_client.cc:" not in done.stderr  # jax 0.12 logs its devices at INFO level
  chosen = subprocess.run([sys.executable, "-c", code], env={**env, NATIVE_LOG_LEVEL_ENV: "0"},
                          capture_output=True, text=True, timeout=300)
  assert chosen.stdout.strip() == "0"  # the caller's choice stands
