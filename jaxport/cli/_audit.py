"""``jaxport audit``: custom-call stability, signature drift and expiry of serialized artifacts.

A target is judged stable when jaxport's table lists it for a platform of the
artifact, or the project's own declarations do (``--stable-targets FILE``, the
format of :class:`jaxport.harness.ProjectTargets`, or the ``jaxport_stable_targets``
of the project that ``--project DIR`` names). A target off both lists
that the artifact's own ``disabled_safety_checks`` allow was exported on
purpose: it is reported as allowed, with what that means, not as a violation.
"""

from __future__ import annotations

import datetime
import importlib.metadata as md
import logging
from typing import Any

from jaxport.custom_calls import _registry
from jaxport.errors import (JaxportError, ModuleCrashError, ModuleMemoryError, ModuleParserError,
                            ModuleTimeoutError)
from jaxport.golden import _signatures
from jaxport.golden._store import read_bounded
from jaxport.cli._artifacts import Artifact, deserialize
from jaxport.cli._parser import InProcess
from jaxport.cli._relower import Relowerer
from jaxport.export._checks import ALL_TARGETS, disabled_targets
from jaxport.harness._project import ProjectTargets
from jaxport.releases import _features as artifact_runs_on

logger = logging.getLogger(__name__)

# Below this many days left, an entry is reported as expiring soon (a warning).
SOON_DAYS = 30

# A target's status on one platform of an artifact.
STABLE = "stable"
DECLARED = "declared stable by the project"
ALLOWED = "allowed by the artifact's disabled_safety_checks"
DELIBERATELY_UNSTABLE = "deliberately unstable"
NO_GUARANTEE = "no compatibility guarantee"
_OK = (STABLE, DECLARED, ALLOWED)
# The kind of a problem that is damaged or forged golden data (the harness's finding kind).
GOLDEN_DATA_ERROR = "golden_data_error"


def _own(declared: ProjectTargets | None, platforms: list[str]) -> frozenset[str]:
  """The targets the project declares for any of ``platforms``: it registers them itself."""
  if declared is None:
    return frozenset()
  return frozenset(t for p in platforms for t in declared.stable(p))


def target_report(target: str, platforms: list[str], declared: ProjectTargets | None = None,
                  allowed: frozenset[str] = frozenset()) -> dict[str, Any]:
  """Stability of ``target`` on each of ``platforms``: ok when jaxport's table or the project's
  ``declared`` targets list it there or anywhere, or the artifact's ``allowed`` targets (those
  its ``disabled_safety_checks`` allow) include it."""
  declared = declared or ProjectTargets()
  anywhere = target in _registry.stable_targets(_registry.ANY_PLATFORM)
  unstable = _registry.deliberately_unstable()
  by_platform = {}
  for p in platforms:
    try:
      stable = anywhere or target in _registry.stable_targets(p)
    except JaxportError:
      stable = anywhere
    if stable:
      by_platform[p] = STABLE
    elif target in declared.stable(p):
      by_platform[p] = DECLARED
    elif target in allowed or ALL_TARGETS in allowed:
      by_platform[p] = ALLOWED
    else:
      by_platform[p] = DELIBERATELY_UNSTABLE if target in unstable else NO_GUARANTEE
  ok = any(v in _OK for v in by_platform.values())
  report = {"target": target, "status_by_platform": by_platform, "ok": ok}
  if target in unstable:
    report["reason"] = unstable[target]
  if ok and not any(v in (STABLE, DECLARED) for v in by_platform.values()):
    check = ALL_TARGETS if target not in allowed else target
    report["explanation"] = (
        f"neither jax's stable table nor the project's declarations list {target}, so nothing "
        "promises that a newer jaxlib still runs it; the artifact was exported with "
        f"DisabledSafetyCheck.custom_call({check!r}), so its producer chose to ship it (a "
        "project's own FFI target, say) and answers for it. To vouch for it, list it in a "
        "stable-targets file and pass --stable-targets FILE.")
  return report


