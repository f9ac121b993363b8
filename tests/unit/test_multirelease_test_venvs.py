"""Test venvs for older jax releases are rebuilt when jaxport's packaging changed, so a venv
built before a new package or pytest entry point existed does not run the suites without it."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.tools import _test_venvs, _venvs  # noqa: E402


@pytest.fixture
def builds(monkeypatch, tmp_path):
  """The commands a test venv build would run (none run), with a fake release venv."""
  ran: list[str] = []

  def run(cmd, what):
    ran.append(what)
    if "-m" in cmd and "venv" in cmd:
      python = Path(cmd[-1]) / "bin" / "python"
      python.parent.mkdir(parents=True)
      python.write_text("")

  monkeypatch.setattr(_venvs, "ensure_venv", lambda version, root=None: tmp_path / "release")
  monkeypatch.setattr(_venvs, "_run", run)
  monkeypatch.setattr(_venvs, "_base_python", lambda: "python3")
  monkeypatch.setattr(_test_venvs, "_site_packages", lambda python: str(tmp_path / "site"))
  (tmp_path / "site").mkdir()
  return ran


def test_a_venv_built_from_the_current_packaging_is_reused(builds, tmp_path):
  python = _test_venvs.ensure_test_venv("0.9.2", tmp_path)
  assert len(builds) == 3
  assert _test_venvs.ensure_test_venv("0.9.2", tmp_path) == python
  assert len(builds) == 3


def test_a_venv_built_from_other_packaging_is_rebuilt(builds, tmp_path):
  _test_venvs.ensure_test_venv("0.9.2", tmp_path)
  marker = _test_venvs.test_venv_dir("0.9.2", tmp_path) / _test_venvs._MARKER
  before = marker.read_text()
  assert "pyproject-sha256=" in before
  # A marker as an older build wrote it: the same requirements, no record of pyproject.toml.
  marker.write_text(before.split(" pyproject-sha256=")[0] + "\n")
  _test_venvs.ensure_test_venv("0.9.2", tmp_path)
  assert len(builds) == 6
  assert marker.read_text() == before
