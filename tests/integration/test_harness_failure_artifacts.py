"""Real pytest sessions of a small project with ``--compat-artifacts`` and ``--compat-preset``:
a tampered entry fails and its folder holds the obtained outputs, today's module text and
the diff of the modules; a passing entry leaves nothing; presets set options that explicit
ones override; an unknown preset is a usage error naming the known ones."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from _downstream_project import write_project  # noqa: E402
from jaxport.golden import EntryId
from jaxport.golden._manifest import EXPECTED_FILE
from jaxport.harness._protocol import _artifact_folder

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-11-30"
CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case


def _inputs():
  return (np.arange(6, dtype=np.float32).reshape(2, 3),), {}


def cases():
  return [Case("twice_f32", "mine", lambda x: jnp.sin(x) * 2, _inputs)]
"""
ENTRY_ID = f"cpu/mine/twice_f32/{TODAY}_jax-{jax.__version__}"


def _run(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}", *args)


@pytest.fixture
def recorded(pytester):
  store = write_project(pytester, CASES)
  result = _run(pytester, "--compat-record")
  assert result.ret == 0, result.stdout.str()
  return store


def test_a_tampered_entry_fails_and_its_artifacts_are_written(pytester, recorded, tmp_path):
  out = tmp_path / "artifacts"
  result = _run(pytester, f"--compat-artifacts={out}")
  assert result.ret == 0, result.stdout.str()
  assert not out.exists(), "a passing entry leaves no artifacts"

  expected = recorded.entry(EntryId.parse(ENTRY_ID)).path / EXPECTED_FILE
  data = bytearray(expected.read_bytes())
  data[-40] ^= 0xFF
  expected.write_bytes(bytes(data))
  result = _run(pytester, f"--compat-artifacts={out}")
  assert result.ret == 1
  result.assert_outcomes(failed=1, deselected=1)
  folder = out / _artifact_folder.folder_name(ENTRY_ID)
  assert f"artifacts: {folder}" in result.stdout.str()
  assert sorted(p.name for p in out.iterdir()) == [folder.name]
  assert sorted(p.name for p in folder.iterdir()) == sorted(
      [_artifact_folder.OBTAINED_FILE, _artifact_folder.TODAY_MODULE_FILE, _artifact_folder.DIFF_FILE,
       _artifact_folder.RAW_DIFF_FILE, _artifact_folder.SUMMARY_FILE])
  with np.load(folder / _artifact_folder.OBTAINED_FILE, allow_pickle=False) as npz:
    obtained = npz["arr_0"]
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(obtained, np.sin(x) * 2, rtol=1e-6)
  assert "func.func public @main" in (folder / _artifact_folder.TODAY_MODULE_FILE).read_text()
  diff = (folder / _artifact_folder.DIFF_FILE).read_text()
  assert diff == "" or diff.startswith("--- recorded/module.mlir\n+++ today/module.mlir\n")
  assert "loc(" not in diff  # what the case computes, not where its lines moved
  raw = (folder / _artifact_folder.RAW_DIFF_FILE).read_text()
  assert raw == "" or raw.startswith("--- recorded/module.mlir\n+++ today/module.mlir\n")
  summary = json.loads((folder / _artifact_folder.SUMMARY_FILE).read_text())
  assert summary["entry_id"] == ENTRY_ID and summary["problems"] == []
  assert summary["files"] == sorted([_artifact_folder.OBTAINED_FILE, _artifact_folder.TODAY_MODULE_FILE,
                                     _artifact_folder.DIFF_FILE, _artifact_folder.RAW_DIFF_FILE])


def test_a_preset_sets_options_and_an_explicit_option_overrides_it(pytester, recorded, tmp_path):
  report = tmp_path / "report.json"
  result = _run(pytester, "--compat-preset=strict-cold", f"--compat-report={report}")
  assert result.ret == 0, result.stdout.str()
  assert json.loads(report.read_text())["strict"] is True

  (recorded.entry(EntryId.parse(ENTRY_ID)).path / EXPECTED_FILE).write_bytes(b"not an npz")
  mine = tmp_path / "mine"
  result = _run(pytester, "--compat-preset=ci", f"--compat-artifacts={mine}")
  assert result.ret == 1
  assert (mine / _artifact_folder.folder_name(ENTRY_ID) / _artifact_folder.SUMMARY_FILE).is_file()
  assert not (pytester.path / "compat-artifacts").exists()


def test_an_unknown_preset_is_a_usage_error_naming_the_known_ones(pytester):
  write_project(pytester, CASES)
  (pytester.path / "golden").mkdir()
  result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--compat-preset=weekly")
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  err = result.stderr.str()
  assert "--compat-preset=weekly: no such preset" in err
  assert "ci (" in err and "nightly (" in err and "strict-cold (" in err
