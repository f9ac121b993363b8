"""The harness's vocabulary is defined once (``jaxport._vocabulary``) and imported everywhere
else: platforms, the any-platform key, the expiry window, the worker timeout, record actions,
target and expectation verdicts."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _parsed_sources import parsed, walked

from jaxport import _vocabulary as vocab
from jaxport.cli._arguments import build_parser
from jaxport.releases import BACKWARD_WINDOW_DAYS

REPO = Path(__file__).resolve().parents[2]
TREES = ("jaxport", "jaxport_pytest", "harness")
VOCABULARY = Path("jaxport") / "_vocabulary.py"


@functools.cache
def _modules() -> tuple[tuple[Path, ast.Module], ...]:
  """Every module of the trees, parsed once for all the tests here."""
  return tuple((path.relative_to(REPO), parsed(path.read_text(encoding="utf-8")))
               for tree in TREES for path in sorted((REPO / tree).rglob("*.py")))


def _literal(node: ast.AST):
  try:
    return ast.literal_eval(node)
  except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
    return None


def test_importing_the_pytest_entry_point_and_the_vocabulary_loads_no_jax():
  script = textwrap.dedent("""
      import json, sys
      import jaxport_pytest, jaxport._vocabulary
      print(json.dumps(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax."))))
  """)
  proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        cwd=REPO, timeout=120)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def _imported(path: str) -> set[str]:
  """The modules ``path`` imports, by their full names."""
  tree = parsed((REPO / path).read_text(encoding="utf-8"))
  imported = {alias.name for n in walked(tree) if isinstance(n, ast.Import)
              for alias in n.names}
  return imported | {n.module for n in walked(tree) if isinstance(n, ast.ImportFrom) and n.module}


def _standard(names: set[str]) -> bool:
  return {n.split(".")[0] for n in names} <= set(sys.stdlib_module_names) | {"__future__"}


def test_the_vocabulary_is_a_leaf_that_imports_only_the_standard_library():
  # ... and the platform table, a leaf of the standard library itself.
  imported = _imported(VOCABULARY)
  assert _standard(imported - {"jaxport._platforms"}), imported
  assert _standard(_imported("jaxport/_platforms.py"))


PLATFORM_TABLE = Path("jaxport") / "_platforms.py"


def test_the_platforms_are_written_once_in_the_platform_table():
  # No module writes the platforms' tuple out; the table's rows name them, and PLATFORMS is
  # assigned there alone (the vocabulary re-exports it).
  where = [f"{path}:{n.lineno}" for path, tree in _modules() for n in walked(tree)
           if isinstance(n, ast.Tuple) and _literal(n) == vocab.PLATFORMS]
  assert where == [], where
  assigned = [str(path) for path, tree in _modules() for n in walked(tree)
              if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name) and t.id in ("PLATFORMS", "_PLATFORMS")]
  assert assigned == [str(PLATFORM_TABLE)], assigned


# Each constant, and the names its other definitions went by.
@pytest.mark.parametrize("name, old_names", [
    ("ANY_PLATFORM", ()), ("EXPIRY_WINDOW_DAYS", ("DEFAULT_WINDOW_DAYS",)),
    ("WORKER_TIMEOUT_S", ("DEFAULT_WORKER_TIMEOUT_S",)), ("MAX_WORKER_TIMEOUT_S", ())])
def test_each_constant_is_assigned_only_in_the_vocabulary(name, old_names):
  names = {name, f"_{name}", *old_names}
  assigned = []
  for path, tree in _modules():
    for n in walked(tree):
      targets = (n.targets if isinstance(n, ast.Assign) else
                 [n.target] if isinstance(n, ast.AnnAssign) and n.value is not None else [])
      assigned += [str(path) for t in targets if isinstance(t, ast.Name) and t.id in names]
  assert assigned == [str(VOCABULARY)], assigned


def test_the_any_platform_key_is_spelt_only_in_the_vocabulary():
  spelt = [f"{path}:{n.lineno}" for path, tree in _modules() for n in walked(tree)
           if isinstance(n, ast.Constant) and n.value == vocab.ANY_PLATFORM]
  assert spelt == [f"{VOCABULARY}:{_line_of('ANY_PLATFORM')}"], spelt


@pytest.mark.parametrize("name, count", [("Finding", 1), ("Verdict", 1)])
def test_one_finding_class_and_one_verdict_class(name, count):
  found = [str(path) for path, tree in _modules() for n in walked(tree)
           if isinstance(n, ast.ClassDef) and n.name == name]
  assert len(found) == count, found


def _line_of(name: str) -> int:
  tree = parsed((REPO / VOCABULARY).read_text(encoding="utf-8"))
  return next(n.lineno for n in tree.body if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))


def test_the_expiry_window_is_jaxports_own_not_jaxs_policy_window():
  assert vocab.EXPIRY_WINDOW_DAYS == 180 and BACKWARD_WINDOW_DAYS == 183
  audit = build_parser().parse_args(["audit"])
  assert audit.window_days == vocab.EXPIRY_WINDOW_DAYS


def test_record_actions_keep_the_report_strings():
  assert [str(a) for a in vocab.RecordAction] == ["written", "unchanged", "conflict", "error"]
  assert json.dumps({"action": vocab.RecordAction.CONFLICT}) == '{"action": "conflict"}'


def test_target_verdicts_keep_the_report_strings():
  assert {str(v) for v in vocab.TargetVerdict} == {"stable", "not_stable",
                                                   "allowed_by_disabled_checks"}


def test_only_the_verdicts_that_let_a_run_pass_are_ok():
  ok = {str(v) for v in vocab.ExpectationVerdict if v.ok}
  assert ok == {"pass", "upgraded", "expected_failure", "outside_forward_window"}
  assert {str(v) for v in vocab.ExpectationVerdict} - ok == {
      "unexpected_failure", "wrong_failure", "unexpected_pass", "policy_violation"}


def test_the_report_and_the_harness_use_the_vocabularys_classes():
  from jaxport import report
  from jaxport.harness._judge import _findings
  from jaxport.report import _entries
  assert report.FindingKind is vocab.FindingKind and report.Status is vocab.Status
  assert _findings.Finding is _entries.Finding is vocab.Finding
