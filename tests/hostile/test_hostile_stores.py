"""Hostile golden stores: npz bombs, links out of the store, deep manifests, unwritable stores."""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

from _build import REAL_ENTRIES, copy_entry, npz_bomb, replace_files
from _sandbox import limited, needs_proc
from jaxport.golden import EntryId
from jaxport import _limits
from jaxport.cli import main
from jaxport.errors import GoldenDataError
from jaxport.golden._manifest import INPUTS_FILE, MANIFEST_FILE, ArraySpec
from jaxport.golden._npz import decode_arrays
from jaxport.golden._store import GoldenStore

GiB = 2**30


def run(capsys, *argv):
  rc = main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return rc, out, err


# --- npz members that inflate past what the manifest records --------------------------------

@pytest.fixture
def bomb_entry(tmp_path):
  """A real entry whose inputs.npz (1 MB) inflates to 1 GiB; the manifest vouches for its sha256."""
  entry = copy_entry(tmp_path / "store")
  return replace_files(entry, {INPUTS_FILE: npz_bomb(GiB)})


@needs_proc
@pytest.mark.parametrize("command", ["inspect", "audit"])
def test_an_npz_bomb_is_refused_before_inflating_under_a_memory_limit(bomb_entry, command):
  # 512 MiB more than the child holds once jaxport is imported: inflating the
  # member would need 1 GiB and end in a MemoryError.
  child = limited(f"""
      import sys
      from jaxport.cli import main
      from jaxport.cli import _inspect, _module_commands  # the commands' code (and jax)
      limit_memory(512 * 2**20)
      sys.exit(main([{command!r}, {str(bomb_entry.path)!r}, "--json"]))
      """)
  out = child.stdout + child.stderr
  assert "MemoryError" not in out and "Traceback" not in out, out
  assert "refused before decompressing" in out
  assert child.returncode == (2 if command == "inspect" else 1), out


def test_an_npz_member_that_lies_about_its_size_is_read_only_to_that_size(tmp_path):
  entry = copy_entry(tmp_path / "store")
  m = entry.manifest
  lying = npz_bomb(64 * 2**20, declared_size=128)
  with pytest.raises(GoldenDataError, match="member arr_0.npy is corrupt: Bad CRC-32"):
    decode_arrays(lying, m.arrays["inputs"], "inputs.npz")


def test_an_array_past_the_size_limit_is_refused_naming_the_limit(tmp_path):
  entry = copy_entry(tmp_path / "store")
  m = entry.manifest
  big = [ArraySpec(a.dtype, (2**40,)) for a in m.arrays["inputs"]]
  data = (entry.path / INPUTS_FILE).read_bytes()
  with pytest.raises(GoldenDataError, match="MAX_ARRAY_BYTES"):
    decode_arrays(data, big, "inputs.npz")


def test_compression_methods_other_than_deflate_are_refused(tmp_path):
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_BZIP2) as zf:
    member = io.BytesIO()
    np.lib.format.write_array(member, np.zeros((4, 4), np.float32))
    zf.writestr("arr_0.npy", member.getvalue())
  entry = copy_entry(tmp_path / "store")
  with pytest.raises(GoldenDataError, match="compression method 12 is refused"):
    decode_arrays(buf.getvalue(), entry.manifest.arrays["inputs"], "inputs.npz")


# --- links inside the store -----------------------------------------------------------------

@pytest.fixture
def linked_store(tmp_path):
  """A store whose family folder is a link to a folder outside it holding a real entry."""
  outside = tmp_path / "outside"
  entry_id = REAL_ENTRIES[0]
  platform, family, case, name = entry_id.split("/")
  copy_entry(outside, entry_id)
  root = tmp_path / "store"
  (root / platform).mkdir(parents=True)
  os.symlink(outside / platform / family, root / platform / family)
  return root, outside, entry_id


def test_entry_lookup_refuses_a_linked_family_folder(linked_store, capsys):
  root, _, entry_id = linked_store
  with pytest.raises(GoldenDataError, match="symbolic link inside the golden store"):
    GoldenStore(root).entry(EntryId.parse(entry_id))
  rc, out, err = run(capsys, "inspect", entry_id, "--root", root)
  assert rc == 2 and out == "" and "symbolic link" in err


def test_the_writer_refuses_a_linked_platform_folder_and_writes_nothing_outside(tmp_path):
  source = copy_entry(tmp_path / "real")
  outside = tmp_path / "outside"
  outside.mkdir()
  root = tmp_path / "store"
  root.mkdir()
  os.symlink(outside, root / "cpu")
  m = source.manifest
  with pytest.raises(GoldenDataError, match="symbolic link inside the golden store"):
    GoldenStore(root).write_entry(m, source.blob(), source.inputs(), source.expected_outputs(),
                                  source.module_text())
  assert list(outside.iterdir()) == []


def test_the_writer_refuses_a_linked_case_folder(tmp_path):
  source = copy_entry(tmp_path / "real")
  outside = tmp_path / "outside"
  outside.mkdir()
  root = tmp_path / "store"
  platform, family, case, _ = source.entry_id.parts
  (root / platform / family).mkdir(parents=True)
  os.symlink(outside, root / platform / family / case)
  with pytest.raises(GoldenDataError, match="symbolic link"):
    GoldenStore(root).write_entry(source.manifest, source.blob(), source.inputs(),
                                  source.expected_outputs(), source.module_text())
  assert list(outside.iterdir()) == []


# --- deep manifests, unwritable stores --------------------------------------------------------

def test_a_deep_manifest_is_one_entry_problem_and_audit_goes_on(tmp_path, capsys):
  root = tmp_path / "store"
  deep = copy_entry(root, REAL_ENTRIES[0])
  copy_entry(root, REAL_ENTRIES[1])
  (deep.path / MANIFEST_FILE).write_text("[" * 100_000 + "]" * 100_000)
  rc, out, _ = run(capsys, "audit", root, "--json", "--no-drift", "--today", "2026-12-01")
  records = {r["artifact"]: r for r in json.loads(out)["artifacts"]}
  assert rc == 1
  assert any("MAX_JSON_NESTING" in p for p in records[str(deep.entry_id)]["problems"])
  assert records[REAL_ENTRIES[1]]["ok"], records[REAL_ENTRIES[1]]


def test_writing_into_an_unwritable_store_is_a_golden_data_error(tmp_path):
  source = copy_entry(tmp_path / "real")
  blocker = tmp_path / "a_file"
  blocker.write_text("not a directory")
  with pytest.raises(GoldenDataError, match="cannot write into the golden store"):
    GoldenStore(blocker / "store").write_entry(
        source.manifest, source.blob(), source.inputs(), source.expected_outputs(),
        source.module_text())


def test_limits_are_named_with_their_values():
  assert _limits.name("MAX_ARRAY_BYTES") == f"jaxport._limits.MAX_ARRAY_BYTES = {256 * 2**20}"


def test_the_release_replayer_refuses_an_npz_bomb_before_inflating():
  # The multi-release replayer runs inside older jax venvs without jaxport and
  # reads npz files on its own.
  from jaxport_in_release import replayer as _replayer
  with pytest.raises(_replayer.EntryError, match="declares .* bytes once inflated"):
    _replayer.decode_arrays(npz_bomb(GiB), [{"dtype": "float32", "shape": [4, 4]}])