def audit_artifact(art: Artifact, *, today: datetime.date, window_days: int,
                   relowerer: Relowerer | None,
                   declared: ProjectTargets | None = None, reader: Any = None) -> dict[str, Any]:
  """The audit record of one artifact: targets, drift, expiry, problems and warnings;
  ``declared``: the targets the project guarantees, stable besides jaxport's table;
  ``reader``: what reads the module (the command's module parser child, ``cli._parser``;
  default: this process). A module that crashes or hangs the parser is a problem of this
  artifact, typed in ``parser_failure``."""
  reader = InProcess() if reader is None else reader
  problems: list[str] = []
  warnings: list[str] = []
  rec: dict[str, Any] = {"artifact": art.label, "kind": "entry" if art.entry else "blob",
                         "path": str(art.path)}
  sigs = None
  platforms: list[str] = []
  allowed: frozenset[str] = frozenset()
  manifest = None
  data_errors: list[dict[str, Any]] = []
  if art.problem is not None:
    rec.update(kind="store folder", platforms=[], custom_call_targets=[],
               drift={"checked": False, "reason": "not a golden entry"},
               problems=[art.problem], warnings=[], golden_data_errors=[], ok=False)
    return rec
  if relowerer is not None:
    relowerer.load()
  if art.entry is not None:
    try:
      art.entry.verify()
      manifest = art.entry.manifest
    except JaxportError as e:
      problems.append(str(e))
    if manifest is not None:
      platforms = [manifest.platform]
      # What the manifest says, until the module itself is read: stability is judged from
      # the module's own custom calls, which the manifest must match.
      sigs = manifest.custom_call_targets
      try:
        # The platforms the module was lowered for; the entry's platform is the
        # host that records and replays it (lowering-only entries differ).
        exp = deserialize(art.entry.blob())
        platforms = list(exp.platforms)
        allowed = disabled_targets(exp.disabled_safety_checks)
        sigs = reader.signatures(bytes(exp.mlir_module_serialized), art.label)
        rec.update(reader.runs_on_record(art.entry.blob(), manifest, art.label,
                                         _own(declared, platforms)))
      except (JaxportError, NotImplementedError) as e:
        _note_parser_failure(rec, e)
        problems.append(f"cannot deserialize exported.bin: {type(e).__name__}: {e}")
      else:
        mismatch = _manifest_mismatch(manifest.custom_call_targets, sigs)
        if mismatch is not None:
          problems.append(mismatch["message"])
          data_errors.append(mismatch)
      rec["host_platform"] = manifest.platform
      rec["record_date"] = manifest.record_date.isoformat()
      rec["producer_jax"] = manifest.producer.jax
      age = (today - manifest.record_date).days
      days_left = window_days - age
      rec["days_to_expiry"] = days_left
      if age < 0:
        problems.append(f"dated in the future: recorded {manifest.record_date}, {-age} days "
                        f"after {today}; the record date is wrong and the entry would never "
                        "expire; record it again and remove this one (jaxport prune "
                        "--dated-in-future)")
      elif days_left < 0:
        problems.append(f"expired {-days_left} days ago: recorded {manifest.record_date} is "
                        f"{age} days before {today}, beyond the {window_days}-day window; "
                        "re-record it (jaxport record) and prune the old one (jaxport prune)")
      elif days_left < SOON_DAYS:
        warnings.append(f"expires in {days_left} days (window {window_days} days)")
      vacuous = _vacuous_comparison(art.entry, manifest)
      if vacuous is not None:
        problems.append(vacuous)
  else:
    try:
      blob = read_bounded(art.path, str(art.path), "MAX_BLOB_BYTES")
      exp = deserialize(blob)
      platforms = list(exp.platforms)
      allowed = disabled_targets(exp.disabled_safety_checks)
      sigs = reader.signatures(bytes(exp.mlir_module_serialized), art.label)
      rec["days_to_expiry"] = None
      rec.update(reader.runs_on_record(blob, None, art.label, _own(declared, platforms)))
    except (JaxportError, NotImplementedError, OSError) as e:
      _note_parser_failure(rec, e)
      problems.append(f"cannot read the blob: {type(e).__name__}: {e}")
  rec["platforms"] = platforms
  targets = sorted({s.target for s in sigs}) if sigs is not None else []
  rec["custom_call_targets"] = [target_report(t, platforms, declared, allowed) for t in targets]
  for t in rec["custom_call_targets"]:
    if t.get("explanation"):
      warnings.append(f"custom-call target {t['target']}: {t['explanation']}")
    if not t["ok"]:
      where = ", ".join(f"{p}: {s}" for p, s in t["status_by_platform"].items())
      problems.append(f"custom-call target {t['target']} is not stable on any platform of the "
                      f"artifact ({where}); a newer jaxlib may remove or change it. If it is "
                      "the project's own target, list it in a stable-targets file "
                      "(--stable-targets FILE)")
  rec["drift"] = _drift(art, manifest, relowerer, warnings, problems)
  rec["problems"] = problems
  rec["warnings"] = warnings
  # The problems that are damaged or forged golden data, typed (each also in ``problems``).
  rec["golden_data_errors"] = data_errors
  rec["ok"] = not problems
  return rec


