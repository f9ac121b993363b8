"""Classification of replay findings: break, drift, staleness, expiry and strictness."""

import datetime
import importlib.metadata as md
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.harness._controller import _coverage as coverage
import _judging as judging  # noqa: E402
from jaxport.report import _coverage as run_coverage  # noqa: E402
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _harness_paths import repo_project  # noqa: E402
from jaxport._vocabulary import Subject  # noqa: E402
from jaxport.golden import EntryId  # noqa: E402
from jaxport.golden._host import Host  # noqa: E402
from jaxport.golden._signatures import drift  # noqa: E402
from jaxport.golden._manifest import (Comparison, CustomCallSignature, Manifest,  # noqa: E402
                                      Producer)
from jaxport.harness._protocol._answers import (FailureKind, Numerics, ReaderResult,  # noqa: E402
                                       ReplayAnswer, Stage, TodayResult, UpgradedRun,
                                       WorkerFailure)
from jaxport.harness._protocol._requests import ReplayRequest  # noqa: E402
from jaxport.report._entries import EntryResult  # noqa: E402
from jaxport.report import Finding, FindingKind as K, Status  # noqa: E402

TODAY = datetime.date(2026, 6, 1)
SIG = CustomCallSignature("lapack_spotrf_ffi", ("tensor<4x4xf32>",),
                          ("tensor<4x4xf32>", "tensor<i32>"), {})


# The jax release replaying here: an entry it recorded has nothing of jax's own to explain a
# lowering difference.
THIS_JAX = md.version("jax")
OTHER_JAX = "0.9.2" if THIS_JAX != "0.9.2" else "0.10.2"


def _manifest(record_date="2026-05-01", host=None, lowering_only=False, producer=THIS_JAX):
  return Manifest(case_id="cholesky_f32", family="lapack_potrf", platform="cpu",
                  record_date=datetime.date.fromisoformat(record_date),
                  producer=Producer(jax=producer, jaxlib=producer, jaxport="0", numpy="2",
                                    scipy=None, python=None),
                  calling_convention_version=10, serialization_version=6,
                  custom_call_targets=(SIG,), polymorphic_shapes=None, constraints=None,
                  lowering_only=lowering_only,
                  comparison=Comparison("allclose", 1e-5, 1e-5),
                  host=None if host is None else Host.from_json(host, "test manifest"))


def _reader(name, stage=Stage.COMPARE, ok=True, exact=True, max_abs_err=0.0, problems=(),
            error=None, **kw):
  """One reader's result: failed at ``stage`` with ``error``, or compared (``ok``/``exact``)."""
  if error is not None:
    return ReaderResult(name, stage, error=error, **kw)
  return ReaderResult(name, stage, numerics=Numerics(ok, exact, max_abs_err, tuple(problems)),
                      **{"platforms": ("cpu",), "allowed_targets": (), **kw})


def _answer(readers=None, host=None, **today):
  cur = {"available": True, "targets": ("lapack_spotrf_ffi",), "signature_diff": (),
         "same_module": True}
  cur.update(today)
  return ReplayAnswer(readers=tuple(readers or (_reader("jaxport"), _reader("jax"))),
                      today=TodayResult(**cur), host=host, seconds=0.0, timings={})


def _classify_answer(answer, manifest=None, window=180, current_jax=None):
  entry_id = EntryId.parse("cpu/lapack_potrf/cholesky_f32/2026-05-01_jax-0.10.2")
  # Asked of exactly the readers that answered, and today's lowering where there is one.
  answered = getattr(answer, "readers", ("jaxport", "jax"))  # a failure answers none
  asked = ReplayRequest("compat_data", entry_id,
                        tuple(getattr(r, "reader", r) for r in answered),
                        current=getattr(answer, "today", True) is not None)
  return judging.findings(answer, asked, entry_id=entry_id,
                            manifest=manifest or _manifest(), today=TODAY, window_days=window,
                            current_jax=current_jax)


def test_clean_replay_passes_with_days_to_expiry():
  out = _classify_answer(_answer())
  assert out.kinds == () and judging.status(out, strict=True) is Status.PASS
  assert out.days_to_expiry == 180 - 31
  assert out.current_targets == ("lapack_spotrf_ffi",)


