"""Harness findings of the review: what a broken store, an unreadable entry and a narrowed run report."""

import datetime
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.golden import EntryId  # noqa: E402
from jaxport.harness._controller import _reporter as reporter  # noqa: E402
from jaxport.harness._controller._entry_run import EntryRun  # noqa: E402
from jaxport.harness._controller._session import HarnessSession  # noqa: E402
from jaxport.harness._controller._settings import Options, Settings  # noqa: E402
from jaxport._jaxcompat import _envelope as jax_envelope
from _harness_paths import repo_project  # noqa: E402

GOLDEN = ROOT / "compat_data"
ENTRY = "cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"


def _session(root: Path) -> HarnessSession:
  return HarnessSession(Options.for_run(
      Settings(platform="cpu", window_days=180, worker_timeout_s=60.0,
               today=datetime.date(2026, 11, 29)),
      golden_root=root, partial=False),
      repo_project(root))


def _copy(root: Path, entry_id: str) -> Path:
  shutil.copytree(GOLDEN / entry_id, root / entry_id)
  return root / entry_id


def test_a_stray_file_in_the_store_fails_once_with_the_fix_and_the_entries_beside_it_stay(tmp_path):
  _copy(tmp_path, ENTRY)
  (tmp_path / "cpu" / "lapack_potrf" / "notes.txt").write_text("x")
  hs = _session(tmp_path)
  assert hs.entry_ids() == [EntryId.parse(ENTRY)]
  report = hs.build_report().to_json()
  strays = [f for f in report["session_failures"] if "notes.txt" in f]
  assert len(strays) == 1, report["session_failures"]
  assert "not an entry" in strays[0] and "Move it out of the store" in strays[0]


def test_an_unreadable_entry_has_no_expiry_and_is_not_reported_as_expiring(tmp_path):
  entry = _copy(tmp_path, ENTRY)
  manifest = entry / "manifest.json"
  data = json.loads(manifest.read_text())
  data["comparison"]["rtol"] = 1.0
  manifest.write_text(json.dumps(data, sort_keys=True))
  hs = _session(tmp_path)
  outcome = hs.replay(EntryId.parse(ENTRY))
  assert outcome.status == "fail"
  assert outcome.days_to_expiry is None
  text = "\n".join(reporter.text_lines(hs.build_report()))
  assert "digest mismatch" in text
  assert "expires in" not in text


def test_the_tripwire_names_a_few_unreplayed_entries_and_counts_the_rest(tmp_path):
  ids = sorted(str(p.relative_to(GOLDEN)) for p in (GOLDEN / "cpu" / "lapack_potrf").glob("*/*"))
  assert len(ids) > 12
  for entry_id in ids:
    _copy(tmp_path, entry_id)
  failures = _session(tmp_path).build_report().session_failures
  tripwire, = [f for f in failures if f.startswith("tripwire")]
  assert ids[0] in tripwire and ids[-1] not in tripwire
  assert f"and {len(ids) - 10} more" in tripwire


def test_an_entry_of_a_removed_target_replays_as_upgraded_and_the_summary_counts_it(tmp_path):
  entry_id = "cpu/lapack_potrf/release_cholesky_f32/2026-11-29_jax-0.4.30"
  _copy(tmp_path, entry_id)
  hs = _session(tmp_path)
  try:
    outcome = hs.replay(EntryId.parse(entry_id))
    report = hs.build_report()
  finally:
    hs.close()
  assert "upgraded" in outcome.kinds
  # Without an entry of the case recorded by the running jax, whose the lowering change is
  # cannot be told: a warning, and nothing else.
  assert outcome.status == ("warn" if "drift_unattributed" in outcome.kinds else "pass")
  assert outcome.release.verdict == "upgraded"
  # jax 0.11.1 and newer also refuse the jax 0.4.30 envelope as expired: it is rewritten first.
  envelope = ("envelope",) if jax_envelope.REFUSES_EXPIRED else ()
  assert outcome.release.upgrade_rules == (*envelope, "potrf")
  upgraded_by = [f.reader for f in outcome.findings if f.kind == "upgraded"]
  assert upgraded_by == [r for r in ("jaxport", "jax") for _ in range(1 + len(envelope))]
  assert report.summary.upgraded == 1
  assert "1 ran after jaxport.upgrade" in "\n".join(reporter.text_lines(report))


