"""The cross-run compile cache is on by default: a project's runs keep compiled executables in
its own private ``.jaxport_cache/xla``, a second run loads them from there (and says how
many) with the same verdicts, a module that changed is compiled again, and
``--compat-no-cache`` keeps nothing."""

import json
import stat
import textwrap
from pathlib import Path

import pytest

from _downstream_project import CASE_PRELUDE, switch, switched_on, write_project
from _report_helpers import without_cache_count

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

CASES = CASE_PRELUDE + """

def changing(a):
  return jnp.sin(a) * (3.0 if SWITCH else 2.0)


def cases():
  return [Case("changing", "mine", changing, square),
          Case("steady", "mine", lambda a: jnp.cos(a) @ a, square)]
""".replace("SWITCH", switched_on("CASE_CHANGED"))

RUN = ("-p", "no:cacheprovider", "-p", "no:randomly", "--compat-today=2026-12-01")


def _replay(pytester, report: Path, *extra: str) -> dict:
  pytester.runpytest(*RUN, f"--compat-report={report}", *extra)
  return json.loads(report.read_text())


def _kept(folder: Path) -> set[str]:
  return {p.name for p in folder.rglob("*") if p.is_file()}


def test_runs_share_a_private_compile_cache_in_the_project_and_recompile_what_changed(
    pytester, tmp_path):
  write_project(pytester, textwrap.dedent(CASES))
  assert pytester.runpytest(*RUN, "--compat-record").ret == 0
  folder = Path(pytester.path) / ".jaxport_cache" / "xla"
  for f in (folder.parent, folder):
    assert stat.S_IMODE(f.stat().st_mode) == 0o700, oct(f.stat().st_mode)
  recorded = _kept(folder)
  assert recorded, "recording kept no executable in the project's cache"

  first = _replay(pytester, tmp_path / "first.json")
  second = _replay(pytester, tmp_path / "second.json")
  assert second["summary"]["from_cache"] > 0
  assert without_cache_count(second) == without_cache_count(first)
  # Only compilation came from the cache: both readers ran, and today's export, per entry.
  assert (second["summary"]["reader_runs"], second["summary"]["exports_today"]) == (4, 2)
  assert [e["status"] for e in second["entries"]] == ["pass", "pass"]

  # The case's function changed: today's lowering is a new module, compiled and kept.
  before = _kept(folder)
  switch(pytester.path, "CASE_CHANGED")
  changed = _replay(pytester, tmp_path / "changed.json")
  assert _kept(folder) - before, "the changed module was not compiled again"
  assert {e["case_id"]: e["status"] for e in changed["entries"]}["steady"] == "pass"

  # Without the cache, nothing is loaded or kept, and the report says no count.
  switch(pytester.path, "CASE_CHANGED", on=False)
  before = _kept(folder)
  uncached = _replay(pytester, tmp_path / "uncached.json", "--compat-no-cache")
  assert "from_cache" not in uncached["summary"] and _kept(folder) == before
  assert uncached == without_cache_count(first)
  assert (uncached["summary"]["reader_runs"], uncached["summary"]["exports_today"]) == (4, 2)


def test_a_group_readable_cache_folder_is_closed_before_use(pytester, tmp_path):
  write_project(pytester, textwrap.dedent(CASES))
  folder = Path(pytester.path) / ".jaxport_cache" / "xla"
  folder.mkdir(parents=True)
  folder.chmod(0o775)
  assert pytester.runpytest(*RUN, "--compat-record").ret == 0
  assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and _kept(folder)
