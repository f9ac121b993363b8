"""``jaxport audit``: custom-call stability, signature drift and expiry of serialized artifacts.

A target is judged stable when jaxport's table lists it for a platform of the
artifact, or the project's own declarations do (``--stable-targets FILE``, the
format of :class:`jaxport.harness.ProjectTargets`, or the ``jaxport_stable_targets``
of the project that ``--project DIR`` names). A target off both lists
that the artifact's own ``disabled_safety_checks`` allow was exported on
purpose: it is reported as allowed, with what that means, not as a violation.

Audit judges as the replay does (``jaxport.harness._judge``): the same findings for age,
targets, drift and the calling contract (today's export of the case, read back, against the
blob's, with the comparison settings), and the same status rule. An expired entry, one dated after today and a
target nothing promises are warnings that fail under ``--compat-strict``; damaged golden data, a
module that cannot be read and a changed function (under the project's ``on_change = fail``,
the default) fail.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._vocabulary import ALL_TARGETS, TargetVerdict
from jaxport.custom_calls import _registry
from jaxport.errors import (ExpiredEnvelopeError, JaxportError, ModuleCrashError,
                            ModuleMemoryError, ModuleParserError, ModuleTimeoutError)
from jaxport.golden import _signatures
from jaxport.golden._entry import entry_sort_key, read_bounded
from jaxport.golden._entry_id import EntryId
from jaxport.cli._artifacts import Artifact, deserialize
from jaxport.cli._parser import InProcess
from jaxport.cli._relower import Relowerer
from jaxport.export._checks import disabled_targets
from jaxport.harness._worker import _calling
from jaxport.golden import _soundness
from jaxport.harness._judge import _age, _targets
from jaxport.harness._judge._artifact import ArtifactFindings, audit_policy
from jaxport.harness._project import ProjectTargets
from jaxport.harness._controller._update import newest_entries
from jaxport.releases import MeasuredRuns
from jaxport.releases import _features as artifact_runs_on
from jaxport.upgrades import upgrade_envelope

logger = logging.getLogger(__name__)

def _own(declared: ProjectTargets | None, platforms: list[str]) -> frozenset[str]:
  """The targets the project declares for any of ``platforms``: it registers them itself."""
  if declared is None:
    return frozenset()
  return frozenset(t for p in platforms for t in declared.stable(p))


def target_report(target: str, platforms: list[str], declared: ProjectTargets | None = None,
                  allowed: frozenset[str] = frozenset()) -> dict[str, Any]:
  """Stability of ``target`` on each of ``platforms`` (the judge's ``target_statuses``): ok
  when jaxport's table or the project's ``declared`` targets list it on one of them, or the
  artifact's ``allowed`` targets (those its ``disabled_safety_checks`` allow) include it."""
  statuses = _targets.target_statuses(target, platforms, declared, allowed)
  verdict = _targets.target_verdict(statuses)
  report = {"target": target, "status_by_platform": {p: str(v) for p, v in statuses.items()},
            "ok": verdict is not TargetVerdict.NOT_STABLE}
  unstable = _registry.deliberately_unstable()
  if target in unstable:
    report["reason"] = unstable[target]
  if verdict is TargetVerdict.ALLOWED_BY_DISABLED_CHECKS:
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
                   declared: ProjectTargets | None = None, reader: Any = None,
                   strict: bool = False, changes_fail: bool = True,
                   newest: bool = True, measured: MeasuredRuns | None = None,
                   current: Mapping[str, Any] | None = None) -> dict[str, Any]:
  """The audit record of one artifact: targets, drift, expiry, its findings and the status
  the judge gives them, with problems (what fails it) and warnings; ``declared``: the
  targets the project guarantees, stable besides jaxport's table; ``reader``: what reads the
  module (the command's module parser child, ``cli._parser``; default: this process);
  ``newest``: the entry is its case's newest among those audited (an older one's drift only
  warns, as in the replay); ``measured``: the project's replays under other releases, which
  take precedence over the release table in the entry's runs_on; ``current``: each case's
  newest entry recorded by the installed jax, by case key (:func:`current_jax_entries`), the
  evidence that another release's lowering difference is jax's. A module that crashes or
  hangs the parser is a problem of this artifact, typed in ``parser_failure``."""
  reader = InProcess() if reader is None else reader
  found = ArtifactFindings()
  rec: dict[str, Any] = {"artifact": art.label, "kind": "entry" if art.entry else "blob",
                         "path": str(art.path)}
  sigs = None
  exp = None
  platforms: list[str] = []
  allowed: frozenset[str] = frozenset()
  manifest = None
  data_errors: list[dict[str, Any]] = []
  policy = audit_policy(strict, changes_fail, newest)
  if art.problem is not None:
    found.damaged(art.problem)
    rec.update(kind="store folder", platforms=[], custom_call_targets=[],
               drift={"checked": False, "reason": "not a golden entry"},
               golden_data_errors=[])
    return {**rec, **found.judged(policy).to_json()}
  if relowerer is not None:
    relowerer.load()
  if art.entry is not None:
    try:
      # Verified once; every read below is of these very bytes.
      snapshot = art.entry.snapshot()
      manifest = snapshot.manifest
    except JaxportError as e:
      found.damaged(str(e))
    if manifest is not None:
      platforms = [manifest.platform]
      # What the manifest says, until the module itself is read: stability is judged from
      # the module's own custom calls, which the manifest must match.
      sigs = manifest.custom_call_targets
      try:
        # The platforms the module was lowered for; the entry's platform is the
        # host that records and replays it (lowering-only entries differ).
        blob = snapshot.blob()
        exp = _read(blob, found)
        platforms = list(exp.platforms)
        allowed = disabled_targets(exp.disabled_safety_checks)
        sigs = reader.signatures(bytes(exp.mlir_module_serialized), art.label)
        runs = () if measured is None or art.entry is None else measured.of(
            str(art.entry.entry_id), manifest.files.get("exported.bin"))
        rec.update(reader.runs_on_record(blob, manifest, art.label, _own(declared, platforms),
                                         runs).to_json())
      except (JaxportError, NotImplementedError) as e:
        _note_parser_failure(rec, e)
        found.unreadable(f"cannot deserialize exported.bin: {type(e).__name__}: {e}")
      else:
        # Golden verification of the entry as read, as the replay's worker verifies it.
        disagreement = _soundness.manifest_disagreement(manifest.custom_call_targets, sigs)
        if disagreement is not None:
          data_errors.append(found.disagreement(disagreement))
      rec["host_platform"] = manifest.platform
      rec["record_date"] = manifest.record_date.isoformat()
      rec["producer_jax"] = manifest.producer.jax
      days_left = _age.days_to_expiry(manifest.record_date, today, window_days)
      rec["days_to_expiry"] = days_left
      found.aged(manifest.record_date, today, window_days)
      if manifest.record_date <= today and 0 <= days_left < _age.SOON_DAYS:
        found.notes.append(f"expires in {days_left} days (window {window_days} days)")
      vacuous = _vacuous_comparison(snapshot, manifest)
      if vacuous is not None:
        found.golden([vacuous])
  else:
    try:
      blob = read_bounded(art.path, str(art.path), "MAX_BLOB_BYTES")
      exp = _read(blob, found)
      platforms = list(exp.platforms)
      allowed = disabled_targets(exp.disabled_safety_checks)
      sigs = reader.signatures(bytes(exp.mlir_module_serialized), art.label)
      rec["days_to_expiry"] = None
      rec.update(reader.runs_on_record(blob, None, art.label,
                                       _own(declared, platforms)).to_json())
    except (JaxportError, NotImplementedError, OSError) as e:
      _note_parser_failure(rec, e)
      found.unreadable(f"cannot read the blob: {type(e).__name__}: {e}")
  rec["platforms"] = platforms
  targets = sorted({s.target for s in sigs}) if sigs is not None else []
  rec["custom_call_targets"] = [target_report(t, platforms, declared, allowed) for t in targets]
  for t in rec["custom_call_targets"]:
    if t.get("explanation"):
      found.notes.append(f"custom-call target {t['target']}: {t['explanation']}")
    found.target(t["target"], platforms, t["ok"])
    if not t["ok"]:
      found.notes.append(f"custom-call target {t['target']}: if it is the project's own target, "
                         "list it in a stable-targets file (--stable-targets FILE)")
  rec["drift"] = _drift(manifest, relowerer, found,
                        _current_lowering(art, current or {}) if manifest is not None else None)
  if manifest is not None and exp is not None:
    _contract(manifest, exp, relowerer, found, newest, reader, art.label)
  # The problems that are damaged or forged golden data, typed (each also in ``problems``).
  rec["golden_data_errors"] = data_errors
  return {**rec, **found.judged(policy).to_json()}


