"""Each release venv is built on a Python that release installs on: 3.11 up to jax 0.10.2, 3.12 or
newer from 0.11.0. Discovery runs each candidate (a pyenv shim without a version does not run), and
a missing Python is an error naming the release, the Python and how to get it, never a skip."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.multirelease import _suites as suites_with_jax  # noqa: E402
from jaxport.multirelease import _envs as _venvs  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "nightly-compat.yml"


def fake_python(path: Path, version: str | None) -> str:
  """A script that answers the version probe like Python ``version`` would; None: like a shim."""
  path.parent.mkdir(parents=True, exist_ok=True)
  if version is None:
    body = f'echo "pyenv: {path.name}: command not found" >&2\nexit 127\n'
  else:
    body = f"echo {version.replace('.', ' ')}\n"
  path.write_text("#!/bin/sh\n" + body)
  path.chmod(0o755)
  return str(path)


@pytest.fixture
def machine(monkeypatch, tmp_path):
  """A machine of fake interpreters: ``on_path`` maps names to versions, no pyenv, no override."""
  on_path: dict[str, str | None] = {}
  monkeypatch.delenv("JAXPORT_RELEASE_PYTHON", raising=False)
  monkeypatch.delenv("PYENV_ROOT", raising=False)
  monkeypatch.setenv("JAXPORT_INSTALLER", "pip")
  monkeypatch.setattr(_venvs, "running_python", lambda: ((3, 10), "/nonexistent/python3.10"))

  def which(name):
    if name in on_path:
      return fake_python(tmp_path / "bin" / name, on_path[name])
    return None

  monkeypatch.setattr(_venvs.shutil, "which", which)
  return on_path


@pytest.mark.parametrize("version, need", [
    ("0.4.26", _venvs.PYTHON_311), ("0.9.2", _venvs.PYTHON_311), ("0.10.2", _venvs.PYTHON_311),
    ("0.11.0", _venvs.PYTHON_312_PLUS), ("0.12.0", _venvs.PYTHON_312_PLUS),
    ("0.12.0.1", _venvs.PYTHON_312_PLUS)])
def test_the_python_follows_the_release(version, need):
  assert _venvs.python_need(version) is need


def test_the_needs_read_as_what_to_install():
  assert str(_venvs.PYTHON_311) == "Python 3.11"
  assert str(_venvs.PYTHON_312_PLUS) == "Python 3.12 or newer"
  assert _venvs.PYTHON_311.accepts((3, 11)) and not _venvs.PYTHON_311.accepts((3, 12))
  assert _venvs.PYTHON_312_PLUS.accepts((3, 12)) and _venvs.PYTHON_312_PLUS.accepts((3, 14))
  assert not _venvs.PYTHON_312_PLUS.accepts((3, 11))


def test_every_tested_release_has_a_python_and_a_four_part_version_parses():
  releases = suites_with_jax.supported_releases()
  assert "0.12.0.1" in releases and "0.9.2" in releases
  for v in releases:
    need = _venvs.python_need(v)
    assert need is (_venvs.PYTHON_311 if _venvs.parse_version(v) <= (0, 10, 2) else
                    _venvs.PYTHON_312_PLUS)
  assert _venvs.venv_dir("0.12.0.1", "/x").as_posix() == "/x/jax-0.12.0.1"


def test_a_shim_that_does_not_run_is_passed_over(machine):
  machine.update({"python3.13": None, "python3.12": "3.12"})
  assert _venvs.find_python("0.12.0.1").endswith("/python3.12")


def test_a_python_of_the_wrong_version_is_passed_over(machine):
  machine.update({"python3.13": "3.11", "python3.12": "3.12", "python3.11": "3.12"})
  assert _venvs.find_python("0.11.0").endswith("/python3.12")
  with pytest.raises(_venvs.VenvError, match=r"bin/python3.11 \(is Python 3.12\)"):
    _venvs.find_python("0.10.2")


def test_the_running_interpreter_comes_first_when_it_fits(machine, monkeypatch):
  machine.update({"python3.11": "3.11", "python3.13": "3.13"})
  monkeypatch.setattr(_venvs, "running_python", lambda: ((3, 12), "/base/python3.12"))
  monkeypatch.setattr(_venvs, "interpreter_version", lambda python: (3, 12))
  assert _venvs.find_python("0.12.0") == "/base/python3.12"
  assert _venvs.candidates(_venvs.PYTHON_311)[0].endswith("/python3.11")


def test_pyenv_versions_are_found_newest_first(machine, tmp_path, monkeypatch):
  root = tmp_path / "pyenv"
  for name in ("3.11.7", "3.12.1", "3.12.10", "3.13.0", "3.13t", "3.14-dev", "3.12"):
    fake_python(root / "versions" / name / "bin" / "python3", name[:4])
  (root / "versions" / "3.15.0").mkdir()  # no interpreter in it
  monkeypatch.setenv("PYENV_ROOT", str(root))
  names = [p.parent.parent.name for p in _venvs.pyenv_pythons(_venvs.PYTHON_312_PLUS)]
  assert names == ["3.13.0", "3.12.10", "3.12.1", "3.12"]
  assert [p.parent.parent.name for p in _venvs.pyenv_pythons(_venvs.PYTHON_311)] == ["3.11.7"]
  machine.update({"python3.13": None, "python3.12": None})
  assert _venvs.find_python("0.12.0.1") == str(root / "versions" / "3.13.0" / "bin" / "python3")


def test_pyenv_root_is_asked_of_pyenv(machine, tmp_path, monkeypatch):
  root = tmp_path / "elsewhere"
  pyenv = tmp_path / "bin" / "pyenv"
  pyenv.parent.mkdir(parents=True, exist_ok=True)
  pyenv.write_text(f"#!/bin/sh\n[ \"$1\" = root ] && echo {root}\n")
  pyenv.chmod(0o755)
  monkeypatch.setattr(_venvs.shutil, "which", lambda name: str(pyenv) if name == "pyenv" else None)
  monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "ignored"))
  assert _venvs.pyenv_root() == root


def test_no_python_312_names_the_release_where_it_looked_and_the_fix(machine, tmp_path, monkeypatch):
  machine.update({"python3.13": None, "python3.12": None})
  (tmp_path / "pyenv" / "versions").mkdir(parents=True)
  monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
  with pytest.raises(_venvs.VenvError) as e:
    _venvs.find_python("0.12.0.1")
  text = str(e.value)
  assert "No Python 3.12 or newer found for the venv of jax 0.12.0.1" in text
  assert "jax 0.11.0 and newer have wheels for Python 3.12 or newer only" in text
  assert f"python3.13, python3.12 on PATH and {tmp_path / 'pyenv' / 'versions'} (pyenv)" in text
  assert re.search(r"tried \S+/python3.13 \(did not run\), \S+/python3.12 \(did not run\)", text)
  assert "pyenv install 3.13" in text and "JAXPORT_RELEASE_PYTHON" in text


def test_no_python_311_names_it(machine):
  with pytest.raises(_venvs.VenvError) as e:
    _venvs.find_python("0.9.2")
  text = str(e.value)
  assert "No Python 3.11 found for the venv of jax 0.9.2" in text
  assert "python3.11 on PATH and pyenv's versions (no pyenv found)" in text
  assert "pyenv install 3.11" in text and "tried" not in text


def test_the_override_wins_and_a_missing_one_is_named(machine, monkeypatch):
  machine.update({"python3.12": "3.12", "mypython": "3.13"})
  monkeypatch.setenv("JAXPORT_RELEASE_PYTHON", "mypython")
  assert _venvs.find_python("0.12.0.1").endswith("/mypython")
  monkeypatch.setenv("JAXPORT_RELEASE_PYTHON", "nosuchpython")
  with pytest.raises(_venvs.VenvError, match=r"JAXPORT_RELEASE_PYTHON=nosuchpython is not an "
                     r"interpreter on PATH \(wanted for jax 0.12.0.1, which needs Python 3.12 or newer\)"):
    _venvs.find_python("0.12.0.1")


def test_a_missing_python_fails_before_an_incomplete_venv_is_removed(machine, tmp_path, monkeypatch):
  incomplete = _venvs.venv_dir("0.11.2", tmp_path)
  (incomplete / "bin").mkdir(parents=True)
  monkeypatch.setattr(_venvs, "_run", lambda cmd, what: pytest.fail(f"ran {what}"))
  with pytest.raises(_venvs.VenvError, match="No Python 3.12 or newer found for the venv of jax 0.11.2"):
    _venvs.ensure_venv("0.11.2", tmp_path)
  assert incomplete.is_dir()


def test_the_venv_is_built_with_the_python_found(machine, tmp_path, monkeypatch):
  machine.update({"python3.12": "3.12"})
  ran = []

  def run(cmd, what):
    ran.append(cmd)
    if cmd[1:3] == ["-m", "venv"]:
      Path(cmd[3]).mkdir()

  monkeypatch.setattr(_venvs, "_run", run)
  python = _venvs.ensure_venv("0.12.0.1", tmp_path)
  assert ran[0][0].endswith("/python3.12") and ran[0][1:] == ["-m", "venv", str(python.parent.parent)]
  assert ran[1][:4] == [str(python), "-m", "pip", "install"] and "jax==0.12.0.1" in ran[1]
  assert _venvs.is_ready("0.12.0.1", tmp_path) is False  # the fake run made no interpreter


# Real discovery on this machine: deterministic for the running interpreter, and for the other
# Python either an interpreter that really is of the needed version or the error that names it.

def test_the_running_interpreter_is_found_for_its_own_releases(monkeypatch):
  monkeypatch.delenv("JAXPORT_RELEASE_PYTHON", raising=False)
  running = sys.version_info[:2]
  version = "0.10.2" if running == (3, 11) else "0.12.0.1"
  if not _venvs.python_need(version).accepts(running):
    pytest.fail(f"jaxport's tests run on Python 3.11 or 3.12+, not {running}")
  found = _venvs.find_python(version)
  assert found == (getattr(sys, "_base_executable", None) or sys.executable)
  assert _venvs.interpreter_version(found) == running


@pytest.mark.parametrize("version", ["0.10.2", "0.12.0.1"])
def test_real_discovery_finds_a_fitting_python_or_says_which_is_missing(version, monkeypatch):
  monkeypatch.delenv("JAXPORT_RELEASE_PYTHON", raising=False)
  need = _venvs.python_need(version)
  try:
    found = _venvs.find_python(version)
  except _venvs.VenvError as e:
    assert f"No {need} found for the venv of jax {version}" in str(e)
  else:
    assert need.accepts(_venvs.interpreter_version(found))


def test_the_version_probe_runs_the_interpreter(tmp_path):
  assert _venvs.interpreter_version(sys.executable) == sys.version_info[:2]
  assert _venvs.interpreter_version(str(tmp_path / "absent")) is None
  assert _venvs.interpreter_version(fake_python(tmp_path / "shim", None)) is None
  assert _venvs.base_version(Path(sys.prefix)) in (None, "%d.%d.%d" % sys.version_info[:3])


# The CI legs and the workflow give each release its Python.

def test_each_ci_leg_pins_a_release_of_its_python():
  script = (ROOT / ".ci" / "run").read_text()
  legs = re.findall(r'^run_leg "leg (\d)" "\$(py\d+)" (\S+) (\S+)(?: (\S+))?$', script,
                    re.MULTILINE)
  assert [(n, py, venv) for n, py, venv, _, _ in legs] == [
      ("1", "py311", ".venv"), ("2", "py312", ".venv-py312")]
  # Both legs add the lint extra (zizmor); leg 2 also the models extra (the real-model
  # example's replay).
  assert [extras for *_, extras in legs] == ["lint", "models,lint"]
  pins = {}
  for _, py, _, constraints, _ in legs:
    text = (ROOT / constraints).read_text()
    jax = re.search(r"^jax==(\S+)$", text, re.MULTILINE)[1]
    assert re.search(rf"^jaxlib=={re.escape(jax)}$", text, re.MULTILINE), constraints
    pins[py] = jax
  assert _venvs.python_need(pins["py311"]) is _venvs.PYTHON_311
  assert _venvs.python_need(pins["py312"]) is _venvs.PYTHON_312_PLUS
  releases = suites_with_jax.supported_releases()
  assert pins["py312"] == releases[-1]
  assert pins["py311"] == [v for v in releases if _venvs.python_need(v) is _venvs.PYTHON_311][-1]
  assert ".venv-py312/" in (ROOT / ".gitignore").read_text().split()
  assert not (ROOT / ".ci" / "constraints.txt").exists()


def test_ci_run_parses():
  proc = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr
  assert os.access(ROOT / ".ci" / "run", os.X_OK)


def _job(name: str) -> str:
  text = WORKFLOW.read_text()
  start = text.index(f"\n  {name}:\n")
  end = re.search(r"\n  [\w-]+:\n", text[start + 1:])
  return text[start:start + 1 + end.start()] if end else text[start:]


def _includes(job: str) -> dict[str, str]:
  return dict(re.findall(r'- \{jax: "?([\w.]+)"?, python: "([\d.]+)"\}', job))


def test_the_supported_releases_job_gives_each_release_its_python():
  job = _job("supported-releases")
  listed = [v.strip().strip('"') for v in re.search(r"jax: \[([^\]]*)\]", job)[1].split(",")]
  pythons = _includes(job)
  assert list(pythons) == listed
  assert set(suites_with_jax.supported_releases()) <= set(listed)
  for release, python in pythons.items():
    assert _venvs.python_need(release).accepts(tuple(map(int, python.split(".")))), release
  assert "python-version: ${{ matrix.python }}" in job and "py${{ matrix.python }}" in job


@pytest.mark.parametrize("name", ["replay-cpu", "merge-cpu"])
def test_newest_and_nightly_jobs_run_on_python_313(name):
  job = _job(name)
  assert _includes(job) == {"pinned": "3.11", "newest": "3.13", "nightly": "3.13"}
  assert "python-version: ${{ matrix.python }}" in job
