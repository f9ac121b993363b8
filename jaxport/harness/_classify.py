"""Turning a worker's raw findings for one entry into a classified outcome.

Kinds, from worst to mildest:
  ``compatibility_break``  the old entry no longer reads, runs, or computes the
                           recorded results (any reader); golden data that fails
                           verification; a worker crash. Always fails.
  ``export_error``         the case can no longer be exported today. Always fails.
  ``lowering_drift``       today's lowering uses other targets or other operand,
                           result or attribute signatures. Fails lowering-only
                           entries (their signatures are all they promise);
                           otherwise a warning, a failure with ``--strict``.
  ``numerics_change``      today's lowering computes results outside tolerance.
                           A warning, a failure with ``--strict``.
  ``numerics_drift``       results within tolerance but not bitwise equal.
                           Reported only.
  ``upgraded``             the entry failed to run because its custom calls are
                           no longer registered, and ran and matched the
                           recorded outputs after ``jaxport.upgrade`` (the rules
                           applied are in the message). Reported only.
A project whose policy is that a changed function fails (``OnChange.FAIL``, the
default outside jaxport's own repository) fails ``lowering_drift`` and
``numerics_change`` without ``--strict``.
An entry whose breaks the project's expectations table explains (a known
failure of an old producer) is an expected failure (``xfail``).
Staleness (age beyond the compat window, targets no longer emitted) and a
record date after today (``future_date``) are warnings that fail with
``--strict``.
"""

from __future__ import annotations

import datetime
from typing import Any

BREAK = "compatibility_break"
EXPORT_ERROR = "export_error"
LOWERING_DRIFT = "lowering_drift"
NUMERICS_CHANGE = "numerics_change"
NUMERICS_DRIFT = "numerics_drift"
EXPIRED = "expired"
FUTURE_DATE = "future_date"
STALE_TARGET = "stale_target"
UNEXPECTED_PASS = "unexpected_pass"
UPGRADED = "upgraded"

# Verdicts on a lowering-only module's targets against the stable table of its platforms.
TARGET_STABLE = "stable"
TARGET_NOT_STABLE = "not_stable"

ALWAYS_FAIL = (BREAK, EXPORT_ERROR)
STRICT_FAIL = (LOWERING_DRIFT, NUMERICS_CHANGE, EXPIRED, FUTURE_DATE, STALE_TARGET,
               UNEXPECTED_PASS)
# The kinds that say the case's function computes something else today.
CHANGE_KINDS = (LOWERING_DRIFT, NUMERICS_CHANGE)


def _reader_findings(r: dict) -> tuple[list[str], list[str]]:
  """(breaks, drifts) of one reader's replay."""
  name = r.get("reader", "?")
  if r.get("error"):
    refused = f" (upgrade refused: {r['upgrade_refused']})" if r.get("upgrade_refused") else ""
    return [f"{name} reader: {r.get('stage', '?')} failed: {r['error']}{refused}"], []
  if not r.get("ok", False):
    return [f"{name} reader: {p}" for p in r.get("problems") or ["results rejected"]], []
  if r.get("stage") == "compare" and not r.get("exact", True):
    return [], [f"{name} reader: results within tolerance but not bitwise equal "
                f"(max abs err {r.get('max_abs_err', 0.0):.3g})"]
  return [], []


