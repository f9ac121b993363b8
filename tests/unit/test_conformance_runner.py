"""The conformance runner's pieces: rebinding stand-ins, call counters, the verdict and the table.

The JAX suites themselves are not run here (they take an hour); one child pytest
session runs a three-test stand-in suite in each mode to show the rebinding and
counting end to end.
"""

import json
import shutil
import sys
import textwrap
from pathlib import Path

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.export import shape_poly as jax_shape_poly

import jaxport

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from tools.conformance import _report, _shims, run_jax_suites  # noqa: E402
from tools.conformance._report import CaseResult, Deviation, Outcome, ProblemKind, SuiteRun  # noqa: E402

P, F, S = Outcome.PASSED, Outcome.FAILED, Outcome.SKIPPED


def _run(mode, results, counts=None, suite="export_test"):
  return SuiteRun(suite, mode, {f"{suite}.py::{k}": CaseResult(*v) if isinstance(v, tuple)
                                else CaseResult(v) for k, v in results.items()},
                  counts if counts is not None else ({"call": 3} if mode == "jaxport" else {}), 0)


ROW = Deviation("export_test", "T::test_scope*", "rebinding", "jax's private algebra", r"_DimExpr")


def test_a_jaxport_failure_outside_the_table_fails_the_verdict():
  runs = [_run("jax", {"T::test_a": P}), _run("jaxport", {"T::test_a": (F, "ValueError: boom")})]
  v = _report.judge(runs, [ROW])
  assert not v.ok
  (p,) = v.problems
  assert (p.kind, p.test, p.detail) == (ProblemKind.UNLISTED_FAILURE, "T::test_a", "ValueError: boom")


def test_a_failure_jax_itself_has_with_the_same_message_is_no_deviation():
  # A suite from a newer source than the installed jax: both modes fail it alike.
  runs = [_run("jax", {"T::test_a": (F, "AssertionError: link"), "T::test_b": (F, "Error: x")}),
          _run("jaxport", {"T::test_a": (F, "AssertionError: link"),
                           "T::test_b": (F, "Error: y")})]
  v = _report.judge(runs, [ROW])
  assert v.failing_under_jax == (("export_test", "T::test_a", "AssertionError: link"),)
  (p,) = v.problems
  assert (p.kind, p.test) == (ProblemKind.UNLISTED_FAILURE, "T::test_b")


def test_a_listed_failure_passes_only_with_the_tables_message():
  runs = [_run("jax", {"T::test_scope_1": P}),
          _run("jaxport", {"T::test_scope_1": (F, "TypeError: not a _DimExpr")})]
  v = _report.judge(runs, [ROW])
  assert v.ok and [(s, t) for s, t, _ in v.listed] == [("export_test", "T::test_scope_1")]
  runs[1] = _run("jaxport", {"T::test_scope_1": (F, "KeyError: other")})
  v = _report.judge(runs, [ROW])
  (p,) = v.problems
  assert p.kind is ProblemKind.WRONG_MESSAGE
  assert v.differing == (("export_test", "T::test_scope_1", P, F),)


def test_a_suite_that_never_called_jaxport_fails_the_verdict():
  runs = [_run("jax", {"T::test_a": P}), _run("jaxport", {"T::test_a": P}, counts={"call": 0})]
  (p,) = _report.judge(runs, []).problems
  assert p.kind is ProblemKind.JAXPORT_NOT_CALLED


def test_a_test_skipped_only_under_jaxport_fails_the_verdict():
  runs = [_run("jax", {"T::test_a": P, "T::test_b": S}),
          _run("jaxport", {"T::test_a": (S, "no"), "T::test_b": S})]
  (p,) = _report.judge(runs, []).problems
  assert (p.kind, p.test) == (ProblemKind.SKIPPED_ONLY_IN_JAXPORT, "T::test_a")


def test_a_run_without_results_fails_and_a_row_matching_only_passes_is_stale():
  runs = [_run("jax", {"T::test_scope_1": P}), _run("jaxport", {"T::test_scope_1": P}),
          SuiteRun("shape_poly_test", "jaxport", {}, {}, 3, error="no results file")]
  v = _report.judge(runs, [ROW])
  assert [p.kind for p in v.problems] == [ProblemKind.NO_RESULTS]
  assert v.stale == (ROW,)