def _read(blob: bytes, found: ArtifactFindings) -> Any:
  """The Exported in ``blob``; an envelope the installed jax refuses as expired is read as the
  replay reads it, after ``jaxport.upgrade_envelope`` rewrote it (a note says so)."""
  try:
    return deserialize(blob)
  except ExpiredEnvelopeError as e:
    exp = deserialize(upgrade_envelope(blob))
    found.notes.append(f"the envelope was refused as expired ({str(e).splitlines()[0]}); read "
                       "after jaxport.upgrade_envelope rewrote it, as the replay reads it")
    return exp


def newest_of(artifacts: list[Artifact]) -> set[str]:
  """The labels of the artifacts that are their case's newest entry among those audited (and
  of every bare blob): an older entry's drift from today's function only warns."""
  entries = [a.entry.entry_id for a in artifacts if a.entry is not None]
  newest = set(newest_entries(entries).values())
  return {a.label for a in artifacts if a.entry is None or a.entry.entry_id in newest}


def _vacuous_comparison(entry: Any, manifest: Any) -> str | None:
  """Golden verification's vacuous-comparison rule (``jaxport.golden._soundness``) on the
  entry's recorded outputs; outputs that do not read are the entry's verification problem,
  reported there."""
  try:
    expected = entry.expected_outputs()
  except (JaxportError, ValueError, TypeError):
    return None
  return _soundness.vacuous_comparison(manifest, expected)


