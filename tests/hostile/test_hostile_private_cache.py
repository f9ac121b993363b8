"""The private cache (``.jaxport_cache``, or the folder ``--compat-cache-dir`` names) is never
reached through a link, and its lock files are opened without following one: a link there is
refused, naming it, before anything is read or written through it, and the run goes on without
the cache and without measurements, its entries replayed and judged as always. A damaged
measurements file is said once, as a session warning naming it, and every entry replays
without it."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _sandbox import CHILD_TIME_LIMIT_S, ROOT
from jaxport.multirelease import _with_jax
from jaxport.errors import PrivatePathError, ReleaseTableError
from jaxport.harness._controller._settings import Options, resolve
from jaxport.multirelease import _envs
from jaxport.multirelease import _measured as multirelease_measured
from jaxport.multirelease._measured import updating, write_measured
from jaxport.releases import MeasuredRuns, read_measured
from jaxport.releases._measured import MEASURED_FILE

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _downstream_project import CASE_PRELUDE, GOLDEN_TESTS, pyproject  # noqa: E402

TODAY = "2026-12-01"
KEPT = b"outside the project, not jaxport's\n"
CASES = CASE_PRELUDE + textwrap.dedent("""
    def cases():
      return [Case("sines_f32", "mine", lambda a: jnp.sin(a) * 3, square),
              Case("cosines_f32", "mine", lambda a: jnp.cos(a) + 1, square),
              Case("squares_f32", "mine", lambda a: a @ a, square)]
    """)


def _outside(tmp_path: Path) -> Path:
  """A folder outside the project, holding one file that must stay as it is."""
  outside = tmp_path / "outside"
  outside.mkdir()
  (outside / "precious").write_bytes(KEPT)
  return outside


def _untouched(outside: Path) -> None:
  assert sorted(p.name for p in outside.iterdir()) == ["precious"]
  assert (outside / "precious").read_bytes() == KEPT


# --- lock files ---------------------------------------------------------------------------

def _measurements_lock(project: Path):
  (project / MEASURED_FILE).parent.mkdir(parents=True, exist_ok=True)
  return project / MEASURED_FILE.parent / f".{MEASURED_FILE.name}.lock", updating(project)


def _build_lock(root: Path):
  venv = root / "jax-0.4.30"
  root.mkdir(parents=True, exist_ok=True)
  return root / f".{venv.name}.lock", _envs._locked(venv)


LOCKS = {"measurements": _measurements_lock, "release-environment build": _build_lock}


@pytest.mark.parametrize("lock", LOCKS.values(), ids=LOCKS.keys())
def test_a_link_at_a_lock_file_is_refused_and_its_target_neither_truncated_nor_made(tmp_path,
                                                                                    lock):
  outside = _outside(tmp_path)
  path, holding = lock(tmp_path / "project")
  path.symlink_to(outside / "precious")
  with pytest.raises(PrivatePathError, match=f"lock file {path} is a symbolic link.*Remove it"):
    with holding:
      pass
  _untouched(outside)
  path.unlink()
  path.symlink_to(outside / "made_by_the_lock")  # a dangling link: nothing is made there
  with pytest.raises(PrivatePathError, match=f"lock file {path} is a symbolic link"):
    with lock(tmp_path / "project")[1]:
      pass
  _untouched(outside)


@pytest.mark.parametrize("lock", LOCKS.values(), ids=LOCKS.keys())
def test_a_lock_file_is_made_readable_by_its_owner_only_and_never_truncated(tmp_path, lock):
  path, holding = lock(tmp_path / "project")
  with holding:
    pass
  assert path.stat().st_mode & 0o777 == 0o600
  path.write_bytes(b"left by an older jaxport\n")
  with lock(tmp_path / "project")[1]:
    pass
  assert path.read_bytes() == b"left by an older jaxport\n"


# --- a private cache folder that is a link -----------------------------------------------

def _linked(project: Path, folder: str, outside: Path) -> Path:
  """``project/folder`` made a link to ``outside`` (its parents plain folders)."""
  link = project / folder
  link.parent.mkdir(parents=True, exist_ok=True)
  link.symlink_to(outside, target_is_directory=True)
  return link


@pytest.mark.parametrize("folder, cache_dir", [
    (".jaxport_cache", None), (".jaxport_cache/xla", None), ("build", "build/cache"),
    ("build/cache", "build/cache")],
    ids=["jaxport-cache", "its-xla-folder", "a-folder-above-the-cache-dir", "the-cache-dir"])
def test_a_run_refuses_a_private_cache_reached_through_a_link_naming_it(tmp_path, folder,
                                                                       cache_dir):
  project, outside = tmp_path / "project", _outside(tmp_path)
  if cache_dir == "build/cache" and folder == "build":
    (outside / "cache").mkdir()
  link = _linked(project, folder, outside)
  options = Options.for_run(resolve({"cache_dir": cache_dir}), golden_root=project / "golden",
                            project_root=project, invocation_dir=project)
  assert options.settings.cache_dir is None
  assert options.cache_refused is not None and f"{link} is a symbolic link" in options.cache_refused
  assert "without the compile cache and without measurements" in options.cache_refused
  uncached = Options.for_run(resolve({"no_cache": True}), golden_root=project / "golden",
                             project_root=project, invocation_dir=project)
  if cache_dir is None and folder == ".jaxport_cache":  # the measurements are kept there too
    assert uncached.cache_refused is not None


def test_a_cache_dir_outside_the_project_that_is_a_link_is_refused(tmp_path):
  project, outside = tmp_path / "project", _outside(tmp_path)
  project.mkdir()
  link = _linked(tmp_path, "elsewhere", outside)
  options = Options.for_run(resolve({"cache_dir": str(link)}), golden_root=project / "golden",
                            project_root=project, invocation_dir=project)
  assert options.settings.cache_dir is None and str(link) in options.cache_refused
  plain = Options.for_run(resolve({"cache_dir": str(tmp_path / "plain")}),
                          golden_root=project / "golden", project_root=project,
                          invocation_dir=project)
  assert plain.cache_refused is None and plain.settings.cache_dir == str(tmp_path / "plain")


@pytest.mark.parametrize("cache_dir", [None, "linked"], ids=["jaxport-cache", "cache-dir"])
def test_measurements_are_neither_read_nor_written_through_a_link(tmp_path, cache_dir, caplog):
  project, outside = tmp_path / "project", _outside(tmp_path)
  link = _linked(project, cache_dir or ".jaxport_cache", outside)
  folder = None if cache_dir is None else _with_jax.cache_dir_of(
      [f"--compat-cache-dir={cache_dir}"], project)
  for call in (lambda: read_measured(project, folder),
               lambda: write_measured(project, MeasuredRuns(), folder)):
    with pytest.raises(PrivatePathError, match=f"{link} is a symbolic link.*Remove the link"):
      call()
  with pytest.raises(PrivatePathError, match=f"{link} is a symbolic link"):
    with updating(project, folder):
      pass
  with caplog.at_level(logging.WARNING):
    kept = multirelease_measured.remember(project, project / "golden", "0.4.30",
                                          {"cpu/mine/sines_f32/2026-11-29_jax-0.10.2": (True, "")},
                                          cache_dir=folder)
  assert kept == 0
  assert f"{link} is a symbolic link" in caplog.text
  _untouched(outside)


def test_a_measurements_file_that_is_a_link_is_refused_not_read(tmp_path):
  project, outside = tmp_path / "project", _outside(tmp_path)
  (outside / MEASURED_FILE.name).write_text('{"format": 2, "entries": {}}\n')
  (project / MEASURED_FILE).parent.mkdir(parents=True)
  (project / MEASURED_FILE).symlink_to(outside / MEASURED_FILE.name)
  with pytest.raises(ReleaseTableError, match=f"{MEASURED_FILE.name}: cannot be read"):
    read_measured(project)


# --- one downstream project's runs ---------------------------------------------------------

def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
  """A pytest session of the project, in a process of its own."""
  env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "JAXPORT_"))}
  return subprocess.run(
      [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
       "-p", "no:randomly", "-rN", f"--compat-today={TODAY}", *args],
      cwd=project, env=env, capture_output=True, text=True, timeout=CHILD_TIME_LIMIT_S)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
  """A downstream project with three cases, recorded once; each test leaves it as it found it."""
  root = tmp_path_factory.mktemp("downstream")
  (root / "pyproject.toml").write_text(pyproject())
  (root / "test_golden.py").write_text(GOLDEN_TESTS)
  (root / "mycases.py").write_text(CASES)
  recorded = _pytest(root, "--compat-record")
  assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
  return root


def _text(result: subprocess.CompletedProcess) -> str:
  return result.stdout + result.stderr


def test_a_jaxport_cache_that_is_a_link_is_refused_once_and_the_entries_replay(project,
                                                                              tmp_path):
  outside = _outside(tmp_path)
  (outside / MEASURED_FILE.name).write_text("{not the project's measurements")
  kept = project / ".jaxport_cache"
  moved = tmp_path / "kept_cache"
  if kept.exists():
    shutil.move(kept, moved)
  kept.symlink_to(outside, target_is_directory=True)
  try:
    result = _pytest(project, "--compat-strict")
  finally:
    kept.unlink()
    if moved.exists():
      shutil.move(moved, kept)
  text = _text(result)
  assert "3 entries replayed of 3 present: 3 pass" in text, text[-3000:]
  assert "3 passed" in text
  # One refusal, a session warning that --compat-strict fails; nothing read or written there.
  assert text.count(f"{kept} is a symbolic link") == 1, text[-3000:]
  assert f"SESSION FAIL {kept} is a symbolic link" in text
  assert result.returncode == 1
  assert "Traceback" not in text and "executables loaded from the compile cache" not in text
  assert sorted(p.name for p in outside.iterdir()) == [MEASURED_FILE.name, "precious"]


def test_a_damaged_measurements_file_is_one_session_warning_and_every_entry_replays(project):
  measured = project / MEASURED_FILE
  measured.parent.mkdir(exist_ok=True)
  measured.write_text('{"format": 2, "entries": []}\n')
  try:
    result = _pytest(project)
  finally:
    measured.unlink()
  text = _text(result)
  assert result.returncode == 0, text[-3000:]
  assert "3 entries replayed of 3 present: 3 pass" in text and "3 passed" in text
  assert "SESSION FAIL" not in text and "Traceback" not in text, text[-3000:]
  assert "ReleaseTableError" not in text
  (warning,) = [line for line in text.splitlines() if MEASURED_FILE.name in line]
  assert warning.startswith("session warning: ")
  assert "entries: expected" in warning and "remove the file" in warning, warning
