"""``jaxport bisect`` and ``jaxport record/replay --with-jax`` work in any project the same way,
through ``jaxport.multirelease``: they never run a file of the project that looks like a
release tool, whatever the project is named, and what they cannot do is refused with a
message, exit 2 and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TOOLS = ("bisect_release.py", "record_with_jax.py", "replay_with_jax.py")


def _downstream_project(root: Path, name: str = "downstream", ini: str = "") -> Path:
  """A project with files named like release tools, which nothing may run."""
  root.mkdir(parents=True, exist_ok=True)
  (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n\n'
                                       '[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
                                       f'jaxport_store = "golden"\n{ini}')
  tools = root / "harness" / "tools"
  tools.mkdir(parents=True)
  for name in TOOLS:
    (tools / name).write_text("raise SystemExit('must not run')\n")
  return root


def _jaxport(project: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
  return subprocess.run(
      [sys.executable, "-c", "import sys; from jaxport.cli import main; sys.exit(main())", *argv],
      cwd=project, capture_output=True, text=True, timeout=300, env={**os.environ, **env})


def _refused(proc: subprocess.CompletedProcess, message: str) -> None:
  assert proc.returncode == 2, proc.stderr
  assert message in proc.stderr
  assert "Traceback" not in proc.stderr and "must not run" not in proc.stderr


def test_replay_with_an_older_release_builds_its_environment_in_the_machine_cache(tmp_path):
  project = _downstream_project(tmp_path / "project")
  envs = tmp_path / "envs"
  proc = _jaxport(project, "replay", "--with-jax", "0.8.3", JAXPORT_RELEASE_ENVS=str(envs),
                  JAXPORT_RELEASE_PYTHON=str(tmp_path / "no-such-python"))
  # The project's store is empty: refused before any environment is built.
  _refused(proc, "has no cpu entries; record some first")
  assert not envs.exists()


def test_a_missing_release_python_is_named(tmp_path):
  project = _downstream_project(tmp_path / "project")
  entry = project / "golden" / "cpu" / "f" / "c" / "2026-01-01_jax-0.10.2"
  entry.mkdir(parents=True)
  (entry / "manifest.json").write_text("{}")
  proc = _jaxport(project, "bisect", "cpu/f/c/2026-01-01_jax-0.10.2", "--releases", "0.8.2..0.8.3",
                  JAXPORT_RELEASE_ENVS=str(tmp_path / "envs"),
                  JAXPORT_RELEASE_PYTHON=str(tmp_path / "no-such-python"))
  _refused(proc, "JAXPORT_RELEASE_PYTHON=")
  # Bisection probes the middle of the range first: of two releases, the newer.
  assert "is not an interpreter on PATH (wanted for jax 0.8.3" in proc.stderr


def test_recording_with_a_release_jaxport_does_not_run_on_is_refused_naming_the_oldest(tmp_path):
  from jaxport._jaxcompat._version import MIN_JAX
  project = _downstream_project(tmp_path / "project")
  proc = _jaxport(project, "record", "--with-jax", "0.8.3")
  _refused(proc, f"recording runs jaxport's harness, which runs on jax {MIN_JAX} and newer")


def test_bisect_of_an_unknown_entry_names_the_store(tmp_path):
  project = _downstream_project(tmp_path / "project")
  proc = _jaxport(project, "bisect", "cpu/x/y/z", "--releases", "0.9.2..0.10.2")
  _refused(proc, "no golden entry 'cpu/x/y/z' under")
  assert str(project / "golden") in proc.stderr


def test_a_project_named_jaxport_goes_through_multirelease_too(tmp_path):
  project = _downstream_project(tmp_path / "project", name="jaxport")
  proc = _jaxport(project, "replay", "--with-jax", "0.8.3",
                  JAXPORT_RELEASE_ENVS=str(tmp_path / "envs"))
  _refused(proc, "has no cpu entries; record some first")
  proc = _jaxport(project, "record", "--with-jax", "0.8.3")
  _refused(proc, "recording runs jaxport's harness")


def test_an_effect_module_the_project_does_not_hold_is_named(tmp_path):
  project = _downstream_project(tmp_path / "project",
                                ini='jaxport_effect_modules = ["mypkg.effects"]\n')
  proc = _jaxport(project, "bisect", "cpu/f/c/2026-01-01_jax-0.10.2", "--releases", "0.8.2..0.8.3",
                  JAXPORT_RELEASE_ENVS=str(tmp_path / "envs"))
  _refused(proc, "jaxport_effect_modules: no module 'mypkg.effects' on the project's paths")
  assert not (tmp_path / "envs").exists()
