"""Test venvs for older jax releases are rebuilt when jaxport's packaging changed, so a venv
built before a new package or pytest entry point existed does not run the suites without it;
and they are built on their release venv's Python (3.11 or 3.12+), so its wheels load."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.multirelease import _envs as _venvs  # noqa: E402
from jaxport.multirelease import _test_venvs  # noqa: E402


class Builds(list):
  """What each build step said it does; ``commands``: the venv-creating commands."""
  commands: list[list[str]]


@pytest.fixture
def builds(monkeypatch, tmp_path):
  """The commands a test venv build would run (none run), with a fake release venv."""
  ran = Builds()
  ran.commands = []

  def run(cmd, what):
    ran.append(what)
    if "-m" in cmd and "venv" in cmd:
      python = Path(cmd[-1]) / "bin" / "python"
      python.parent.mkdir(parents=True)
      python.write_text("")
      ran.commands.append(cmd)

  release = tmp_path / "release"
  (release / "bin").mkdir(parents=True)
  monkeypatch.setattr(_venvs, "ensure_venv", lambda version, root=None: release / "bin" / "python")
  monkeypatch.setattr(_venvs, "_run", run)
  monkeypatch.setattr(_venvs, "find_python", lambda version: pytest.fail("no base Python lookup"))
  monkeypatch.setattr(_test_venvs, "_site_packages", lambda python: str(tmp_path / "site"))
  (tmp_path / "site").mkdir()
  return ran


def test_a_venv_built_from_the_current_packaging_is_reused(builds, tmp_path):
  python = _test_venvs.ensure_test_venv("0.9.2", ROOT, tmp_path)
  assert len(builds) == 3
  assert _test_venvs.ensure_test_venv("0.9.2", ROOT, tmp_path) == python
  assert len(builds) == 3


def test_a_venv_built_from_other_packaging_is_rebuilt(builds, tmp_path):
  _test_venvs.ensure_test_venv("0.9.2", ROOT, tmp_path)
  marker = _test_venvs.test_venv_dir("0.9.2", ROOT, tmp_path) / _test_venvs._MARKER
  before = marker.read_text()
  assert "pyproject-sha256=" in before
  # A marker as an older build wrote it: the same requirements, no record of pyproject.toml.
  marker.write_text(before.split(" pyproject-sha256=")[0] + "\n")
  _test_venvs.ensure_test_venv("0.9.2", ROOT, tmp_path)
  assert len(builds) == 6
  assert marker.read_text() == before


def test_the_test_venv_is_made_by_the_release_venvs_python(builds, tmp_path):
  _test_venvs.ensure_test_venv("0.12.0.1", ROOT, tmp_path)
  (cmd,) = builds.commands
  assert cmd[:3] == [str(tmp_path / "release" / "bin" / "python"), "-m", "venv"]
  assert cmd[3] == str(_test_venvs.test_venv_dir("0.12.0.1", ROOT, tmp_path))


def test_a_venv_on_another_base_python_than_its_release_venv_is_rebuilt(builds, tmp_path):
  (tmp_path / "release" / "pyvenv.cfg").write_text("home = /x\nversion = 3.12.1\n")
  _test_venvs.ensure_test_venv("0.12.0", ROOT, tmp_path)
  test_dir = _test_venvs.test_venv_dir("0.12.0", ROOT, tmp_path)
  (test_dir / "pyvenv.cfg").write_text("home = /x\nversion = 3.12.1\n")
  _test_venvs.ensure_test_venv("0.12.0", ROOT, tmp_path)
  assert len(builds) == 3
  # The release venv was rebuilt on Python 3.13: the test venv's 3.12 cannot load its wheels.
  (tmp_path / "release" / "pyvenv.cfg").write_text("home = /y\nversion = 3.13.0\n")
  _test_venvs.ensure_test_venv("0.12.0", ROOT, tmp_path)
  assert len(builds) == 6
