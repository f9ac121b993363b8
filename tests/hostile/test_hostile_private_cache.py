"""The private cache (``.jaxport_cache``, or the folder ``--compat-cache-dir`` names) is never
reached through a link, and its lock files are opened without following one: a link there is
refused, naming it, before anything is read or written through it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from jaxport.cli import _with_jax
from jaxport.errors import PrivatePathError, ReleaseTableError
from jaxport.multirelease import _envs
from jaxport.multirelease import _measured as multirelease_measured
from jaxport.releases import MeasuredRuns, read_measured, write_measured
from jaxport.releases._measured import MEASURED_FILE, updating

KEPT = b"outside the project, not jaxport's\n"


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