def _vacuous_comparison(entry: Any, manifest: Any) -> str | None:
  """Why the entry's comparison would pass any outputs, or None: checker ``none`` on an entry
  that is run, a relative tolerance of 1 or more, or an absolute one as large as the expected
  outputs themselves. The manifest's digest is unkeyed (whoever edits the store can sign it
  again), so this is what audit checks of a comparison's worth."""
  if manifest.lowering_only:
    return None
  c = manifest.comparison
  fix = "; record the case again with a checker and tolerances that can fail"
  if c.mode == "none":
    return ("the comparison is vacuous: checker 'none' on an entry that is run passes any "
            "outputs" + fix)
  if c.rtol >= 1:
    return (f"the comparison is vacuous: rtol {c.rtol:g} lets an output differ from the "
            "recorded one by all of its size" + fix)
  try:
    import numpy as np
    floats = [np.abs(np.asarray(x, dtype=np.float64)) for x in entry.expected_outputs()
              if np.asarray(x).dtype.kind in "fc" and np.asarray(x).size]
  except (JaxportError, ValueError, TypeError):
    return None  # unreadable outputs are the entry's verification problem, reported there
  magnitude = max((float(x.max()) for x in floats), default=0.0)
  if c.atol > 0 and c.atol >= max(magnitude, 1.0 if magnitude == 0 else 0.0):
    return (f"the comparison is vacuous: atol {c.atol:g} is as large as the recorded outputs "
            f"themselves (largest {magnitude:g}), so outputs of that size all pass" + fix)
  return None


# The kind of ``parser_failure`` of each error of the module parser child.
_PARSER_FAILURES = ((ModuleCrashError, "crash"), (ModuleTimeoutError, "timeout"),
                    (ModuleMemoryError, "memory"), (ModuleParserError, "parser"))


def _note_parser_failure(rec: dict[str, Any], e: BaseException) -> None:
  """Record a crash, time-out or memory kill of the module parser as a typed field."""
  kind = next((k for cls, k in _PARSER_FAILURES if isinstance(e, cls)), None)
  if kind is not None:
    rec["parser_failure"] = {"kind": kind, "error": type(e).__name__, "message": str(e)}


