"""Hostile output paths and output text: what the command line writes, and where.

OUT may be a FIFO, a device, a directory, a symlink, a missing or read-only
folder; ``prune --yes`` may meet a read-only store or an interrupt; a shard
count may be absurd; report strings may hold HTML and Markdown. Each is a
named outcome, never a replaced device, a leftover temporary file or a
traceback. No test opens or writes anything under /dev: FIFOs are made with
``os.mkfifo`` in ``tmp_path`` and a device is simulated through ``os.stat``.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import stat
import time
from pathlib import Path

import pytest

import _report_helpers as helpers
from _build import REAL_ENTRIES, copy_entry
from jaxport.cli import main
from jaxport.errors import ReportError
from jaxport.golden import EntryId
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller._shard import Shard, ShardError, split
from jaxport.report import RunReport, render_markdown
from jaxport.report import _files

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0
AS_ROOT = "running as root: chmod does not stop root's writes"


def run(capsys, *argv):
  rc = main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return rc, out, err


def _leftovers(folder: Path) -> list[str]:
  """Temporary files the atomic writer left in ``folder``."""
  return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and "tmp" in p.name)


@pytest.fixture
def report_file(tmp_path) -> Path:
  path = tmp_path / "run.json"
  path.write_text(json.dumps(helpers.run_report()))
  return path


@pytest.fixture
def entry_dir(tmp_path) -> Path:
  """A copy of a real golden entry: a valid ``upgrade`` input."""
  return copy_entry(tmp_path / "store").path


# --- 1. an OUT that is not a regular file is refused, never replaced ------------------------

@pytest.mark.parametrize("flag", ["--html", "--markdown"])
def test_render_refuses_a_fifo_output(capsys, tmp_path, report_file, flag):
  fifo = tmp_path / "out"
  os.mkfifo(fifo)
  rc, _, err = run(capsys, "report", "render", report_file, flag, fifo)
  assert rc == 2 and "Traceback" not in err
  assert f"{fifo}: exists and is a FIFO" in err and "Pick another output path" in err
  assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
  assert _leftovers(tmp_path) == []


def test_render_refuses_a_symlink_to_a_fifo(capsys, tmp_path, report_file):
  fifo, link = tmp_path / "fifo", tmp_path / "summary.md"
  os.mkfifo(fifo)
  link.symlink_to(fifo)
  rc, _, err = run(capsys, "report", "render", report_file, "--markdown", link)
  assert rc == 2 and "a FIFO (named pipe) (through a symlink)" in err
  assert link.is_symlink() and stat.S_ISFIFO(os.stat(link).st_mode)


def test_a_symlink_to_a_regular_file_is_replaced_not_written_through(capsys, tmp_path, report_file):
  target, link = tmp_path / "target.md", tmp_path / "summary.md"
  target.write_text("keep me")
  link.symlink_to(target)
  rc, _, err = run(capsys, "report", "render", report_file, "--markdown", link)
  assert rc == 0, err
  assert not link.is_symlink() and "jaxport compatibility" in link.read_text()
  assert target.read_text() == "keep me"


def test_a_character_device_output_is_refused(monkeypatch, tmp_path):
  out = tmp_path / "full"
  out.write_text("")
  real_stat = os.stat

  def device_stat(path, *a, **k):
    st = real_stat(path, *a, **k)
    if Path(path) == out:
      return os.stat_result((stat.S_IFCHR | 0o666,) + tuple(st)[1:])
    return st

  monkeypatch.setattr(_files.os, "stat", device_stat)
  with pytest.raises(ReportError, match="exists and is a character device"):
    _files.write_text_atomically(out, "text")
  assert out.read_text() == "" and _leftovers(tmp_path) == []


def test_upgrade_force_refuses_a_fifo_output(capsys, tmp_path, entry_dir):
  fifo = tmp_path / "out.bin"
  os.mkfifo(fifo)
  rc, _, err = run(capsys, "upgrade", entry_dir, "-o", fifo, "--force")
  assert rc == 2 and "Traceback" not in err
  assert f"{fifo}: exists and is a FIFO" in err
  assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and _leftovers(tmp_path) == []


# --- 2. directories, missing folders and read-only places: named errors, no temporary file ---

def test_upgrade_force_refuses_a_directory_output(capsys, tmp_path, entry_dir):
  out = tmp_path / "outdir"
  out.mkdir()
  rc, _, err = run(capsys, "upgrade", entry_dir, "-o", out, "--force")
  assert rc == 2 and f"{out}: exists and is a directory" in err and "Traceback" not in err
  assert out.is_dir() and _leftovers(tmp_path) == [] and _leftovers(out) == []


def test_upgrade_into_a_missing_folder_creates_it(capsys, tmp_path, entry_dir):
  out = tmp_path / "new" / "folder" / "out.bin"
  rc, _, err = run(capsys, "upgrade", entry_dir, "-o", out)
  assert rc == 0, err
  assert out.is_file() and _leftovers(out.parent) == []


def test_upgrade_into_a_folder_below_a_file_is_a_named_error(capsys, tmp_path, entry_dir):
  (tmp_path / "afile").write_text("")
  out = tmp_path / "afile" / "sub" / "out.bin"
  rc, _, err = run(capsys, "upgrade", entry_dir, "-o", out)
  assert rc == 2 and "Traceback" not in err
  assert f"{out}: cannot write (Not a directory)" in err and "is a file, not a folder" in err


@pytest.mark.parametrize("failure", [
    OSError(errno.EROFS, "Read-only file system"),
    PermissionError(errno.EACCES, "Permission denied")])
def test_upgrade_on_a_read_only_place_is_named_and_leaves_no_temporary_file(
    capsys, monkeypatch, tmp_path, entry_dir, failure):
  def refuse(src, dst):
    raise failure
  monkeypatch.setattr(_files.os, "replace", refuse)
  out = tmp_path / "out.bin"
  rc, _, err = run(capsys, "upgrade", entry_dir, "-o", out)
  assert rc == 2 and "Traceback" not in err
  assert f"{out}: cannot write ({failure.strerror})" in err
  assert ("read-only" in err) == (failure.errno == errno.EROFS)
  assert not out.exists() and _leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_no_temporary_file(monkeypatch, tmp_path):
  def interrupt(src, dst):
    raise KeyboardInterrupt
  monkeypatch.setattr(_files.os, "replace", interrupt)
  with pytest.raises(KeyboardInterrupt):
    _files.write_text_atomically(tmp_path / "out.md", "text")
  assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(ROOT_USER, reason=AS_ROOT)
def test_render_into_a_read_only_folder_is_a_named_error(capsys, tmp_path, report_file):
  folder = tmp_path / "ro"
  folder.mkdir()
  folder.chmod(0o500)
  try:
    rc, _, err = run(capsys, "report", "render", report_file, "--markdown", folder / "out.md")
  finally:
    folder.chmod(0o700)
  assert rc == 2 and "Permission denied" in err and "make" in err and "writable" in err
  assert list(folder.iterdir()) == []


# --- 3. prune --yes: a failing removal names where it stopped; an interrupt exits 130 --------

@pytest.fixture
def expired_store(tmp_path) -> tuple[Path, list[EntryId]]:
  """A store of three real entries, all expired as of 2100."""
  root = tmp_path / "store"
  for entry_id in REAL_ENTRIES:
    copy_entry(root, entry_id)
  return root, [e.entry_id for e in GoldenStore(root).entries()]


def _run_prune(capsys, root):
  return run(capsys, "prune", "--root", root, "--older-than-days", "1", "--today", "2100-01-01",
             "--yes")


def _failing_on_second(monkeypatch, error: BaseException):
  real = GoldenStore.remove_entry
  calls = []

  def remove(store, entry):
    calls.append(entry.entry_id)
    if len(calls) == 2:
      raise error
    real(store, entry)
  monkeypatch.setattr(GoldenStore, "remove_entry", remove)


def test_prune_on_a_read_only_store_names_the_entry_and_what_was_removed(
    capsys, monkeypatch, expired_store):
  root, ids = expired_store
  _failing_on_second(monkeypatch, PermissionError(errno.EACCES, "Permission denied"))
  rc, _, err = _run_prune(capsys, root)
  assert rc == 2 and "Traceback" not in err
  assert (f"{ids[1]}: cannot remove it from the golden store {root} (Permission denied); "
          f"removed before it: {ids[0]}; not attempted: 1 more entry") in err
  assert "Make the store writable" in err
  assert [e.entry_id for e in GoldenStore(root).entries()] == ids[1:]


def test_interrupted_prune_says_what_it_removed_and_exits_130(capsys, monkeypatch, expired_store):
  root, ids = expired_store
  _failing_on_second(monkeypatch, KeyboardInterrupt())
  rc, _, err = _run_prune(capsys, root)
  assert rc == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err
  assert (f"jaxport prune: interrupted; removed 1 of 3 entries ({ids[0]}); not removed: "
          f"{ids[1]}, {ids[2]}.") in err
  assert [e.entry_id for e in GoldenStore(root).entries()] == ids[1:]


@pytest.mark.skipif(ROOT_USER, reason=AS_ROOT)
def test_prune_on_a_chmod_read_only_store_is_a_named_error(capsys, expired_store):
  root, ids = expired_store
  folders = [p for p in root.rglob("*") if p.is_dir()] + [root]
  for p in folders:
    p.chmod(0o500)
  try:
    rc, _, err = _run_prune(capsys, root)
  finally:
    for p in folders:
      p.chmod(0o700)
  assert rc == 2 and f"{ids[0]}: cannot remove it" in err and "removed before it: none" in err


# --- 4. an absurd shard count is a usage error, and costs nothing per shard ----------------

def test_a_huge_shard_count_is_a_usage_error_naming_the_limit():
  with pytest.raises(ShardError, match=r"jaxport\._limits\.MAX_SHARDS = 10000"):
    Shard.parse("1/100000000")
  with pytest.raises(ShardError, match="MAX_SHARDS"):
    split([EntryId.parse("cpu/f/c/2026-01-01_jax-0.1")], 100_000_000)


def test_selecting_from_a_huge_shard_count_allocates_nothing_per_shard():
  ids = [EntryId.parse(f"cpu/fam/case{i}/2026-01-01_jax-0.1") for i in range(3)]
  start = time.monotonic()
  assert Shard(1, 10**12).select(ids) == [ids[0]]
  assert Shard(10**12, 10**12).select(ids) == []
  assert time.monotonic() - start < 1


# --- 5. report strings cannot add markup, links or images to the Markdown summary ----------

PAYLOADS = ("<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
            "![x](http://evil/x.png)")
HOSTILE = " ".join(PAYLOADS)


def _hostile_report() -> RunReport:
  message = f"[compatibility_break] jax reader: {HOSTILE}"
  entries = [
      helpers._entry("lapack_geqrf", "qr`<b>x<b>`", "0.10.2", "fail", ["lapack_sgeqrf_ffi"],
                     [message]),
      helpers._entry("lapack_potrf", "cholesky_f32", "0.10.2", "pass", ["lapack_spotrf_ffi"])]
  data = helpers.run_report(entries=entries)
  data["session_warnings"] = [HOSTILE]
  data["skips"].append({"what": HOSTILE, "why": HOSTILE})
  data["replay_hosts"] = [{"cpu_vendor": "<script>", "cpu_model": HOSTILE, "cpu_flags": [],
                           "jaxlib": "0.10.2", "xla_flags": "[a](javascript:b)"}]
  return RunReport.from_json(data)


def test_the_markdown_summary_escapes_html_links_and_images_from_the_report():
  md = render_markdown(_hostile_report())
  for raw in ("<img", "<b>", "<script>", "](javascript:", "](http://evil", "![x]"):
    assert raw not in md, raw
  # Shown as text: entities for HTML, backslashes before Markdown syntax.
  assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in md
  assert "\\[click\\]\\(javascript:alert\\(1\\)\\)" in md
  assert "\\!\\[x\\]\\(http://evil/x.png\\)" in md
  assert "&lt;script&gt;" in md  # the host description
  assert "qr\\`&lt;b&gt;x&lt;b&gt;\\`" in md  # a case id that would break out of a code span
  # The summary's own markup is kept.
  assert "<details><summary>Skip ledger" in md and "`lapack_spotrf_ffi`" in md
