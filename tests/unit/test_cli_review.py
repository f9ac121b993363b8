"""Command-line findings of the harness review: prune's store check, its help, audit of real entries."""

import json
import os
import shutil
from pathlib import Path

import jax
import pytest

from jaxport.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "compat_data"


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def _copy_entry(dest: Path, entry_id: str) -> Path:
  target = dest / entry_id
  shutil.copytree(GOLDEN / entry_id, target)
  return target


def test_prune_of_a_missing_store_is_an_error_naming_the_root_and_the_fix(tmp_path, capsys):
  missing = tmp_path / "nowhere"
  rc, out, err = run(capsys, "prune", "--older-than-days", "0", "--root", str(missing))
  assert rc == 2
  assert out == ""
  assert str(missing) in err and "--root" in err and "not a directory" in err


def test_prune_help_explains_older_than_days(capsys):
  with pytest.raises(SystemExit):
    main(["prune", "--help"])
  out = capsys.readouterr().out
  assert "--older-than-days DAYS" in out
  assert "recorded more than DAYS days" in out


def test_audit_reads_an_entry_with_a_harness_effect_when_its_case_module_is_named(
    tmp_path, capsys, monkeypatch):
  monkeypatch.syspath_prepend(str(ROOT))
  entry = _copy_entry(tmp_path, "cpu/feature_effects/ordered_effects/2026-11-29_jax-0.10.2")
  rc, out, _ = run(capsys, "audit", str(entry), "--json", "--today", "2026-11-29",
                   "--cases", "harness.cases")
  record, = json.loads(out)["artifacts"]
  assert record["problems"] == [], record["problems"]
  assert rc == 0


def test_audit_reports_drift_of_an_older_release_entry_as_a_warning(tmp_path, capsys, monkeypatch):
  monkeypatch.syspath_prepend(str(ROOT))
  # An entry of a release other than the running one (0.9.2's, or 0.8.3's under jax 0.9.2),
  # audited against a case module that lowers the case with 64-bit types, which the release
  # did not use: its shape assertions take i64 today where the entry's take i32.
  producer = "0.8.3" if jax.__version__ == "0.9.2" else "0.9.2"
  entry = _copy_entry(tmp_path, f"cpu/feature_shape_poly/release_poly_gram_f32/2026-11-29_jax-{producer}")
  (tmp_path / "x64_release_cases.py").write_text(
      "import dataclasses\nfrom harness.cases import release_cases\n\n\ndef cases():\n"
      "  return [dataclasses.replace(c, enable_x64=True) for c in release_cases.cases()]\n")
  # The case module is imported in audit's module parser child, which takes it from PYTHONPATH.
  monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
      p for p in (str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")) if p))
  rc, out, _ = run(capsys, "audit", str(entry), "--json", "--today", "2026-11-29",
                   "--cases", "x64_release_cases")
  record, = json.loads(out)["artifacts"]
  assert record["drift"]["checked"] and record["drift"]["differences"]
  assert record["problems"] == []
  assert any(f"recorded by jax {producer}" in w for w in record["warnings"])
  assert rc == 0