def test_one_reader_failing_is_a_break_naming_the_reader():
  answer = _answer([_reader("jaxport"),
                    _reader("jax", ok=False, exact=False, max_abs_err=1.0,
                            problems=["output 0: 3 of 16 differ"])])
  out = _classify_answer(answer)
  assert out.kinds == (K.COMPATIBILITY_BREAK,)
  assert out.messages == ("[compatibility_break] jax reader: output 0: 3 of 16 differ",)
  assert out.findings[0].reader == "jax"
  assert judging.status(out, strict=False) is Status.FAIL


def test_deserialize_error_is_a_break():
  answer = _answer([_reader("jaxport", stage=Stage.DESERIALIZE, error="DeserializationError: bad"),
                    _reader("jax")])
  out = _classify_answer(answer)
  assert "jaxport reader: deserialize failed: DeserializationError: bad" in out.messages[0]


HOST = {"cpu_vendor": "GenuineIntel", "cpu_model": "Some Xeon", "cpu_flags": ["avx", "avx2", "fma"],
        "jaxlib": "0.10.2", "xla_flags": ""}


def test_within_tolerance_difference_on_the_recording_host_class_is_numerics_drift():
  answer = _answer([_reader("jaxport", exact=False, max_abs_err=1e-7), _reader("jax")], host=HOST)
  out = _classify_answer(answer, _manifest(host=HOST))
  assert out.kinds == (K.NUMERICS_DRIFT,)
  assert "recording host's class" in out.messages[0]
  assert judging.status(out, strict=True) is Status.DRIFT


def test_within_tolerance_difference_on_another_host_class_is_a_pass_with_the_reason():
  other = {**HOST, "cpu_flags": ["avx", "avx2", "avx512f", "fma"]}
  answer = _answer([_reader("jaxport", exact=False, max_abs_err=1e-7), _reader("jax")],
                   host=other, numerics=Numerics(ok=True, exact=False, max_abs_err=2e-7))
  out = _classify_answer(answer, _manifest(host=HOST))
  assert out.kinds == (K.NUMERICS_OTHER_HOST,) and len(out.findings) == 2
  assert all("bitwise equality was not expected" in m and "cpu_flags" in m for m in out.messages)
  assert out.messages[1].startswith("[numerics_other_host] current lowering: ")
  assert judging.status(out, strict=True) is Status.PASS


def test_an_unknown_host_on_either_side_is_never_numerics_drift():
  inexact = [_reader("jaxport", exact=False, max_abs_err=1e-7), _reader("jax")]
  for manifest, host, why in ((_manifest(), HOST, "recording host is unknown"),
                              (_manifest(host=HOST), None, "replay host is unknown"),
                              (_manifest(host={**HOST, "jaxlib": None}), {**HOST, "jaxlib": None},
                               "jaxlib unknown")):
    answer = _answer(inexact, host=host)
    out = _classify_answer(answer, manifest)
    assert out.kinds == (K.NUMERICS_OTHER_HOST,), (manifest, host)
    assert why in out.messages[0]
    assert judging.status(out, strict=True) is Status.PASS


def test_bitwise_equal_results_have_no_host_finding():
  out = _classify_answer(_answer(host=HOST))
  assert out.kinds == () and out.recorded_host is None and out.replay_host == HOST


def test_signature_change_is_lowering_drift_and_fails_only_when_strict():
  answer = _answer(signature_diff=("target lapack_spotrf_ffi changed signature: ...",))
  out = _classify_answer(answer)
  assert out.kinds == (K.LOWERING_DRIFT,)
  assert judging.status(out, strict=False) is Status.WARN
  assert judging.status(out, strict=True) is Status.FAIL


def test_signature_change_breaks_a_lowering_only_entry():
  answer = _answer(signature_diff=("target cusolver_potrf_ffi changed signature: ...",))
  out = _classify_answer(answer, _manifest(lowering_only=True))
  assert out.kinds == (K.COMPATIBILITY_BREAK,)
  assert any("lowering-only" in s for s in out.skips)