def classify(answer: dict[str, Any], *, entry_id: str, manifest: dict[str, Any],
             today: datetime.date, window_days: int) -> dict[str, Any]:
  """The outcome of one entry: status, kinds found, messages, skips and staleness."""
  record_date = datetime.date.fromisoformat(manifest["record_date"])
  recorded_targets = sorted({s["target"] for s in manifest["custom_call_targets"]})
  out: dict[str, Any] = {
      "entry_id": entry_id,
      "case_id": manifest["case_id"],
      "family": manifest["family"],
      "record_date": manifest["record_date"],
      "days_to_expiry": window_days - (today - record_date).days,
      "lowering_only": manifest["lowering_only"],
      "targets": recorded_targets,
      "current_targets": None,
      "platforms": None,
      "target_verdicts": None,
      "matched_case": None,
      "kinds": [],
      "messages": [],
      "skips": [],
      "replayed": True,
  }
  kinds: list[str] = []
  messages: list[str] = []

  def add(kind: str, message: str) -> None:
    kinds.append(kind)
    messages.append(f"[{kind}] {message}")

  if answer.get("crashed"):
    add(BREAK, f"the worker process died while replaying ({answer.get('why')}, exit code "
               f"{answer.get('returncode')}); its last stderr lines:\n{answer.get('stderr_tail', '')}")
  elif answer.get("golden_error"):
    add(BREAK, f"golden data error: {answer['golden_error']}")
  elif answer.get("error"):
    add(BREAK, f"the harness could not replay the entry: {answer['error']}\n"
               f"{answer.get('traceback', '')}")
  else:
    for r in answer.get("readers", []):
      breaks, drifts = _reader_findings(r)
      for b in breaks:
        add(BREAK, b)
      for d in drifts:
        add(NUMERICS_DRIFT, d)
      up = r.get("upgraded")
      if up and not breaks:
        out["upgrade_rules"] = up["rules"]
        add(UPGRADED, f"{r.get('reader', '?')} reader: ran and matched the recorded outputs after "
                      f"jaxport.upgrade (rules {', '.join(up['rules'])}); before: {up['error_before']}")
    imported = manifest.get("imported_from") is not None
    if manifest["lowering_only"]:
      out["skips"].append("numerics not compared: lowering-only entry (its platform cannot run here)")
      read = next((r for r in answer.get("readers", []) if r.get("target_verdicts") is not None), None)
      if read is not None:
        out["platforms"] = read.get("platforms")
        out["target_verdicts"] = read["target_verdicts"]
        for target, verdict in sorted(read["target_verdicts"].items()):
          if verdict != TARGET_STABLE:
            add(STALE_TARGET, f"target {target} is not in the stable table of "
                              f"{'/'.join(read.get('platforms') or [])} "
                              "(jaxport/custom_calls/stable_targets.json): nothing promises it still works")
    cur = answer.get("current", {})
    if not cur.get("available", False):
      out["skips"].append(f"current lowering not checked: {cur.get('reason', 'unavailable')}")
    elif cur.get("error"):
      add(EXPORT_ERROR, f"the case cannot be exported today: {cur['error']}")
    else:
      out["current_targets"] = cur.get("targets", [])
      out["matched_case"] = cur.get("matched_case")
      # A lowering-only entry promises its signatures; an imported dataset is another
      # function than the case it is compared with, so a difference there is drift.
      against = f" of case {cur['matched_case']}" if cur.get("matched_case") else ""
      for line in cur.get("signature_diff", []):
        add(BREAK if manifest["lowering_only"] and not imported else LOWERING_DRIFT,
            f"current lowering{against}: {line}")
      gone = sorted(set(recorded_targets) - set(cur.get("targets", [])))
      if gone:
        add(STALE_TARGET, f"recorded targets {gone} are no longer emitted by today's lowering; "
                          "record a new entry for the new lowering and keep this one until it expires")
      num = cur.get("numerics")
      if num is not None and not num.get("ok", True):
        for p in num.get("problems", []):
          add(NUMERICS_CHANGE, f"current lowering: {p}")
      elif num is not None and not num.get("exact", True):
        add(NUMERICS_DRIFT, f"current lowering: results within tolerance but not bitwise equal "
                            f"(max abs err {num.get('max_abs_err', 0.0):.3g})")
  if out["days_to_expiry"] < 0:
    add(EXPIRED, f"recorded {manifest['record_date']}, {-out['days_to_expiry']} days past the "
                 f"{window_days}-day compat window; prune it (jaxport prune) once a newer entry "
                 "of the case exists")
  if record_date > today:
    add(FUTURE_DATE, f"recorded {manifest['record_date']}, {(record_date - today).days} days "
                     f"after today ({today}): no recording can come from the future, so the "
                     "record date is wrong (a bad clock or an edited entry) and the entry would "
                     "never expire; record the case again and remove this entry (jaxport prune "
                     "--dated-in-future)")
  out["kinds"] = sorted(set(kinds))
  out["messages"] = messages
  return out


def status(outcome: dict[str, Any], strict: bool, changes_fail: bool = False) -> str:
  """``fail``, ``xfail``, ``warn``, ``drift`` or ``pass`` for an outcome under the given
  strictness; with ``changes_fail``, a changed function fails as well."""
  kinds = set(outcome["kinds"])
  if outcome.get("expected_failure") and not kinds & {EXPORT_ERROR}:
    return "xfail"
  if kinds & set(ALWAYS_FAIL) or (changes_fail and kinds & set(CHANGE_KINDS)):
    return "fail"
  if kinds & set(STRICT_FAIL):
    return "fail" if strict else "warn"
  if NUMERICS_DRIFT in kinds:
    return "drift"
  return "pass"