def test_each_report_section_means_one_thing(tmp_path):
  from jaxport.golden._host import Host
  from jaxport.golden._manifest import Comparison, Manifest, Producer
  import _judging as judging
  from jaxport.harness._protocol._answers import (Numerics, ReaderResult, ReplayAnswer, Stage,
                                                  TodayResult)
  from jaxport.harness._protocol._requests import ReplayRequest
  from jaxport.report import FindingKind
  hs = _session(tmp_path)
  host = {"cpu_vendor": "V", "cpu_model": "M", "cpu_flags": ["avx2"], "jaxlib": "0.10.2",
          "xla_flags": ""}
  # Recorded and replayed on one host class: within tolerance but not bitwise is drift.
  drifting_id = EntryId.parse("cpu/f/drifting/2026-11-01_jax-0.10.2")
  drifting = judging.findings(
      ReplayAnswer(readers=(ReaderResult("jax", Stage.COMPARE, platforms=("cpu",), allowed_targets=(),
                                         numerics=Numerics(ok=True, exact=False,
                                                           max_abs_err=1e-7)),),
                   today=TodayResult(available=False, reason="case gone"), host=host,
                   seconds=0.0, timings={}),
      ReplayRequest(str(tmp_path), drifting_id, ("jax",)),
      entry_id=drifting_id, today=datetime.date(2026, 11, 29),
      manifest=Manifest(case_id="drifting", family="f", platform="cpu",
                        record_date=datetime.date(2026, 1, 1),
                        producer=Producer(jax="0.10.2", jaxlib="0.10.2", jaxport=None, numpy=None,
                                          scipy=None, python=None),
                        calling_convention_version=10, serialization_version=6,
                        custom_call_targets=(), polymorphic_shapes=None, constraints=None,
                        lowering_only=False, comparison=Comparison("allclose", 1e-5, 1e-5),
                        host=Host.from_json(host, "test manifest")),
      window_days=180)
  assert set(drifting.kinds) == {FindingKind.NUMERICS_DRIFT, FindingKind.EXPIRED}
  xfailed = drifting.replace(entry_id=EntryId.parse("cpu/f/xfailed/2026-11-01_jax-0.4.30"),
                             findings=(),
                             skips=(), expected_failure="removed target")
  outcomes = {o.entry_id: o.replace(status=judging.status(o, strict=False))
              for o in (drifting, xfailed)}
  # Outcomes arrive as an xdist worker sends them.
  hs.merge(json.dumps({"runs": {str(k): EntryRun(o).to_json() for k, o in outcomes.items()},
                       "recorded": {}, "session_failures": [], "notices": []}))
  run = hs.build_report()
  report = run.to_json()
  # drift: only the drift kinds (expiry is staleness, in the entry's findings).
  assert [(d["entry_id"], d["kind"]) for d in report["drift"]] == [
      (str(drifting.entry_id), "numerics_drift")]
  # skips: what was not checked; an expected failure was replayed, its reason is on the entry.
  assert [s["what"] for s in report["skips"] if s["what"].startswith("cpu/")] == [str(drifting.entry_id)]
  by_id = {e["entry_id"]: e for e in report["entries"]}
  assert by_id[str(xfailed.entry_id)]["status"] == "xfail"
  assert by_id[str(xfailed.entry_id)]["expected_failure"] == "removed target"
  assert by_id[str(drifting.entry_id)]["kinds"] == ["expired", "numerics_drift"]
  text = "\n".join(reporter.text_lines(run))
  assert f"XFAIL {xfailed.entry_id}: removed target" in text