def test_a_signature_change_of_another_releases_entry_is_jaxs_only_where_evidence_says_so():
  # Today's lowering: the recorded kernel with another attribute.
  today = CustomCallSignature(SIG.target, SIG.operand_types, SIG.result_types,
                              {**SIG.attributes, "mode": "moved"})
  (line,) = [str(c) for c in drift((SIG,), (today,))]
  for lowering_only in (False, True):
    readers = None if not lowering_only else [
        ReaderResult(r, Stage.MODULE, platforms=("cpu",), allowed_targets=()) for r in ("jaxport", "jax")]
    answer = _answer(readers, signature_diff=(line,),
                     numerics=None if lowering_only else Numerics(True, True, 0.0),
                     same_module=False)
    manifest = _manifest(lowering_only=lowering_only, producer=OTHER_JAX)
    # The case's entry recorded by the replaying jax lowers as today: jax's change.
    out = _classify_answer(answer, manifest, current_jax=(today,))
    assert out.kinds == (K.PRODUCER_DRIFT,), out.messages
    (found,) = out.findings
    assert f"recorded by jax {OTHER_JAX}, lowered today by jax {THIS_JAX}" in found.message
    assert found.detail == line
    assert judging.status(out, strict=True) is Status.PASS
    # No such entry, or one that lowers as the old entry (the function changed since): whose
    # change it is is unknown, a warning.
    for current in (None, (SIG,)):
      out = _classify_answer(answer, manifest, current_jax=current)
      assert out.kinds == (K.DRIFT_UNATTRIBUTED,), out.messages
      (found,) = out.findings
      assert "whose change this is is unknown" in found.message and found.detail == line
      assert f"recorded by jax {OTHER_JAX}, lowered today by jax {THIS_JAX}" in found.message
      assert judging.status(out) is Status.WARN
      assert judging.status(out, strict=True) is Status.FAIL


def test_a_signature_change_of_another_releases_entry_whose_results_moved_is_the_functions():
  answer = _answer(signature_diff=("target lapack_spotrf_ffi changed signature: ...",),
                   numerics=Numerics(False, False, 1.0, ("outputs differ",)), same_module=False)
  out = _classify_answer(answer, _manifest(producer=OTHER_JAX))
  assert set(out.kinds) == {K.LOWERING_DRIFT, K.NUMERICS_CHANGE}, out.messages


def test_target_no_longer_emitted_is_stale():
  answer = _answer(targets=("lapack_spotrf_ffi_v2",),
                   signature_diff=("target lapack_spotrf_ffi is no longer emitted by the current "
                                   "lowering",))
  out = _classify_answer(answer)
  assert set(out.kinds) == {K.STALE_TARGET, K.LOWERING_DRIFT}
  assert judging.status(out, strict=False) is Status.WARN


def test_expired_entry_warns_and_fails_when_strict():
  out = _classify_answer(_answer(), _manifest(record_date="2025-01-01"))
  assert out.days_to_expiry < 0 and out.kinds == (K.EXPIRED,)
  assert "days past the 180-day compat window" in out.messages[0]
  assert judging.status(out, strict=True) is Status.FAIL


def test_a_crash_is_a_break_and_damaged_golden_data_a_golden_data_error():
  out = _classify_answer(WorkerFailure(FailureKind.CRASHED, "the worker exited", returncode=-11,
                                       stderr_tail="Fatal Python error: Segmentation fault"))
  assert out.kinds == (K.COMPATIBILITY_BREAK,) and "killed by SIGSEGV (signal 11)" in out.messages[0]
  assert "Segmentation fault" in out.messages[0]
  silent = _classify_answer(WorkerFailure(FailureKind.CRASHED, "the worker exited", returncode=3,
                                          stderr_tail="\n"))
  assert "exit code 3" in silent.messages[0] and "it wrote nothing to stderr" in silent.messages[0]
  out = _classify_answer(WorkerFailure(FailureKind.GOLDEN_DATA, "exported.bin: sha256 mismatch"))
  assert out.kinds == (K.GOLDEN_DATA_ERROR,) and "sha256 mismatch" in out.messages[0]
  assert judging.status(out, strict=False) is Status.FAIL


def _died(stages=(), exited_in=None):
  return _classify_answer(WorkerFailure(FailureKind.CRASHED, "the worker exited", returncode=3,
                                        stderr_tail="last words", stages=stages,
                                        exited_in=exited_in))


def test_a_death_in_the_cases_own_code_or_todays_export_is_its_export_error():
  for stages, exited_in, named in [(("case_code",), None, "the case's own code"),
                                   (("today",), None, "today's export of the case"),
                                   (("reader:jax", "case_code"), "case_code",
                                    "was ended by a call of os._exit during the case's own code")]:
    out = _died(stages, exited_in)
    assert out.kinds == (K.EXPORT_ERROR,), (stages, out.messages)
    (finding,) = out.findings
    assert finding.subject is Subject.TODAY and finding.reader is None
    assert named in finding.message and "exit code 3" in finding.message, finding.message
    assert "last words" in finding.message
    assert judging.status(out, strict=False) is Status.FAIL


