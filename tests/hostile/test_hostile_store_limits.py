"""Hostile golden stores, continued: files refused by their size before they are read, npy
headers checked before any memory is set aside, dtype names that are not arrays', folders out
of place that cost one problem each (not the whole store), and interrupted writes that leave
nothing behind."""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
import shutil
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import pytest

from _build import REAL_ENTRIES, _npy_header, copy_entry, replace_files
from _sandbox import ROOT, limited, needs_proc
from jaxport.golden import EntryId
from jaxport.cli import main
from jaxport.errors import GoldenDataError
from jaxport.golden import _entry, _npz, _store
from jaxport.golden._manifest import BLOB_FILE, INPUTS_FILE, MANIFEST_FILE, ArraySpec
from jaxport.golden._npz import decode_arrays
from jaxport.golden._store import GoldenStore
from jaxport.harness._controller import _plugin
from jaxport.harness._controller._session import HarnessSession
from jaxport.harness._controller._settings import Options, Settings
from jaxport.report import FindingKind

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _harness_paths import repo_project  # noqa: E402

GB = 10**9
RLO = "\u202e"


def run(capsys, *argv):
  rc = main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return rc, out, err


def _sparse(path: Path, size: int) -> None:
  """Makes ``path`` a sparse file of ``size`` bytes (no disk blocks, no memory)."""
  with open(path, "r+b" if path.exists() else "wb") as f:
    f.truncate(size)


# --- 1. files refused by their size before they are read --------------------------------------

@needs_proc
@pytest.mark.parametrize("name,size,limit", [
    (MANIFEST_FILE, 1 * GB, "MAX_JSON_BYTES"),
    (MANIFEST_FILE, 6 * GB, "MAX_JSON_BYTES"),
    (BLOB_FILE, 6 * GB, "MAX_BLOB_BYTES"),
])
def test_a_huge_sparse_file_is_refused_by_its_size_under_a_memory_limit(tmp_path, name, size,
                                                                         limit):
  entry = copy_entry(tmp_path / "store")
  _sparse(entry.path / name, size)
  # 256 MiB more than the child holds once jaxport is imported: reading the file whole would
  # end in a MemoryError.
  child = limited(f"""
      from jaxport.errors import GoldenDataError
      from jaxport.golden import EntryId
      from jaxport.golden._store import GoldenStore
      limit_memory(256 * 2**20)
      entry = GoldenStore({str(tmp_path / "store")!r}).entry(EntryId.parse({str(entry.entry_id)!r}))
      try:
        entry.blob()
      except GoldenDataError as e:
        print("refused:", e)
      """)
  out = child.stdout + child.stderr
  assert "MemoryError" not in out and "Traceback" not in out, out
  assert f"{name}: {size} bytes, more than the limit jaxport._limits.{limit}" in out, out
  assert "refused before reading it" in out


@needs_proc
def test_audit_refuses_a_huge_sparse_bare_blob_by_its_size(tmp_path):
  blob = tmp_path / "huge.bin"
  _sparse(blob, 6 * GB)
  child = limited(f"""
      import sys
      from jaxport.cli import main
      from jaxport.cli import _module_commands  # audit's code (and jax): loaded before it reads
      limit_memory(256 * 2**20)
      sys.exit(main(["audit", {str(blob)!r}, "--json", "--no-drift"]))
      """)
  out = child.stdout + child.stderr
  assert "MemoryError" not in out and "Traceback" not in out, out
  assert child.returncode == 1, out
  assert "MAX_BLOB_BYTES" in json.loads(child.stdout)["artifacts"][0]["problems"][0]


def test_a_file_is_read_no_further_than_its_limit(tmp_path):
  path = tmp_path / "f"
  path.write_bytes(b"x" * 100)
  assert _entry.read_bounded(path, "f", "MAX_JSON_BYTES", most=100) == b"x" * 100
  with pytest.raises(GoldenDataError, match=r"f: 100 bytes, more than the limit 99 \(derived "
                     r"from jaxport._limits.MAX_JSON_BYTES = \d+\); refused before reading it"):
    _entry.read_bounded(path, "f", "MAX_JSON_BYTES", most=99)


