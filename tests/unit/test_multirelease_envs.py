"""Release environments in the machine's cache: where they live, what names them, how they are
built (uv or pip), the wheel of the running jaxport, and a project's own requirements."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from jaxport.errors import JaxportError
from jaxport.multirelease import _envs, _project_env, _wheel


def test_the_cache_is_the_named_folder_else_the_users_cache(monkeypatch, tmp_path):
  monkeypatch.setenv("JAXPORT_RELEASE_ENVS", str(tmp_path / "envs"))
  assert _envs.default_root() == tmp_path / "envs"
  monkeypatch.chdir(tmp_path)
  monkeypatch.setenv("JAXPORT_RELEASE_ENVS", "relative/envs")
  assert _envs.default_root() == tmp_path / "relative" / "envs"  # not where a command runs
  monkeypatch.delenv("JAXPORT_RELEASE_ENVS")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  assert _envs.default_root() == tmp_path / "cache" / "jaxport" / "release-envs"
  assert _envs.venv_dir("0.11.2") == tmp_path / "cache" / "jaxport" / "release-envs" / "jax-0.11.2"


def test_an_environment_with_more_requirements_is_named_by_their_digest(tmp_path):
  plain = _envs.venv_dir("0.11.2", tmp_path)
  one = _envs.venv_dir("0.11.2", tmp_path, ["pytest", "/w/jaxport-0.1.0-py3-none-any.whl"])
  other = _envs.venv_dir("0.11.2", tmp_path, ["pytest", "flax==0.12.12"])
  assert plain.name == "jax-0.11.2" and one.name.startswith("jax-0.11.2-")
  assert len({plain, one, other}) == 3
  assert one == _envs.venv_dir("0.11.2", tmp_path, ["pytest", "/w/jaxport-0.1.0-py3-none-any.whl"])


def test_the_installers_commands():
  uv = _envs.Installer("uv", "/bin/uv")
  assert uv.create("/py/3.13", Path("/e")) == ["/bin/uv", "venv", "--quiet", "--no-python-downloads",
                                               "--python", "/py/3.13", "/e"]
  assert uv.install(Path("/e/bin/python"), ["jax==0.11.2"])[:3] == ["/bin/uv", "pip", "install"]
  assert uv.install(Path("/e/bin/python"), ["jax==0.11.2"])[-3:] == ["--python", "/e/bin/python",
                                                                     "jax==0.11.2"]
  pip = _envs.Installer("pip")
  assert pip.create("/py/3.13", Path("/e")) == ["/py/3.13", "-m", "venv", "/e"]
  assert pip.install(Path("/e/bin/python"), ["jax==0.11.2"]) == [
      "/e/bin/python", "-m", "pip", "install", "--quiet", "jax==0.11.2"]


def test_the_installer_is_chosen_by_the_setting(monkeypatch):
  monkeypatch.setattr(_envs, "find_uv", lambda: "/bin/uv")
  monkeypatch.delenv("JAXPORT_INSTALLER", raising=False)
  assert _envs.installer() == _envs.Installer("uv", "/bin/uv")
  monkeypatch.setenv("JAXPORT_INSTALLER", "pip")
  assert _envs.installer() == _envs.Installer("pip")
  monkeypatch.setenv("JAXPORT_INSTALLER", "conda")
  with pytest.raises(_envs.VenvError, match="JAXPORT_INSTALLER='conda' is not an installer"):
    _envs.installer()
  monkeypatch.setattr(_envs, "find_uv", lambda: None)
  monkeypatch.setenv("JAXPORT_INSTALLER", "uv")
  with pytest.raises(_envs.VenvError, match="no uv runs here: install it"):
    _envs.installer()
  monkeypatch.delenv("JAXPORT_INSTALLER")
  assert _envs.installer() == _envs.Installer("pip")
  assert issubclass(_envs.VenvError, JaxportError)


def test_an_environment_is_built_once_and_then_reused(monkeypatch, tmp_path):
  monkeypatch.setattr(_envs, "find_python", lambda version: "/py/3.13")
  monkeypatch.setattr(_envs, "installer", lambda: _envs.Installer("uv", "/bin/uv"))
  ran = []

  def run(cmd, what):
    ran.append(cmd)
    if cmd[1] == "venv":
      (Path(cmd[-1]) / "bin").mkdir(parents=True)
      (Path(cmd[-1]) / "bin" / "python").write_text("")

  monkeypatch.setattr(_envs, "_run", run)
  python = _envs.ensure_venv("0.11.2", tmp_path, ["pytest"])
  assert python == _envs.venv_python("0.11.2", tmp_path, ["pytest"])
  assert [c[:3] for c in ran] == [["/bin/uv", "venv", "--quiet"], ["/bin/uv", "pip", "install"]]
  assert ran[1][-4:] == ["jax==0.11.2", "jaxlib==0.11.2", "flatbuffers", "pytest"]
  assert _envs.is_ready("0.11.2", tmp_path, ["pytest"]) and not _envs.is_ready("0.11.2", tmp_path)
  assert _envs.ensure_venv("0.11.2", tmp_path, ["pytest"]) == python and len(ran) == 2


def test_the_wheel_of_the_running_jaxport_holds_its_code_metadata_and_a_true_record(tmp_path):
  wheel = _wheel.running_wheel(tmp_path)
  assert wheel.name.startswith("jaxport-") and wheel.name.endswith("-py3-none-any.whl")
  with zipfile.ZipFile(wheel) as zf:
    names = zf.namelist()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
    assert {"jaxport/__init__.py", "jaxport/releases/release_table.json",
            "jaxport_in_release/replayer.py", "jaxport_pytest/__init__.py",
            f"{info}/METADATA", f"{info}/WHEEL", f"{info}/entry_points.txt"} <= set(names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "jaxport_pytest" in zf.read(f"{info}/entry_points.txt").decode()
    record = zf.read(f"{info}/RECORD").decode().splitlines()
    assert len(record) == len(names)
    for line in record:
      name, digest, size = line.rsplit(",", 2)
      if name.endswith("RECORD"):
        continue
      data = zf.read(name)
      want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
      assert (digest, int(size)) == (f"sha256={want}", len(data)), name
  assert _wheel.running_wheel(tmp_path) == wheel  # the same code: the same wheel, reused


def test_the_wheel_is_named_by_its_contents(monkeypatch, tmp_path):
  first = _wheel.running_wheel(tmp_path)
  extra = tmp_path / "extra.py"
  extra.write_text("CHANGED = True\n")
  sources = _wheel._sources()
  monkeypatch.setattr(_wheel, "_sources", lambda: [*sources, ("jaxport/extra.py", extra)])
  second = _wheel.running_wheel(tmp_path)
  assert second.parent != first.parent and second.name == first.name


def test_a_projects_requirements_leave_jaxport_out(tmp_path):
  (tmp_path / "pyproject.toml").write_text(
      '[project]\nname = "p"\ndependencies = ["jax", "numpy>=1.26"]\n'
      '[project.optional-dependencies]\ntest = ["jaxport[test]>=0.1", "pytest", "Flax==0.12.12"]\n'
      'docs = ["sphinx"]\n')
  assert _project_env.project_requirements(tmp_path) == ["jax", "numpy>=1.26", "pytest",
                                                         "Flax==0.12.12"]
  assert _project_env.requirement_name("Jax_Port [x] >= 1") == "jax-port"


def test_a_project_without_a_project_table_adds_nothing(tmp_path):
  assert _project_env.project_requirements(tmp_path) == []
  (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-q"\n')
  assert _project_env.project_requirements(tmp_path) == []


@pytest.mark.parametrize("text, message", [
    ('[project\n', "pyproject.toml: cannot be read"),
    ('[project]\ndependencies = "jax"\n', "project.dependencies: expected a list of requirement"),
    ('[project]\n[project.optional-dependencies]\ntest = [3]\n',
     "project.optional-dependencies.test: expected a list"),
    ('project = "p"\n', "project: expected a table"),
    ('[project]\noptional-dependencies = ["pytest"]\n',
     "project.optional-dependencies: expected a table")])
def test_a_malformed_project_file_is_refused_naming_the_part(tmp_path, text, message):
  (tmp_path / "pyproject.toml").write_text(text)
  with pytest.raises(_envs.VenvError, match=message):
    _project_env.project_requirements(tmp_path)


def test_the_project_environment_holds_the_wheel_the_harness_and_the_project(monkeypatch, tmp_path):
  (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["jax"]\n')
  reqs = _project_env.environment_requirements(tmp_path, root=tmp_path / "envs")
  assert reqs[0].endswith("-py3-none-any.whl") and Path(reqs[0]).is_file()
  assert reqs[1:] == ["pytest", "pytest-xdist", "jax"]


def test_a_failed_install_leaves_no_half_built_environment(monkeypatch, tmp_path):
  monkeypatch.setattr(_envs, "find_python", lambda version: "/py/3.13")
  monkeypatch.setattr(_envs, "installer", lambda: _envs.Installer("uv", "/bin/uv"))

  def run(cmd, what):
    if cmd[1] == "venv":
      Path(cmd[-1]).mkdir(parents=True)
    else:
      raise _envs.VenvError(f"{what} failed: because you require jax==0.11.2 and jax<0.5")

  monkeypatch.setattr(_envs, "_run", run)
  with pytest.raises(_envs.VenvError, match="jax==0.11.2 and jax<0.5"):
    _envs.ensure_venv("0.11.2", tmp_path, ["jax<0.5"])
  assert not _envs.venv_dir("0.11.2", tmp_path, ["jax<0.5"]).exists()


def test_a_projects_new_environment_replaces_its_earlier_one_of_the_release(monkeypatch, tmp_path):
  monkeypatch.setattr(_envs, "find_python", lambda version: "/py/3.13")
  monkeypatch.setattr(_envs, "installer", lambda: _envs.Installer("uv", "/bin/uv"))

  def run(cmd, what):
    if cmd[1] == "venv":
      (Path(cmd[-1]) / "bin").mkdir(parents=True)
      (Path(cmd[-1]) / "bin" / "python").write_text("")

  monkeypatch.setattr(_envs, "_run", run)
  first = _envs.ensure_venv("0.11.2", tmp_path, ["/w/a.whl"], owner="/p")
  others = _envs.ensure_venv("0.11.2", tmp_path, ["/w/a.whl", "flax"], owner="/q")
  other_release = _envs.ensure_venv("0.12.0", tmp_path, ["/w/a.whl"], owner="/p")
  second = _envs.ensure_venv("0.11.2", tmp_path, ["/w/b.whl"], owner="/p")
  assert second.exists() and not first.exists()
  assert others.exists() and other_release.exists()  # another project's, another release's
