"""jax's own back-compat corpus in the harness: checkers, lowering-only comparison, --compat-jax-corpus."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _jax_releases import corpus_of_jax_0_10_2

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

import jaxport  # noqa: E402
import _judging as judging  # noqa: E402
from jaxport.harness._worker import _case_runs, _corpus, _engine
from jaxport.harness._controller import _jax_corpus
from jaxport.harness import checkers
from jaxport.harness._worker import _reference as _api
from jaxport.harness._protocol._requests import ReplayRequest  # noqa: E402
from jaxport.report import FindingKind  # noqa: E402
from jaxport import _versions  # noqa: E402
from jaxport.corpus import _import, _jax_testdata  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402
from _harness_paths import repo_project  # noqa: E402
from _judging import reproduced  # noqa: E402
from jaxport.harness._judge._targets import module_target_verdicts  # noqa: E402


@pytest.fixture
def engine():
  """An in-process replay engine that looks cases up in this repository's case modules."""
  replay = _engine.ReplayEngine(repo_project())
  yield replay
  replay.close()

pytest_plugins = ["pytester"]
CORPUS = _jax_corpus.corpus_dir()
NON_UNIQUE_FILES = ("cpu_eig_lapack_geev.py", "cpu_eigh_lapack_syev.py", "cpu_qr_lapack_geqrf.py",
                    "cpu_lu_lapack_getrf.py", "cpu_svd_lapack_gesdd.py", "cpu_schur_lapack_gees.py",
                    "cpu_tridiagonal_lapack_sytrd_hetrd.py", "cpu_cholesky_lapack_potrf.py")


@pytest.fixture(scope="module")
def non_unique_store(tmp_path_factory):
  root = tmp_path_factory.mktemp("corpus")
  result = _import.run_import([str(CORPUS / f) for f in NON_UNIQUE_FILES], str(root))
  assert not result["failed"]
  return GoldenStore(root)


def _f32(store):
  return [e for e in store.entries() if e.manifest.case_id == "jax_f32"]


def test_non_unique_results_are_judged_by_their_invariants_and_a_wrong_result_fails(non_unique_store):
  entries = _f32(non_unique_store)
  assert {e.manifest.comparison.mode for e in entries} == {
      "jax_eig", "jax_eigh", "jax_qr", "jax_lu", "jax_svd", "schur", "jax_tridiagonal", "cholesky"}
  for entry in entries:
    m = entry.manifest
    got = _case_runs.run_exported(jaxport.deserialize(entry.blob()), entry.inputs())
    ok = checkers.check(m.comparison.mode, entry.inputs(), entry.expected_outputs(), got,
                        rtol=m.comparison.rtol, atol=m.comparison.atol)
    assert ok.ok, (entry.entry_id, ok.problems)
    # Results that are not a valid answer (every float output scaled) must fail the same checker.
    wrong = [(g * 1.5 + 0.25).astype(g.dtype) if g.dtype.kind in "fc" else g
             for g in map(np.asarray, got)]
    bad = checkers.check(m.comparison.mode, entry.inputs(), entry.expected_outputs(), wrong,
                         rtol=m.comparison.rtol, atol=m.comparison.atol)
    assert not bad.ok, entry.entry_id


def test_an_imported_cuda_dataset_is_compared_with_the_matching_case_lowering_only(
    tmp_path, engine):
  result = _import.run_import([str(CORPUS / "cuda_cholesky_solver_potrf.py")], str(tmp_path),
                              host_platform="cpu")
  assert not result["failed"]
  entry = next(e for e in GoldenStore(tmp_path).entries() if e.manifest.case_id == "jax_f32")
  m = entry.manifest
  assert m.lowering_only and m.platform == "cpu" and m.family == "cuda_cholesky_solver_potrf"
  answer = engine.replay(entry)
  assert [reproduced(r) for r in answer.readers] == [True, True]
  # Each reader reports the module as read; the judge finds its target stable from it.
  assert all(module_target_verdicts(m.custom_call_targets, r.platforms, None,
                                    r.allowed_targets) == {"cusolver_potrf_ffi": "stable"}
             for r in answer.readers)
  assert answer.today.matched_case == "cuda_cholesky_f32"
  asked = ReplayRequest(str(tmp_path), entry.entry_id, tuple(_api.readers()))
  outcome = judging.findings(answer, asked, entry_id=entry.entry_id, manifest=m,
                               today=m.record_date, window_days=180)
  assert outcome.target_verdicts == {"cusolver_potrf_ffi": "stable"}
  assert outcome.platforms == ("cuda",) and outcome.matched_case == "cuda_cholesky_f32"
  # Another function than the case: its signature differences are drift, never a break.
  assert FindingKind.COMPATIBILITY_BREAK not in outcome.kinds
  assert all(k == FindingKind.LOWERING_DRIFT for k in outcome.kinds)
  assert all("of case cuda_cholesky_f32" in msg for msg in outcome.messages)