def test_a_death_during_a_reader_stays_a_break_naming_the_reader():
  for stages, exited_in, reader in [(("reader:jaxport",), None, "jaxport"),
                                    (("case_code", "reader:jax"), None, "jax"),
                                    (("today",), "reader:jax", "jax")]:
    out = _died(stages, exited_in)
    assert out.kinds == (K.COMPATIBILITY_BREAK,), (stages, out.messages)
    (finding,) = out.findings
    # Named in the message; as a crash it is never excused as a reader's own failure can be.
    assert finding.subject is Subject.WORKER and finding.reader is None, finding
    assert finding.message.startswith(f"{reader} reader: the worker process "), finding.message
    assert f"the {reader} reader's replay of the recorded entry" in finding.message
    assert judging.status(out, strict=False) is Status.FAIL
  both = _died(("reader:jax", "reader:jaxport")).findings[0]
  assert both.kind is K.COMPATIBILITY_BREAK
  assert both.message.startswith("jax, jaxport readers: "), both.message


def test_a_death_without_word_of_its_stage_is_a_break_of_the_worker():
  (finding,) = _died().findings
  assert finding.kind is K.COMPATIBILITY_BREAK and finding.subject is Subject.WORKER
  assert "the worker process died while replaying" in finding.message


def test_removed_case_is_in_the_skip_ledger():
  out = _classify_answer(ReplayAnswer(readers=(_reader("jaxport"), _reader("jax")),
                                      today=TodayResult(available=False, reason="case gone"),
                                      host=None, seconds=0.0, timings={}))
  assert out.kinds == () and out.skips == ("current lowering not checked: case gone",)


def test_coverage_counts_the_replayed_entries():
  a, b = EntryId.parse("cpu/f/c/2026-01-01_jax-0.10.2"), EntryId.parse("cpu/f/d/2026-01-01_jax-0.10.2")
  replayed = EntryResult(a, "c", "f", None, None, False, ("t1",), ("t1", "t3"))
  cov = run_coverage.target_coverage([replayed], ["t1", "t2"])
  assert cov.covered == ("t1",)
  assert cov.missing_required == ("t2",)
  assert cov.missing_reachable == ("t3",)
  assert run_coverage.tripwire([a, b], [replayed]) == [b]
  assert run_coverage.cases_without_entries(["x", "y"],
                                            [EntryId.parse("cpu/f/x/2026-01-01_jax-1")]) == ["y"]


def test_required_cpu_targets_are_the_48_lapack_ffi_targets():
  required = coverage.required_targets("cpu", repo_project())
  assert len(required) == 48
  assert all(t.startswith("lapack_") and t.endswith("_ffi") for t in required)


def test_an_entry_that_ran_after_upgrade_passes_with_the_rules_in_the_message():
  up = UpgradedRun(("potrf",), "JaxRuntimeError: No registered implementation", ())
  out = _classify_answer(_answer([_reader("jaxport", upgraded=up), _reader("jax", upgraded=up)]))
  assert out.kinds == (K.UPGRADED,) and out.upgrade_rules == ("potrf",)
  assert all("rules potrf" in m and "No registered implementation" in m for m in out.messages)
  assert judging.status(out, strict=True) is Status.PASS


def test_a_refused_upgrade_stays_a_break_and_says_why():
  answer = _answer([_reader("jaxport", stage=Stage.RUN, error="JaxRuntimeError: gone",
                            upgrade_refused="operand 'lower' must be a constant"), _reader("jax")])
  out = _classify_answer(answer)
  assert out.kinds == (K.COMPATIBILITY_BREAK,)
  assert "upgrade refused: operand 'lower' must be a constant" in out.messages[0]


def test_an_outcome_crosses_the_process_boundary_unchanged():
  up = UpgradedRun(("potrf",), "gone", ())
  out = _classify_answer(_answer([_reader("jaxport", upgraded=up),
                                  _reader("jax", exact=False, max_abs_err=1e-7)],
                                 signature_diff=("target t changed signature: ...",)))
  out = out.replace(status=judging.status(out, strict=False))
  assert EntryResult.from_part_json(json.loads(json.dumps(out.to_part_json()))) == out
  assert out.findings[0] == Finding(K.UPGRADED, Subject.READER, out.findings[0].message, "jaxport")


