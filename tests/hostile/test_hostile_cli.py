"""The command line facing hostile folders and files: no project code runs unless named, each
bad input is a clean error or a per-item verdict, and good input beside it still gets through."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import jax
import pytest

from _build import REAL_ENTRIES, copy_entry
from _sandbox import limited
from jaxport.cli import main
from jaxport.golden._store import GoldenStore

JAX_DATA = Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_data"
GOOD_DATA = JAX_DATA / "cuda_lu_pivots_to_permutation.py"


def run(capsys, *argv):
  rc = main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return rc, out, err


# --- no project code runs unless an option names it ----------------------------------------

def _planted_project(folder: Path) -> Path:
  """A folder that looks like a project using the harness: a pyproject naming its case module
  ``planted_cases``, and a jaxport-like ``harness/cases``; importing either writes a marker.
  The marker's path."""
  marker = folder / "project-code-ran"
  plant = f"open({str(marker)!r}, 'w').write('ran')\ndef cases():\n  return []\n"
  (folder / "harness" / "cases").mkdir(parents=True)
  (folder / "harness" / "__init__.py").write_text("")
  (folder / "harness" / "conftest.py").write_text("")
  (folder / "harness" / "cases" / "__init__.py").write_text(plant)
  (folder / "planted_cases.py").write_text(plant)
  (folder / "pyproject.toml").write_text(
      '[tool.pytest.ini_options]\njaxport_cases = ["planted_cases"]\njaxport_store = "golden"\n')
  return marker


@pytest.mark.parametrize("what", ["blob", "entry"])
def test_audit_and_inspect_in_a_project_folder_run_none_of_its_code(tmp_path, what):
  marker = _planted_project(tmp_path)
  entry = copy_entry(tmp_path / "bundle", REAL_ENTRIES[0])
  target = entry.path
  if what == "blob":
    target = tmp_path / "bundle" / "model.bin"
    shutil.copy(entry.path / "exported.bin", target)
  # A child process whose working directory is the planted folder, as a user
  # auditing an extracted bundle would run it.
  child = limited(f"""
      import sys
      from jaxport.cli import main
      rcs = [main(["audit", {str(target)!r}, "--json"]), main(["inspect", {str(target)!r}])]
      sys.exit(max(rcs))
      """, cwd=tmp_path)
  assert not marker.exists(), "audit or inspect imported the folder's case modules"
  assert child.returncode in (0, 1), child.stderr
  assert "no case module named" in child.stdout or what == "blob"


def test_audit_imports_a_case_module_only_when_named(tmp_path):
  marker = _planted_project(tmp_path / "checkout")
  entry = copy_entry(tmp_path / "bundle", REAL_ENTRIES[0])
  child = limited(f"""
      import sys
      from jaxport.cli import main
      sys.exit(main(["audit", {str(entry.path)!r}, "--cases", "planted_cases"]))
      """, cwd=tmp_path / "checkout")
  assert marker.exists(), child.stderr
  assert "no case 'cholesky_f32' in the case modules named with --cases" in child.stdout


# --- inspect of paths that are not there ---------------------------------------------------

def test_inspect_of_a_missing_file_says_no_such_file(capsys, tmp_path):
  for missing in ("/nonexistent", tmp_path / "gone.bin"):
    rc, out, err = run(capsys, "inspect", missing)
    assert rc == 2 and out == ""
    assert "no such file or directory" in err and "bad entry id" not in err


def test_inspect_of_a_directory_that_is_no_entry_says_so(capsys, tmp_path):
  rc, _, err = run(capsys, "inspect", tmp_path)
  assert rc == 2 and "not a golden entry" in err


# --- import-jax-testdata: each bad file reported, the good ones imported --------------------

HOSTILE_FILES = {
    "out_of_range.py": "x = dict(a=array([300], dtype=int8))\n",
    "out_of_range_scalar.py": "x = int8(300)\n",
    "ragged.py": "x = dict(a=array([[1, 2], [3]], dtype=float32))\n",
    "unhashable.py": "x = {[1, 2]: 3}\n",
    "deep_minus.py": "x = " + "-" * 100_000 + "1\n",
    "deep_minus_parsable.py": "x = " + "-" * 900 + "1\n",
    "deep_list.py": "x = " + "[" * 150 + "]" * 150 + "\n",
    "huge_date.py": "import datetime\nx = datetime.date(10**30, 1, 1)\n",
    "not_utf8.py": b"x = '\xff'\n",
}