# --- 2. npy headers checked before any memory is set aside -----------------------------------

def _header_only_npz(dtype: str, shape: tuple[int, ...]) -> bytes:
  """An npz (some 300 bytes) whose one member is a ``.npy`` header declaring ``shape`` and no
  data at all."""
  buf = io.BytesIO()
  with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
    zf.writestr("arr_0.npy", _npy_header(dtype, shape))
  return buf.getvalue()


@needs_proc
def test_an_npy_header_declaring_a_huge_shape_is_refused_before_allocating(tmp_path):
  entry = copy_entry(tmp_path / "store")
  spec = entry.manifest.arrays["inputs"][0]
  data = _header_only_npz(spec.dtype, (10**10,))
  assert len(data) < 400
  # The header alone would make numpy set aside 37 GiB (as 10**10 float32) before reading.
  child = limited(f"""
      from jaxport.errors import GoldenDataError
      from jaxport.golden._manifest import ArraySpec
      from jaxport.golden._npz import decode_arrays
      limit_memory(256 * 2**20)
      try:
        decode_arrays({data!r}, [ArraySpec({spec.dtype!r}, {tuple(spec.shape)!r})], "inputs.npz")
      except GoldenDataError as e:
        print("refused:", e)
      """)
  out = child.stdout + child.stderr
  assert "MemoryError" not in out and "Traceback" not in out, out
  assert "refused before reading its data" in out, out
  assert "(10000000000,)" in out


def test_an_npy_header_matching_the_manifest_but_without_data_is_corrupt(tmp_path):
  data = _header_only_npz("float32", (4, 4))
  with pytest.raises(GoldenDataError, match=r"member arr_0.npy is corrupt: .*64 bytes.*0 bytes"):
    decode_arrays(data, [ArraySpec("float32", (4, 4))], "inputs.npz")


def test_an_npy_header_past_the_array_limit_is_refused_naming_the_limit():
  data = _header_only_npz("float32", (10**10,))
  with pytest.raises(GoldenDataError, match="MAX_ARRAY_BYTES"):
    decode_arrays(data, [ArraySpec("float32", (10**10,))], "inputs.npz")


# --- 3. dtype names that are not those of numeric arrays -------------------------------------

@pytest.mark.parametrize("name", ["finfo", "iinfo", "real", "object", "O", "str", "void",
                                  "datetime64", "f4", "<f4", "float32 "])
def test_a_dtype_name_that_is_no_numeric_array_type_is_refused_naming_the_field(tmp_path, name):
  entry = copy_entry(tmp_path / "store")
  m = entry.manifest
  specs = list(m.arrays["inputs"])
  specs[0] = ArraySpec(name, specs[0].shape)
  replace_files(entry, {}, arrays={**m.arrays, "inputs": tuple(specs)})
  with pytest.raises(GoldenDataError,
                     match=r"manifest.json: arrays\.inputs\[0\]\.dtype: unknown dtype name"):
    entry.manifest
  with pytest.raises(GoldenDataError, match=r"arrays\.inputs\[0\]\.dtype"):
    entry.verify()


@pytest.mark.parametrize("name", ["bool", "int8", "uint32", "float16", "float64", "complex128",
                                  "bfloat16", "float8_e4m3fn", "int4"])
def test_the_dtype_names_jaxport_stores_are_accepted(name):
  assert _npz.dtype_from_name(name, "here").name == name


# --- 4. a folder out of place is one problem, not the whole store ----------------------------

BAD_NAMES = ["not-an-entry", f"2026-11-29_jax-0.10.2{RLO}"]


@pytest.fixture
def store_with_a_bad_folder(tmp_path, request):
  root = tmp_path / "store"
  good = [copy_entry(root, e) for e in REAL_ENTRIES[:2]]
  bad = good[0].path.parent / request.param
  bad.mkdir()
  (bad / "stray.txt").write_text("not an entry")
  return root, good, bad


@pytest.mark.parametrize("store_with_a_bad_folder", BAD_NAMES, indirect=True,
                         ids=["not-an-entry", "RLO"])