def test_the_report_entry_is_what_the_report_reader_reads_back():
  from jaxport.report import EntryResult
  out = _classify_answer(_answer([_reader("jaxport"), _reader("jax", ok=False, problems=["bad"])]))
  out = out.replace(status=judging.status(out, strict=False))
  entry = EntryResult.from_json(json.loads(json.dumps(out.to_json())), "entry")
  assert entry.status is Status.FAIL and entry.kinds == ("compatibility_break",)
  assert entry.findings == out.findings
  assert entry.to_json() == out.to_json()


def test_a_project_requires_only_the_targets_it_declares_unless_it_asks_for_jaxports_table():
  from jaxport.harness import Project, ProjectTargets
  declared = ProjectTargets({"cpu": ("my_kernel",), "any": ("shared_kernel",)})
  own = Project(("mycases",), ROOT / "store", targets=declared)
  assert coverage.required_targets("cpu", own) == ["my_kernel", "shared_kernel"]
  assert coverage.required_targets("cuda", own) == ["shared_kernel"]
  both = Project(("mycases",), ROOT / "store", targets=declared, require_builtin_targets=True)
  assert {"my_kernel", "lapack_spotrf_ffi"} <= set(coverage.required_targets("cpu", both))


def test_a_judged_entry_read_back_from_its_report_file_lists_the_same():
  out = _classify_answer(_answer([_reader("jaxport"), _reader("jax", ok=False, problems=["bad"])]),
                         _manifest(lowering_only=False))
  out = out.replace(status=judging.status(out, strict=False))
  back = EntryResult.from_json(json.loads(json.dumps(out.to_json())), "entry")
  assert back.findings[0].reader == "jax"
  assert (back.kinds, back.messages) == (out.kinds, out.messages)
  # The file holds every field but the run's own (skips, upgrade rules, the replay host).
  assert back.replace(listed_kinds=None, listed_messages=None) == out.replace(
      skips=(), upgrade_rules=(), replay_host=None)


def test_a_superseded_entrys_difference_from_today_warns_even_when_strict():
  answer = _answer(signature_diff=("target lapack_spotrf_ffi changed signature: ...",))
  out = _classify_answer(answer)
  assert judging.status(out, strict=True, superseded=True) is Status.WARN
  assert judging.status(out, strict=True, superseded=False) is Status.FAIL
  expired = _classify_answer(_answer(), window=10)
  assert K.EXPIRED in expired.kinds
  assert judging.status(expired, strict=True, superseded=True) is Status.FAIL


def test_the_report_names_the_blob_the_worker_replayed_and_none_of_files_that_did_not_read():
  from jaxport.golden._manifest import Manifest as Read
  path = sorted((ROOT / "compat_data" / "cpu" / "lapack_potrf" / "cholesky_f32").glob(
      "*/manifest.json"))[-1]
  manifest = Read.from_json(path.read_text(), str(path))
  sha = manifest.files["exported.bin"]
  out = _classify_answer(_answer(), manifest=manifest)
  assert out.blob_sha256 == sha
  judged = out.replace(status=judging.status(out))
  assert EntryResult.from_part_json(json.loads(json.dumps(judged.to_part_json()))) == judged
  assert judged.to_json()["blob_sha256"] == sha
  damaged = _classify_answer(WorkerFailure(FailureKind.GOLDEN_DATA, "exported.bin: sha256 "
                                           "mismatch"), manifest=manifest)
  assert damaged.blob_sha256 is None
  assert "blob_sha256" not in damaged.replace(
      status=judging.status(damaged)).to_json()


def test_a_target_the_installed_jaxlib_dropped_and_its_successor_are_jaxs_change():
  import dataclasses
  from jaxport.golden._signature_drift import added_text, gone_text
  legacy = CustomCallSignature("lapack_spotrf", ("tensor<4x4xf32>",),
                               ("tensor<4x4xf32>", "tensor<i32>"), {})
  older = dataclasses.replace(_manifest(producer=OTHER_JAX), custom_call_targets=(legacy,))
  diff = (gone_text("lapack_spotrf"), added_text("lapack_spotrf_ffi"))
  rewrite = {"rule": "potrf", "legacy_target": "lapack_spotrf", "target": "lapack_spotrf_ffi",
             "location": "loc", "dropped_operands": [], "attributes": {}}
  up = UpgradedRun(("potrf",), "JaxRuntimeError: No registered implementation", (rewrite,))
  upgraded = _classify_answer(_answer([_reader("jaxport", upgraded=up), _reader("jax", upgraded=up)],
                                      signature_diff=diff), older)
  assert K.DRIFT_UNATTRIBUTED not in upgraded.kinds
  drift_lines = [f.message for f in upgraded.findings if f.kind == K.PRODUCER_DRIFT]
  assert len(drift_lines) == 2 and all(
      "no longer registers lapack_spotrf" in m and "rule potrf" in m for m in drift_lines)
  assert set(upgraded.kinds) == {K.UPGRADED, K.PRODUCER_DRIFT, K.STALE_TARGET}
  # Without this run's measurement that jaxlib dropped the target, whose change it is is unknown.
  ran_as_recorded = _classify_answer(_answer(signature_diff=diff), older)
  assert set(ran_as_recorded.kinds) == {K.DRIFT_UNATTRIBUTED, K.STALE_TARGET}