def _manifest_mismatch(recorded: Any, module: tuple[Any, ...]) -> dict[str, Any] | None:
  """A golden-data-error record when the manifest's ``custom_call_targets`` (``recorded``)
  are not the signatures of the entry's module (``module``); None when they agree."""
  recorded = tuple(sorted(set(recorded), key=_signatures.sort_key))
  if set(recorded) == set(module):
    return None
  changes = _signatures.drift(recorded, module)
  rec_targets = sorted({s.target for s in recorded})
  mod_targets = sorted({s.target for s in module})
  details = "; ".join(str(c).replace("the current lowering", "the module")
                      for c in changes) or "the signatures differ"
  message = (f"{GOLDEN_DATA_ERROR}: manifest.json's custom_call_targets disagree with the "
             f"module in exported.bin: the manifest lists {rec_targets}, the module calls "
             f"{mod_targets} ({details}); stability is judged from the module. The manifest "
             "was edited or written for another module: re-record the entry (jaxport record) "
             "and remove this one")
  return {"kind": GOLDEN_DATA_ERROR, "message": message, "manifest_targets": rec_targets,
          "module_targets": mod_targets}


def _drift(art, manifest, relowerer, warnings, problems) -> dict[str, Any]:
  if manifest is None:
    return {"checked": False, "reason": "only golden entries record signatures"}
  recorded = manifest.custom_call_targets
  if not any(s.operand_types or s.result_types for s in recorded):
    return {"checked": False, "reason": "the manifest records no signatures"}
  if relowerer is None:
    return {"checked": False, "reason": "disabled (--no-drift)"}
  case = relowerer.case(manifest.case_id)
  if relowerer.unavailable:
    return {"checked": False, "reason": relowerer.unavailable}
  if case is None:
    return {"checked": False,
            "reason": f"no case {manifest.case_id!r} in {relowerer.source}"}
  try:
    current = relowerer.signatures(case)
  except Exception as e:  # Report and go on: one case's lowering must not hide the others.
    msg = f"re-lowering case {manifest.case_id} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    warnings.append(msg)
    return {"checked": False, "reason": msg}
  changes = _signatures.drift(recorded, current)
  # An entry another jax release produced is expected to lower differently today
  # (the harness reports that as producer drift, not a failure).
  other_release = manifest.producer.jax not in (None, md.version("jax"))
  for c in changes:
    (warnings if c.metadata_only or other_release else problems).append(
        f"signature drift against today's lowering: {c}"
        + (" (partitioner metadata only)" if c.metadata_only else "")
        + (f" (recorded by jax {manifest.producer.jax}, lowered today with jax "
           f"{md.version('jax')})" if other_release and not c.metadata_only else ""))
  return {"checked": True, "differences": [str(c) for c in changes]}


def format_text(records: list[dict[str, Any]], window_days: int) -> str:
  out = []
  for r in records:
    out.append(("ok      " if r["ok"] else "PROBLEM ") + r["artifact"])
    if r["platforms"]:
      line = f"  platforms: {', '.join(r['platforms'])}"
      if r.get("host_platform") and r["platforms"] != [r["host_platform"]]:
        line += f" (recorded on a {r['host_platform']} host)"
      if r.get("record_date"):
        line += f"; recorded {r['record_date']} with jax {r.get('producer_jax') or 'unknown'}"
      if r.get("days_to_expiry") is not None:
        d = r["days_to_expiry"]
        line += (f"; expires in {d} days" if d >= 0 else f"; expired {-d} days ago") + \
                f" ({window_days}-day window)"
      out.append(line)
    for t in r["custom_call_targets"]:
      status = ", ".join(f"{p}: {s}" for p, s in t["status_by_platform"].items())
      out.append(f"  target {t['target']}: {status}")
    if not r["custom_call_targets"] and r["platforms"]:
      out.append("  no custom-call targets")
    if "runs_on" in r:
      out.extend(artifact_runs_on.runs_on_lines(r))
    d = r["drift"]
    if d["checked"]:
      out.append("  drift: none" if not d["differences"] else "  drift: see problems and warnings")
    else:
      out.append(f"  drift: not checked ({d['reason']})")
    out.extend(f"  warning: {w}" for w in r["warnings"])
    out.extend(f"  problem: {p}" for p in r["problems"])
  bad = sum(not r["ok"] for r in records)
  out.append(f"{len(records)} artifact(s) audited, {bad} with problems.")
  return "\n".join(out) + "\n"