# The kind of ``parser_failure`` of each error of the module parser child.
_PARSER_FAILURES = ((ModuleCrashError, "crash"), (ModuleTimeoutError, "timeout"),
                    (ModuleMemoryError, "memory"), (ModuleParserError, "parser"))


def _note_parser_failure(rec: dict[str, Any], e: BaseException) -> None:
  """Record a crash, time-out or memory kill of the module parser as a typed field."""
  kind = next((k for cls, k in _PARSER_FAILURES if isinstance(e, cls)), None)
  if kind is not None:
    rec["parser_failure"] = {"kind": kind, "error": type(e).__name__, "message": str(e)}


# How audit leads a difference of today's custom-call signatures from the recorded ones.
LEAD = "signature drift against today's lowering"


def current_jax_entries(artifacts: list[Artifact], consumer: str | None) -> dict[str, Any]:
  """Each case's newest entry among those audited that ``consumer`` (the installed jax)
  recorded, by case key (``platform/family/case``)."""
  mine: dict[str, Any] = {}
  for a in artifacts:
    if a.entry is None:
      continue
    entry_id = a.entry.entry_id
    if entry_id.producer != consumer:
      continue
    held = mine.get(entry_id.case_key)
    if held is None or entry_sort_key(held.entry_id) < entry_sort_key(a.entry.entry_id):
      mine[entry_id.case_key] = a.entry
  return mine


def _current_lowering(art: Artifact, current: Mapping[str, Any]) -> tuple | None:
  """The custom-call signatures of the artifact's case's entry recorded by the installed jax
  (None: none, or it cannot be read: its own audit says why)."""
  entry = current.get(art.entry.entry_id.case_key) if art.entry else None
  if entry is None:
    return None
  try:
    return tuple(entry.manifest.custom_call_targets)
  except JaxportError:
    return None


def _drift(manifest: Any, relowerer: Relowerer | None, found: ArtifactFindings,
           current: tuple | None = None) -> dict[str, Any]:
  """Today's custom-call signatures of the entry's case against the recorded ones, each
  difference judged by the judge's drift rule (``_judge._drift``, with ``current``, the
  signatures of the case's entry recorded by the installed jax, as its evidence); a change of
  partitioner metadata only is a note."""
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
    current_sigs = relowerer.signatures(case)
  except Exception as e:  # Report and go on: one case's lowering must not hide the others.
    msg = f"re-lowering case {manifest.case_id} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    found.notes.append(msg)
    return {"checked": False, "reason": msg}
  changes = _signatures.drift(recorded, current_sigs)
  consumer = installed_jax_version()
  lines = [str(c) for c in changes]
  for c in changes:
    if c.metadata_only:
      found.notes.append(f"{LEAD}: {c} (partitioner metadata only)")
    else:
      found.lowering_difference(manifest, consumer, LEAD, str(c), current, lines)
  return {"checked": True, "differences": [str(c) for c in changes]}


def _contract(manifest: Any, exp: Any, relowerer: Relowerer | None, found: ArtifactFindings,
              newest: bool, reader: Any, label: str) -> None:
  """The entry's calling contract (as read from its blob) against today's export of its case,
  with its comparison settings, judged as the replay judges it (``_judge._drift``). Nothing
  is said where drift cannot be checked (the drift record says why)."""
  if relowerer is None or relowerer.unavailable or manifest.imported_from is not None:
    return
  case = relowerer.case(manifest.case_id)
  if case is None:
    return
  try:
    # The entry's module is parsed by the command's module parser (its donated arguments).
    donated = reader.donations(bytes(exp.mlir_module_serialized), label)
    diff = _calling.diff(_calling.contract_of(exp, donated), relowerer.contract(case))
    outputs = [(t.path, t.dtype) for t in manifest.tolerances or ()]
    settings = _calling.comparison_change(manifest, relowerer.comparison(case, outputs), case,
                                          relowerer.checkers)
  except Exception as e:  # Report and go on: one case's export must not hide the others.
    found.notes.append(f"calling contract of case {manifest.case_id} not compared: "
                       f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return
  found.contract(manifest, installed_jax_version(), diff.by_function + settings, diff.by_jax,
                 newest, diff.platforms_added, diff.donation_removed)


def format_text(records: list[dict[str, Any]], window_days: int) -> str:
  out = []
  for r in records:
    # The judge's status of the artifact, after the line's lead.
    out.append(("ok      " if r["ok"] else "PROBLEM ") + f"{r['artifact']}  [{r['status']}]")
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
