"""`jaxport report merge` on real harness reports: two disjoint runs merge into the run of both."""

import dataclasses
import json
from pathlib import Path

import pytest

from _harness_paths import HARNESS_TESTS, copy_cpu_entries  # first: puts the repository on sys.path

from jaxport.cli import main  # noqa: E402
from jaxport.cli._report import NOT_CHECKED  # noqa: E402
from jaxport.report import load_report, write_report  # noqa: E402
from _report_helpers import without_cache_count  # noqa: E402
from jaxport._jaxcompat import _envelope as jax_envelope

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

# A current-release entry, and an old release's entries: one that runs only after
# jaxport.upgrade (drift findings, upgrade rules), one a pass.
ENTRIES = ("lapack_potrf/cholesky_f64/2026-11-29_jax-0.10.2",
           "lapack_getrf/release_lu_f32/2026-11-29_jax-0.4.30",
           "lapack_getrf/release_lu_f32/2026-11-29_jax-0.9.2")
SHARDS = ("cholesky_f64", "release_lu_f32")


def _harness_report(pytester, root: Path, select: str, out: Path) -> Path:
  result = pytester.runpytest(
      str(HARNESS_TESTS), f"--compat-store={root}", "-p", "no:cacheprovider", "-p", "no:randomly",
      "-W", "ignore::DeprecationWarning", "--compat-today=2026-11-30", "-k", select,
      f"--compat-report={out}")
  assert result.ret == 0, result.stdout.str()[-3000:]
  return out


def test_merging_two_disjoint_runs_equals_the_run_of_both(pytester, tmp_path, capsys):
  root = copy_cpu_entries(ENTRIES, tmp_path / "golden")
  a = _harness_report(pytester, root, SHARDS[0], tmp_path / "a.json")
  b = _harness_report(pytester, root, SHARDS[1], tmp_path / "b.json")
  both = _harness_report(pytester, root, " or ".join(SHARDS), tmp_path / "both.json")
  # A real harness report reads and re-writes byte for byte.
  write_report(load_report(both), tmp_path / "rewritten.json")
  assert (tmp_path / "rewritten.json").read_bytes() == both.read_bytes()

  assert main(["report", "merge", str(b), str(a), "-o", str(tmp_path / "merged.json")]) == 0
  merged = load_report(tmp_path / "merged.json")
  whole = load_report(both)
  assert [(e.entry_id, e.status, e.messages) for e in merged.entries] == [
      (e.entry_id, e.status, e.messages) for e in whole.entries]
  assert dataclasses.replace(merged.summary, from_cache=None) == dataclasses.replace(
      whole.summary, from_cache=None)
  assert merged.summary.upgraded == 1 and merged.summary.replayed == 3
  # jax 0.11.1 and newer also refuse the jax 0.4.30 envelope as expired: rewritten first.
  envelope = ("envelope",) if jax_envelope.REFUSES_EXPIRED else ()
  assert [e.release.upgrade_rules for e in merged.entries if e.release.upgrade_rules] == [
      (*envelope, "getrf")]
  # Everything else too: the merged file is the report the run of both wrote, and says what a
  # merge without --project did not check.
  merged_doc = json.loads((tmp_path / "merged.json").read_text())
  assert merged_doc["session_warnings"].pop() == NOT_CHECKED
  assert without_cache_count(merged_doc) == without_cache_count(json.loads(both.read_text()))
  assert "merged 2 shard reports" in capsys.readouterr().err


def test_merge_never_overwrites_a_shard(tmp_path, capsys):
  shard = tmp_path / "a.json"
  shard.write_text("{}")
  assert main(["report", "merge", str(shard), "-o", str(shard)]) == 2
  assert "is one of the shard reports" in capsys.readouterr().err
  assert shard.read_text() == "{}"
