"""Compatibility reports in the harness's JSON format, built in code for the report tests.

``run_report`` gives one run with an entry of every status (pass, drift,
warn, expected failure, fail) and a target no entry covers; ``history`` gives
four runs on successive dates in which targets change status.
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from jaxport.report import DRIFT_KINDS, REPORT_FORMAT

RUN_DATES = ("2026-11-01", "2026-11-08", "2026-11-15", "2026-11-22")


def _release(producer: str, produced: str, verdict: str, expected: str = "pass",
             reason: str | None = None, inside: bool = True) -> dict[str, Any]:
  return {"producer": producer, "consumer": "0.10.2", "expected": expected, "reason": reason,
          "verdict": verdict,
          "window": {"producer": producer, "producer_date": produced, "consumer": "0.10.2",
                     "consumer_date": "2026-06-17", "age_days": 100, "gap_days": 50,
                     "direction": "backward", "inside_window": inside}}


def _entry(family: str, case: str, producer: str, status: str, targets: list[str],
           messages: list[str] | None = None, **extra: Any) -> dict[str, Any]:
  kinds = sorted({m[1:m.index("]")] for m in messages or []})
  produced = {"0.10.2": "2026-06-17", "0.9.2": "2026-03-18", "0.4.30": "2024-06-18"}[producer]
  verdict = {"xfail": "expected_failure", "fail": "unexpected_failure"}.get(status, "pass")
  e = {"entry_id": f"cpu/{family}/{case}/2026-10-01_jax-{producer}", "case_id": case,
       "family": family, "record_date": "2026-10-01", "status": status, "kinds": kinds,
       "messages": messages or [], "days_to_expiry": 150, "lowering_only": False,
       "targets": targets, "current_targets": targets,
       "release": _release(producer, produced, verdict,
                           expected="fail" if status == "xfail" else "pass",
                           reason="legacy target removed" if status == "xfail" else None,
                           inside=producer != "0.4.30"),
       "expected_failure": "legacy target removed" if status == "xfail" else None,
       "findings": _findings(messages or []), "platforms": ["cpu"], "target_verdicts": None}
  e.update(extra)
  return e


def _entries() -> list[dict[str, Any]]:
  return [
      _entry("lapack_potrf", "cholesky_f32", "0.10.2", "pass", ["lapack_spotrf_ffi"]),
      _entry("lapack_potrf", "cholesky_f32", "0.9.2", "pass", ["lapack_spotrf_ffi"]),
      _entry("lapack_potrf", "cholesky_f64", "0.10.2", "pass", ["lapack_dpotrf_ffi"]),
      _entry("lapack_syevd", "eigh_f32", "0.10.2", "drift", ["lapack_ssyevd_ffi"],
             ["[numerics_drift] jaxport reader: results within tolerance but not bitwise equal "
              "(max abs err 2.38e-07)"]),
      _entry("lapack_gesdd", "svd_f32", "0.9.2", "warn", ["lapack_sgesdd_ffi"],
             ["[lowering_drift] current lowering: lapack_sgesdd_ffi operand 0: recorded "
              "tensor<4x4xf32>, today tensor<4x4xf64>"]),
      _entry("lapack_getrf", "release_lu_f32", "0.4.30", "xfail", ["lapack_sgetrf"],
             ["[compatibility_break] jaxport reader: run failed: NOT_FOUND: No registered "
              "implementation for untyped custom call to lapack_sgetrf"]),
      _entry("lapack_geqrf", "qr_f32", "0.10.2", "fail", ["lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"],
             ["[compatibility_break] jax reader: output 0: 3 of 9 elements differ; max abs err "
              "0.5, mean abs err 0.1, max rel err 0.25\nsecond line <b>not markup</b>"]),
      _entry("feature_prng", "threefry_key", "0.10.2", "pass", []),
  ]


def _findings(messages: list[str]) -> list[dict[str, Any]]:
  """The typed findings of ``[kind] message`` texts: a lowering drift is about today's
  lowering, the rest about the reader the message names."""
  out = []
  for m in messages:
    kind, message = m[1:m.index("]")], m.split("] ", 1)[1]
    today = kind == "lowering_drift"
    out.append({"kind": kind, "subject": "today" if today else "reader", "message": message,
                "reader": None if today else message.split(" ", 1)[0],
                "detail": message.split(": ", 1)[1] if today else None})
  return out


def run_report(today: str = RUN_DATES[-1], entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
  """One replay run of the entries above (or ``entries``), with its summary and coverage."""
  entries = sorted(copy.deepcopy(_entries() if entries is None else entries),
                   key=lambda e: e["entry_id"])
  covered = sorted({t for e in entries for t in e["targets"]})
  required = sorted({"lapack_spotrf_ffi", "lapack_dpotrf_ffi", "lapack_ssyevd_ffi",
                     "lapack_sgesdd_ffi", "lapack_sgeqrf_ffi", "lapack_sorgqr_ffi",
                     "lapack_strsm_ffi"})
  counts = {s: sum(e["status"] == s for e in entries) for s in ("pass", "drift", "warn", "xfail", "fail")}
  days = (datetime.date.fromisoformat(today) - datetime.date(2026, 10, 1)).days
  for e in entries:
    e["days_to_expiry"] = 180 - days
  return {
      "format": REPORT_FORMAT, "mode": "replay", "platform": "cpu", "today": today, "compat_window_days": 180,
      "strict": False, "readers": ["jaxport", "jax"], "producer": "jaxport",
      "versions": {"jax": "0.10.2", "jaxlib": "0.10.2", "jaxport": "0.1.0", "numpy": "2.0.0"},
      "entries": entries,
      "targets": {"required": required, "reachable": covered, "covered": covered,
                  "missing_required": sorted(set(required) - set(covered)),
                  "missing_reachable": []},
      "skips": [{"what": e["entry_id"], "why": "current lowering not checked: the case is no "
                                               "longer registered"}
                for e in entries if e["expected_failure"]],
      "drift": [{"entry_id": e["entry_id"], "kind": m[1:m.index("]")], "detail": m.split("] ", 1)[1]}
                for e in entries for m in e["messages"] if m[1:m.index("]")] in DRIFT_KINDS],
      "recorded": [], "session_failures": [], "session_warnings": [],
      "summary": {**counts, "present": len(entries), "replayed": len(entries), "written": 0,
                  "unchanged": 0, "conflict": 0, "error": 0},
      "shard": None, "lowering_only_targets": {}, "jax_corpus": None, "replay_hosts": [],
  }


def history() -> list[dict[str, Any]]:
  """Four runs, oldest first: QR passes until the third run, SVD warns from the last one."""
  runs = []
  for i, today in enumerate(RUN_DATES):
    entries = _entries()
    for e in entries:
      if e["case_id"] == "qr_f32" and i < 2:
        e.update(status="pass", kinds=[], messages=[], findings=[], release=_release("0.10.2", "2026-06-17", "pass"))
      if e["case_id"] == "svd_f32" and i < 3:
        e.update(status="pass", kinds=[], messages=[], findings=[])
    runs.append(run_report(today, entries))
  return runs


def without_cache_count(report: dict[str, Any]) -> dict[str, Any]:
  """``report`` (decoded JSON) without the count of executables loaded from the compile cache,
  which says how a run went, not what it found: two runs of one store compare equal without it."""
  out = copy.deepcopy(report)
  out["summary"].pop("from_cache", None)
  return out