def test_import_reports_each_bad_file_and_imports_the_good_one(tmp_path, capsys):
  src = tmp_path / "src"
  src.mkdir()
  shutil.copy(GOOD_DATA, src)
  for name, text in HOSTILE_FILES.items():
    path = src / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
  rc, out, err = run(capsys, "import-jax-testdata", src, "--out", tmp_path / "store", "--json")
  result = json.loads(out)
  assert rc == 1
  assert len(result["imported"]) == 1 and GOOD_DATA.name in result["imported"][0]
  failed = {msg.split(":")[0]: msg for msg in result["failed"]}
  assert set(failed) == set(HOSTILE_FILES), result["failed"]
  assert "MAX_LITERAL_NESTING" in failed["deep_list.py"]
  assert "MAX_LITERAL_NESTING" in failed["deep_minus_parsable.py"]
  assert "nested too deeply" in failed["deep_minus.py"]
  assert "Traceback" not in err
  assert len(GoldenStore(tmp_path / "store").entries()) == 1


def test_import_into_an_unwritable_out_fails_each_dataset_cleanly(tmp_path, capsys):
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  rc, out, err = run(capsys, "import-jax-testdata", GOOD_DATA, "--out", blocker / "store",
                     "--json")
  result = json.loads(out)
  assert rc == 1 and result["imported"] == []
  assert all("cannot write into the golden store" in m for m in result["failed"])
  assert "Traceback" not in err


# --- entries dated in the future --------------------------------------------------------------

def _future_store(tmp_path) -> tuple[Path, str]:
  root = tmp_path / "store"
  entry = copy_entry(root, REAL_ENTRIES[0])
  today = entry.manifest.record_date - datetime.timedelta(days=30)
  return root, today.isoformat()


def test_audit_reports_an_entry_dated_in_the_future(tmp_path, capsys):
  root, today = _future_store(tmp_path)
  rc, out, _ = run(capsys, "audit", root, "--no-drift", "--today", today, "--json", "--compat-strict")
  record, = json.loads(out)["artifacts"]
  assert rc == 1 and any("30 days after today" in p and "the record date is wrong" in p
                         for p in record["problems"])
  assert [f["kind"] for f in record["findings"]] == ["future_date"]
  rc, out, _ = run(capsys, "audit", root, "--no-drift", "--today", today, "--json")
  record, = json.loads(out)["artifacts"]
  assert rc == 0 and record["status"] == "warn"
  assert any("30 days after today" in w for w in record["warnings"])


def test_prune_names_future_entries_and_removes_them_when_asked(tmp_path, capsys):
  root, today = _future_store(tmp_path)
  rc, out, _ = run(capsys, "prune", "--older-than-days", "180", "--root", root, "--today", today)
  assert rc == 0 and "1 entry is dated after" in out and "--dated-in-future" in out
  assert len(GoldenStore(root).entries()) == 1
  rc, out, _ = run(capsys, "prune", "--older-than-days", "180", "--root", root, "--today", today,
                   "--dated-in-future", "--yes")
  assert rc == 0 and f"removed {REAL_ENTRIES[0]}" in out
  assert GoldenStore(root).entries() == []


@pytest.mark.parametrize("command", ["record", "replay"])
@pytest.mark.parametrize("release", ["garbage", "99.0.0", "0.4.26; rm -rf /"])
def test_with_jax_of_a_release_jaxport_cannot_install_is_a_usage_error(capsys, tmp_path,
                                                                       monkeypatch, command,
                                                                       release):
  monkeypatch.chdir(tmp_path)
  with pytest.raises(SystemExit) as exc:
    main([command, "--with-jax", release])
  assert exc.value.code == 2
  err = capsys.readouterr().err
  assert f"{release!r} is not a jax release jaxport knows how to install" in err
  assert "0.10.2" in err  # the releases it can install are named
  assert list(tmp_path.iterdir()) == []  # nothing built
