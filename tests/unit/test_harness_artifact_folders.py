"""Failure artifacts' folders: one plain name per entry id directly under the artifacts
directory, whatever the id holds, and no link planted there is followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxport.errors import GoldenDataError
from jaxport.harness._protocol import _artifact_folder
from jaxport.harness._protocol._artifact_folder import entry_folder, folder_name

HOSTILE_IDS = ["..", "../..", "../outside", "/etc/passwd", "//abs", "a/../../b", ".", "",
               "cpu/f/c/../../../../x", "..\\..\\win", "cpu/f/.hidden/d", "a\x00b", "caf\u00e9/x",
               "a/" * 300 + "z", "~/x", "$HOME/x", "a b/c:d*e"]


def test_an_ordinary_entry_id_reads_as_its_folder_name():
  assert folder_name("cpu/lapack/eigh_f32/2026-11-30_jax-0.10.2") == (
      "cpu__lapack__eigh_f32__2026-11-30_jax-0.10.2")


@pytest.mark.parametrize("entry_id", HOSTILE_IDS)
def test_a_hostile_entry_id_becomes_one_plain_name(entry_id):
  name = folder_name(entry_id)
  assert name and name not in (".", "..") and not name.startswith(".")
  assert "/" not in name and "\\" not in name and "\x00" not in name
  assert len(name) <= _artifact_folder.MAX_NAME_CHARS + 13
  assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name), name


def test_ids_that_sanitise_alike_keep_distinct_folders():
  names = {folder_name(i) for i in ["a/b", "a__b", "a_b", "a:b", "../a/b", "a/b/"]}
  assert len(names) == 6


@pytest.mark.parametrize("entry_id", HOSTILE_IDS)
def test_the_folder_of_a_hostile_id_is_made_directly_under_the_directory(tmp_path, entry_id):
  root = tmp_path / "artifacts"
  folder = entry_folder(root, entry_id)
  assert folder.is_dir() and folder.parent == root
  assert sorted(p.name for p in tmp_path.iterdir()) == ["artifacts"]


def test_a_link_planted_as_an_entrys_folder_is_refused(tmp_path):
  root, outside = tmp_path / "artifacts", tmp_path / "outside"
  root.mkdir()
  outside.mkdir()
  entry_id = "cpu/f/c/2026-11-30_jax-0.10.2"
  os.symlink(outside, root / folder_name(entry_id))
  with pytest.raises(GoldenDataError, match="taken by a link or a file"):
    entry_folder(root, entry_id)
  assert list(outside.iterdir()) == []


def test_a_link_planted_as_an_artifact_file_is_replaced_not_followed(tmp_path):
  folder = tmp_path / "folder"
  folder.mkdir()
  victim = tmp_path / "victim.txt"
  victim.write_text("keep")
  os.symlink(victim, folder / _artifact_folder.TODAY_MODULE_FILE)
  _artifact_folder.write_file(folder, _artifact_folder.TODAY_MODULE_FILE, b"module")
  assert victim.read_text() == "keep"
  written = folder / _artifact_folder.TODAY_MODULE_FILE
  assert not written.is_symlink() and written.read_bytes() == b"module"
  assert sorted(p.name for p in folder.iterdir()) == [_artifact_folder.TODAY_MODULE_FILE]


def test_the_artifacts_directory_is_made_when_missing(tmp_path):
  folder = entry_folder(tmp_path / "a" / "b", "cpu/f/c/d")
  assert folder == Path(tmp_path / "a" / "b" / "cpu__f__c__d") and folder.is_dir()