def test_the_table_counts_outcomes_per_suite_and_mode_with_jaxports_calls():
  runs = [_run("jax", {"T::a": P, "T::b": P, "T::c": S}),
          _run("jaxport", {"T::a": P, "T::b": (F, "x"), "T::c": S},
               counts={"export": 4, "call": 2, "deserialize": 1})]
  row = _report.table(runs).splitlines()[2]
  assert row == "| export_test | 2 | 0 | 1 | 1 | 1 | 1 | 4/2/1 |"


def test_outcomes_merge_over_phases_with_failures_winning():
  assert _report.outcome_of("setup", "passed") is None
  assert _report.outcome_of("setup", "skipped") is S
  assert _report.outcome_of("teardown", "failed") is F
  failed = CaseResult(F, "E")
  assert _report.merge(failed, CaseResult(P)) is failed
  assert _report.first_line("a\nE   ValueError: x\nE   more") == "ValueError: x"


def test_the_reviewed_table_refuses_incomplete_rows(tmp_path):
  path = tmp_path / "d.json"
  path.write_text(json.dumps({"deviations": [{"suite": "export_test", "test": "T::x",
                                              "kind": "deliberate", "reason": "", "match": "."}]}))
  with pytest.raises(ValueError, match="lacks reason"):
    _report.load_deviations(path)
  path.write_text(json.dumps({"deviations": [{"suite": "s", "test": "t", "kind": "other",
                                              "reason": "r", "match": "."}]}))
  with pytest.raises(ValueError, match="kind 'other'"):
    _report.load_deviations(path)


def test_the_repositorys_table_loads_and_names_only_known_suites_and_pages():
  rows = _report.load_deviations(run_jax_suites.DEVIATIONS)
  assert {r.suite for r in rows} <= set(run_jax_suites.SUITES)
  documented = json.loads(run_jax_suites.DEVIATIONS.read_text())["documented"]
  for row in documented:
    page, _, anchor = row["docs"].partition("#")
    headings = [l.lstrip("# ").lower() for l in (ROOT / page).read_text().splitlines()
                if l.startswith("#")]
    slugs = {"".join(c for c in h.replace(" ", "-") if c.isalnum() or c == "-") for h in headings}
    assert anchor in slugs, (page, anchor)


def test_stand_ins_serve_jaxport_and_refuse_unlisted_names():
  public = _shims.build("jax.export", jax.export)
  assert public.export is jaxport.export and public.symbolic_shape is jaxport.symbolic_shape
  assert {n for n in dir(jax.export) if not n.startswith("_")} <= set(_shims.ROUTES["jax.export"])
  internal = _shims.build("jax._src.export._export")
  assert internal.call is jaxport.call and "mhlo.sharding" not in internal._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE
  with pytest.raises(AttributeError, match="stand-in for jax._src.export._export has no 'shape_poly'"):
    internal.shape_poly
  poly = _shims.build("jax._src.export.shape_poly", jax_shape_poly)
  assert poly.symbolic_shape is jaxport.symbolic_shape and poly._DimExpr is jax_shape_poly._DimExpr
  (a,) = jaxport.symbolic_shape("a")
  assert poly._bounds_decision(2 * a + 1, jax_shape_poly.BoundsPrecision.BEST) == (3, np.inf)


def test_counters_count_export_call_method_and_deserialize(monkeypatch):
  for module, attr in _shims.COUNTED_SITES:
    monkeypatch.setattr(module, attr, getattr(module, attr))
  counters = _shims.Counters()
  _shims.install_counters(counters)
  _shims.install_counters(counters)  # idempotent: no double counting
  exp = jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((2,), np.float32))
  jaxport.deserialize(exp.serialize()).call(np.zeros(2, np.float32))
  jaxport.call(exp)(np.zeros(2, np.float32))
  assert counters.as_dict() == {"export": 1, "call": 2, "deserialize": 1}