# Every non-CPU family of the corpus that has a lowering-only case here, and the cases it matches.
MATCHED = {
    "cuda_cholesky_solver_potrf": {"cuda_cholesky_f32"},
    "cuda_eigh_cusolver_syev": {"cuda_eigh_f32"},
    "cuda_lu_cusolver_getrf": {"cuda_lu_f32"},
    "cuda_lu_pivots_to_permutation": {"cuda_lu_pivots_to_permutation"},
    "cuda_qr_cusolver_geqrf": {"cuda_qr_f32"},
    "cuda_svd_cusolver_gesvd": {"cuda_svd_jacobi_f32", "cuda_svd_qr_f32"},
    "cuda_threefry2x32": {"cuda_threefry2x32"},
    "cuda_tridiagonal_cusolver_sytrd": {"cuda_tridiagonal_f32"},
    "cuda_tridiagonal_solve": {"cuda_tridiagonal_solve_f32"},
    "rocm_cholesky_solver_potrf": {"rocm_cholesky_f32"},
    "rocm_eigh_hipsolver_syev": {"rocm_eigh_f32"},
    "rocm_gpu_eigh_solver_syev": {"rocm_eigh_f32"},
    "rocm_lu_pivots_to_permutation": {"rocm_lu_pivots_to_permutation"},
    "rocm_lu_rocsolver_getrf": {"rocm_lu_f32"},
    "rocm_qr_hipsolver_geqrf": {"rocm_qr_f32"},
    "rocm_svd_hipsolver_gesvd": {"rocm_svd_gesdd_f32", "rocm_svd_jacobi_f32", "rocm_svd_qr_f32"},
    "rocm_threefry2x32": {"rocm_threefry2x32"},
    "rocm_tridiagonal_hipsolver_sytrd": {"rocm_tridiagonal_f32"},
    "tpu_ApproxTopK": {"tpu_approx_top_k_f32"},
    "tpu_Eigh": {"tpu_eigh_f32"},
    "tpu_Lu": {"tpu_lu_f32"},
    "tpu_Qr": {"tpu_qr_f32"},
}


@pytest.mark.slow
@corpus_of_jax_0_10_2
def test_every_non_cpu_family_with_a_lowering_only_case_is_matched(tmp_path, engine):
  sources = [str(p) for p in _import.source_files([str(CORPUS)]) if not p.name.startswith("cpu_")]
  assert not _import.run_import(sources, str(tmp_path), host_platform="cpu")["failed"]
  matched: dict[str, set[str]] = {}
  for entry in GoldenStore(tmp_path).entries():
    m = entry.manifest
    assert m.lowering_only or m.imported_from.details["dataset_platform"] == "cpu"
    case = _corpus.matching_case(m.imported_from.details, engine.lookup_case)
    if case is not None:
      matched.setdefault(m.family, set()).add(case.case_id)
  assert matched == MATCHED


def _datasets():
  """Every dataset the installed jax ships (48 cpu and 94 of other platforms in jax 0.10.2)."""
  return [ds for p in _import.source_files([str(CORPUS)]) for ds in _jax_testdata.read_file(p)[0]]


@pytest.mark.slow
def test_compat_jax_corpus_replays_the_installed_jax_corpus(pytester, tmp_path):
  datasets = _datasets()
  report = tmp_path / "report.json"
  result = pytester.runpytest(
      str(ROOT / "harness" / "test_replay.py"), "--platform=cpu", "--compat-jax-corpus",
      f"--compat-report={report}", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
      "-n", "2")
  r = json.loads(report.read_text())
  entries = r["entries"]
  cpu = [e for e in entries if not e["lowering_only"]]
  assert len(cpu) == sum(1 for ds in datasets if ds.fields["platform"] == "cpu")
  # Datasets whose calling convention jaxport's call does not support yet fail with that reason.
  below = {e["entry_id"] for e in cpu
           if any(f"calling convention version {v}," in m for m in e["messages"]
                  for v in range(1, _versions.MIN_CALLING_CONVENTION_VERSION))}
  assert {e["entry_id"] for e in cpu if e["status"] == "fail"} == below
  non_cpu = [e for e in entries if e["lowering_only"]]
  assert len(non_cpu) >= 90
  for e in non_cpu:
    assert FindingKind.COMPATIBILITY_BREAK not in e["kinds"], e["messages"]
    assert set(e["target_verdicts"]) == set(e["targets"]), e["entry_id"]
  corpus = r["jax_corpus"]
  assert corpus["failed"] == [] and corpus["imported"] == len(entries)
  assert len(entries) + len(corpus["duplicates"]) == len(datasets)
  assert result.ret == (1 if below else 0)


def test_compat_jax_corpus_refuses_a_store_or_record_mode(pytester, tmp_path):
  result = pytester.runpytest(
      str(ROOT / "harness" / "test_replay.py"), "--platform=cpu", "--compat-jax-corpus", "--record",
      "-p", "no:cacheprovider")
  assert result.ret == pytest.ExitCode.USAGE_ERROR
  result.stderr.fnmatch_lines(["*--compat-jax-corpus replays its own temporary store*--compat-record*"])
