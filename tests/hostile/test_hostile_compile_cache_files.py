"""Files of the wrong form in the cross-run compile cache are ignored, never followed and
never fatal: a kept JSON file of nested brackets reads as nothing, a sharing-keys folder that
is a link is neither read nor written through, and a pipe or a link where jax expects a cached
executable is removed before jax looks it up, so that its module is compiled again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxport.harness._worker import _cache_files
from jaxport.harness._worker._kept_json import read_kept
from jaxport.harness._worker._sharing_index import FOLDER_NAME, SharingIndex

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX files")

REQUEST = "ab" * 32


def test_a_kept_file_of_nested_brackets_reads_as_nothing(tmp_path):
  path = tmp_path / f"{REQUEST}.json"
  path.write_text("[" * 4096)
  assert read_kept(path, 8192, "sharing key") is None
  index = SharingIndex(tmp_path.parent)
  index.folder = tmp_path
  assert index.key(REQUEST) is None


def test_a_sharing_keys_folder_that_is_a_link_is_neither_read_nor_written_through(tmp_path):
  cache, outside = tmp_path / "cache", tmp_path / "outside"
  cache.mkdir()
  outside.mkdir()
  (outside / f"{REQUEST}.json").write_text(
      '{"format": 1, "request": "%s", "key": "planted"}' % REQUEST)
  (cache / FOLDER_NAME).symlink_to(outside)
  index = SharingIndex(cache)
  assert index.preload() == 0
  assert index.key(REQUEST) is None
  other = "cd" * 32
  index.keep(other, "mine")
  assert sorted(p.name for p in outside.iterdir()) == [f"{REQUEST}.json"]


def test_cache_files_that_are_not_regular_files_are_dropped_and_links_not_followed(tmp_path):
  cache, outside = tmp_path / "cache", tmp_path / "outside"
  cache.mkdir()
  outside.mkdir()
  target = outside / "precious"
  target.write_bytes(b"not the cache's")
  os.mkfifo(cache / "fifo_key-cache")
  (cache / "linked_key-cache").symlink_to(target)
  (cache / "linked_key-atime").symlink_to(target)
  (cache / "plain_key-cache").write_bytes(b"an executable")
  (cache / "unrelated").symlink_to(target)

  dropped = _cache_files.drop_irregular(cache)
  assert sorted(dropped) == ["fifo_key-cache", "linked_key-atime", "linked_key-cache"]
  assert sorted(p.name for p in cache.iterdir()) == ["plain_key-cache", "unrelated"]
  assert target.read_bytes() == b"not the cache's"


def test_a_cache_folder_that_is_a_link_is_left_alone(tmp_path):
  real = tmp_path / "real"
  real.mkdir()
  os.mkfifo(real / "key-cache")
  (tmp_path / "cache").symlink_to(real)
  assert _cache_files.drop_irregular(tmp_path / "cache") == []
  assert Path(real / "key-cache").exists()