_FAKE_SUITE = '''
import jax, jax.numpy as jnp, numpy as np
from jax import export
from jax._src.export import _export
from jax._src.export import shape_poly
from jax._src.internal_test_util import export_back_compat_test_util as bctu

A, = shape_poly.symbolic_shape("a")  # built while the module is imported

def test_round_trip():
  exp = export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((2,), np.float32))
  _export.deserialize(exp.serialize()).call(np.zeros(2, np.float32))

def test_every_route_is_jaxports():
  assert "jaxport" in (export.__doc__ or "")
  assert "jaxport" in (_export.__doc__ or "") and "jaxport" in (bctu._export.__doc__ or "")
  assert "jaxport" in (bctu.shape_poly.__doc__ or "") and "jaxport" in (shape_poly.__doc__ or "")
  assert type(A).__module__.startswith("jaxport.")

def test_jaxs_package_is_restored_after_import():
  import jax._src.export as package
  assert package._export.__name__ == "jax._src.export._export"
'''


@pytest.mark.slow
def test_a_child_session_rebinds_every_route_only_in_jaxport_mode(tmp_path):
  work, out = tmp_path / "work", tmp_path / "out"
  (work / "util").mkdir(parents=True)
  out.mkdir()
  (work / "fake_test.py").write_text(textwrap.dedent(_FAKE_SUITE))
  shutil.copyfile(run_jax_suites._UTIL, work / "util" / run_jax_suites._UTIL.name)
  (work / "pytest.ini").write_text(run_jax_suites._PYTEST_INI)
  ours = run_jax_suites.run_one(work, out, "fake_test", "jaxport", [], timeout=300)
  theirs = run_jax_suites.run_one(work, out, "fake_test", "jax", [], timeout=300)
  assert {k: v.outcome for k, v in ours.results.items()} == {
      "fake_test.py::test_round_trip": P, "fake_test.py::test_every_route_is_jaxports": P,
      "fake_test.py::test_jaxs_package_is_restored_after_import": P}
  assert ours.counts == {"export": 1, "call": 1, "deserialize": 1}
  assert theirs.results["fake_test.py::test_round_trip"].outcome is P
  assert theirs.results["fake_test.py::test_every_route_is_jaxports"].outcome is F
  assert theirs.counts == {}
  partial = (out / "fake_test.jaxport.json.partial").read_text().splitlines()
  assert len(partial) == 3 and json.loads(partial[-1])["counts"] == ours.counts
  for run in (ours, theirs):
    assert run.results["fake_test.py::test_jaxs_package_is_restored_after_import"].outcome is P


def test_the_runner_refuses_a_source_tree_of_another_jax(tmp_path):
  (tmp_path / "jax").mkdir()
  assert run_jax_suites.main(["--jax-src", str(tmp_path)]) == 2
  (tmp_path / "jax" / "version.py").write_text('_version = "0.0.1"\n')
  assert run_jax_suites.source_version(tmp_path) == "0.0.1"
  assert run_jax_suites.main(["--jax-src", str(tmp_path)]) == 2


def test_a_run_cut_short_keeps_the_tests_it_finished_and_still_fails_the_verdict(tmp_path):
  results = tmp_path / "export_test.jaxport.json"
  lines = [{"nodeid": "export_test.py::T::test_a", "outcome": "passed", "message": "",
            "counts": {"call": 1}},
           {"nodeid": "export_test.py::T::test_b", "outcome": "failed", "message": "KeyError: x",
            "counts": {"call": 2}}]
  _report.partial_path(results).write_text("".join(json.dumps(l) + "\n" for l in lines))
  run = SuiteRun.load("export_test", "jaxport", results, -1, why_incomplete="timed out after 9 s")
  assert run.error == "incomplete (timed out after 9 s): 2 test(s) recorded"
  assert run.counts == {"call": 2} and run.results["export_test.py::T::test_b"].outcome is F
  kinds = {p.kind for p in _report.judge([run], []).problems}
  assert kinds == {ProblemKind.NO_RESULTS, ProblemKind.UNLISTED_FAILURE}
  assert "export_test (incomplete) | - | - | - | 1 | 1 | 0 | 0/2/0 |" in _report.table([run])