def test_audit_reports_a_bad_folder_and_audits_the_other_entries(store_with_a_bad_folder, capsys):
  root, good, bad = store_with_a_bad_folder
  rc, out, _ = run(capsys, "audit", root, "--json", "--no-drift", "--today", "2026-12-01")
  assert rc == 1
  records = json.loads(out)["artifacts"]
  by_path = {r["path"]: r for r in records}
  assert {str(e.entry_id) for e in good} <= {r["artifact"] for r in records}
  assert all(r["ok"] for r in records if r["path"] != str(bad)), records
  problem = by_path[str(bad)]
  assert not problem["ok"]
  assert "not a safe name" in problem["problems"][0] or "is not '<YYYY" in problem["problems"][0]
  rc, text, _ = run(capsys, "audit", root, "--no-drift", "--today", "2026-12-01")
  assert rc == 1 and RLO not in text
  assert "3 artifact(s) audited, 1 with problems." in text


@pytest.mark.parametrize("store_with_a_bad_folder", BAD_NAMES, indirect=True,
                         ids=["not-an-entry", "RLO"])
def test_the_listing_skips_a_bad_folder_and_names_it(store_with_a_bad_folder):
  root, good, bad = store_with_a_bad_folder
  entries, problems = GoldenStore(root).listing()
  assert [e.entry_id for e in entries] == sorted(e.entry_id for e in good)
  assert [p.path for p in problems] == [bad]
  assert RLO not in problems[0].message
  with pytest.raises(GoldenDataError):
    GoldenStore(root).entries()  # prune and the writers still refuse such a store


def _options(root: Path, **changes) -> Options:
  """The options of a session on ``root``; ``changes`` are settings."""
  settings = Settings(**{"platform": "cpu", "record": False, "window_days": 180,
                         "worker_timeout_s": 60.0,
                         "today": datetime.date.today(), **changes})
  return Options.for_run(settings, golden_root=root, partial=True)


@pytest.mark.parametrize("store_with_a_bad_folder", BAD_NAMES[1:], indirect=True, ids=["RLO"])
def test_the_harness_fails_on_a_bad_folder_and_replays_the_other_entries(
    store_with_a_bad_folder):
  root, good, bad = store_with_a_bad_folder
  session = HarnessSession(_options(root), repo_project(root))
  try:
    assert session.entry_ids() == sorted(e.entry_id for e in good)
    outcome = session.replay(good[0].entry_id)
    assert FindingKind.GOLDEN_DATA_ERROR not in outcome.kinds, outcome
    failures = list(session.build_report().session_failures)
  finally:
    session.close()
  assert any(ascii(str(bad)) in f and "not an entry" in f for f in failures), failures


# --- 5. interrupted writes leave nothing behind -----------------------------------------------

def _tmp_dirs(path: Path) -> list[str]:
  return sorted(n for n in os.listdir(path) if n.startswith(".tmp-")) if path.is_dir() else []


def test_a_write_interrupted_mid_way_removes_its_temporary_folder(tmp_path, monkeypatch):
  source = copy_entry(tmp_path / "real")
  store = GoldenStore(tmp_path / "store")
  calls = []

  def interrupted(path, data):
    calls.append(path)
    if len(calls) == 2:
      raise KeyboardInterrupt
    real_write(path, data)

  real_write = _store._write_file
  monkeypatch.setattr(_store, "_write_file", interrupted)
  with pytest.raises(KeyboardInterrupt):
    store.write_entry(source.manifest, source.blob(), source.inputs(), source.expected_outputs(),
                      source.module_text())
  case_dir = store.root / source.entry_id.case_key
  assert len(calls) == 2 and _tmp_dirs(case_dir) == []
  assert store.entries() == []