def test_a_failing_entry_lists_what_fails_it_before_what_only_informs():
  from jaxport.harness._judge._entry import EntryContext, RunContext, judge
  entry_id = EntryId.parse("cpu/lapack_potrf/cholesky_f32/2026-05-01_jax-0.10.2")
  answer = _answer([_reader("jaxport", exact=False, max_abs_err=1e-7, problems=()),
                    _reader("jax", ok=False, problems=["output 0: 3 of 16 elements differ"])],
                   host=HOST)
  asked = ReplayRequest("compat_data", entry_id, ("jaxport", "jax"))
  out = judge(entry_id, answer, asked, EntryContext(_manifest(host=HOST)),
              RunContext(today=TODAY, window_days=180, consumer=judging.CONSUMER))
  assert out.status is Status.FAIL and len(out.findings) >= 2
  assert out.findings[0].kind == K.COMPATIBILITY_BREAK
  assert "3 of 16 elements differ" in out.messages[0]


def test_a_superseded_entry_that_warns_says_so_and_the_summary_names_prune():
  import dataclasses
  from jaxport.harness._controller import _reporter as reporter
  from jaxport.harness._judge._entry import EntryContext, RunContext, judge, superseded_warning
  from jaxport.report import RunReport
  import _report_helpers as helpers
  entry_id = EntryId.parse("cpu/lapack_potrf/cholesky_f32/2026-05-01_jax-0.10.2")
  answer = _answer(signature_diff=("target lapack_spotrf_ffi changed signature: ...",))
  asked = ReplayRequest("compat_data", entry_id, ("jaxport", "jax"))
  run = RunContext(today=TODAY, window_days=180, consumer=judging.CONSUMER)
  older = judge(entry_id, answer, asked, EntryContext(_manifest(), newest=False), run)
  newest = judge(entry_id, answer, asked, EntryContext(_manifest(), newest=True), run)
  assert older.status is Status.WARN and superseded_warning(older)
  assert any("jaxport prune --superseded" in s for s in older.skips)
  assert newest.status is Status.WARN and not superseded_warning(newest)
  report = RunReport.from_json(helpers.run_report())
  lines = reporter.text_lines(dataclasses.replace(report, entries=(older,)))
  assert any("1 superseded entries" in line and "jaxport prune --superseded" in line
             for line in lines)
  assert not any("they fail with --compat-strict" in line for line in lines)


def test_an_imported_entry_finds_its_evidence_by_shape_as_its_lowering_is_compared():
  import dataclasses
  from jaxport.golden._manifest import ImportSource
  from jaxport.golden._signature_drift import drift, shape_blind
  rule = "#sdy.op_sharding_rule<([i, j])->([k, l], []) {i=4, j=4, k=4, l=4}, custom>"
  now = CustomCallSignature(SIG.target, SIG.operand_types, SIG.result_types,
                            {"sdy.sharding_rule": rule})
  older = dataclasses.replace(_manifest(producer=OTHER_JAX),
                              imported_from=ImportSource("jax.export", {}))
  # The worker compares an imported entry with today's lowering by shape.
  today_lines = tuple(str(c) for c in drift(shape_blind(older.custom_call_targets),
                                             shape_blind((now,))))
  assert "?x?" in today_lines[0]
  out = _classify_answer(_answer(signature_diff=today_lines), older, current_jax=(now,))
  assert out.kinds == (K.PRODUCER_DRIFT,)
  unknown = _classify_answer(_answer(signature_diff=today_lines), older, current_jax=(SIG,))
  assert unknown.kinds == (K.DRIFT_UNATTRIBUTED,)