def test_a_later_write_removes_stale_temporary_folders_and_keeps_young_ones(tmp_path):
  source = copy_entry(tmp_path / "real")
  store = GoldenStore(tmp_path / "store")
  case_dir = store.root / source.entry_id.case_key
  stale, young = case_dir / ".tmp-2026-01-01_jax-0.10.2-killed", case_dir / ".tmp-prune-busy"
  for d in (stale, young):
    d.mkdir(parents=True)
    (d / MANIFEST_FILE).write_text("{}")
  hour_ago = time.time() - 3600
  os.utime(stale, (hour_ago, hour_ago))
  assert store.entries() == []  # listing ignores them
  store.write_entry(source.manifest, source.blob(), source.inputs(), source.expected_outputs(),
                    source.module_text())
  assert _tmp_dirs(case_dir) == [young.name]
  assert [e.entry_id for e in store.entries()] == [source.entry_id]


def test_the_staging_folder_is_removed_when_writing_the_recordings_is_interrupted(tmp_path):
  root = tmp_path / "store"
  session = HarnessSession(_options(root, record=True), repo_project(root))
  staging = session.recorder._staging_root()
  entry_id = REAL_ENTRIES[0]
  copy_entry(staging, entry_id)
  session.recorder._write_queue.append(EntryId.parse(entry_id))

  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt

  session.store.adopt = interrupted
  config = types.SimpleNamespace(stash={_plugin.session_key: session})
  try:
    with pytest.raises(KeyboardInterrupt):
      _plugin.pytest_sessionfinish(types.SimpleNamespace(config=config, exitstatus=0), 0)
    assert not staging.exists()
  finally:
    session.close()
    shutil.rmtree(staging, ignore_errors=True)


_UNCLOSED_RECORDER = """
import sys
from jaxport.harness._controller._recorder import Recorder
recorder = Recorder(None, None, None, None, [])
print(recorder._staging_root(), flush=True)
if sys.argv[1] == "dropped":
  del recorder
  import gc; gc.collect()
  print("dropped", flush=True)
  input()  # the process lives on: the folder went with the recorder
"""


@pytest.mark.parametrize("how", ["exit", "dropped"])
def test_a_staging_folder_never_closed_does_not_outlive_its_recorder(tmp_path, how):
  env = {**os.environ, "TMPDIR": str(tmp_path)}
  proc = subprocess.Popen([sys.executable, "-c", _UNCLOSED_RECORDER, how], env=env,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  try:
    staging = Path(proc.stdout.readline().strip())
    assert staging.parent == tmp_path and staging.name.startswith("jaxport-harness-staging-")
    if how == "dropped":
      assert proc.stdout.readline().strip() == "dropped"
      assert not staging.exists()
    proc.communicate("\n", timeout=60)
  finally:
    proc.kill()
  assert proc.returncode == 0
  assert not list(tmp_path.glob("jaxport-harness-staging-*"))


# --- 6. a writer killed at any moment leaves only whole entries ---------------------------------

_KILLED_WRITER = """
import dataclasses, sys
from pathlib import Path
from jaxport.golden import EntryId
from jaxport.golden._store import GoldenStore
source = GoldenStore(Path(sys.argv[1])).entry(EntryId.parse(sys.argv[3]))
store = GoldenStore(Path(sys.argv[2]))
blob, ins, outs, text = source.blob(), source.inputs(), source.expected_outputs(), source.module_text()
for i in range(100_000):
  store.write_entry(dataclasses.replace(source.manifest, case_id=f"killed_{i}"), blob, ins, outs, text)
  print(i, flush=True)
"""


@pytest.mark.parametrize("after", [1, 7, 23])
def test_a_writer_killed_with_sigkill_leaves_only_whole_entries(tmp_path, after):
  import signal
  import subprocess
  source = copy_entry(tmp_path / "real")
  root = tmp_path / "store"
  proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "real"), str(root),
                           str(source.entry_id)], stdout=subprocess.PIPE, text=True)
  try:
    for _ in range(after):
      assert proc.stdout.readline(), "the writer stopped before it was killed"
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
  entries, problems = GoldenStore(root).listing()
  assert problems == [] and len(entries) >= after
  for entry in entries:  # each whole: every file there with the digest its manifest records
    assert entry.blob() == source.blob() and entry.module_text() == source.module_text()
    entry.inputs(), entry.expected_outputs()
