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
from collections.abc import Callable, Mapping
from typing import Any

from jaxport._jaxcompat._version import installed_jax_version
from jaxport._vocabulary import ALL_TARGETS, TargetVerdict
from jaxport.custom_calls import _registry
from jaxport.errors import (JaxportError, ModuleCrashError, ModuleMemoryError, ModuleParserError,
                            ModuleTimeoutError, UnregisteredTypeError)
from jaxport.golden import _signatures
from jaxport.golden._entry import entry_sort_key, read_bounded
from jaxport.golden._manifest import is_imported_artifact
from jaxport.cli import _artifact_read
from jaxport.cli._artifacts import Artifact
from jaxport.cli._audit_run import ArtifactRun
from jaxport.cli._parser import InProcess
from jaxport.cli._relower import CasesInChild, Relowerer, Today
from jaxport.export._checks import disabled_targets
from jaxport.harness._worker import _calling
from jaxport.golden import _soundness
from jaxport.harness._judge import _age, _targets
from jaxport.harness._judge._artifact import ArtifactFindings, audit_policy
from jaxport.harness._project import ProjectTargets
from jaxport.harness._controller._update import newest_entries
from jaxport.releases import MeasuredRuns
from jaxport.releases._measured import serves_on_tf_json, serves_on_tf_lines
from jaxport.releases import _features as artifact_runs_on
from jaxport.releases._dates import window_exit
from jaxport.harness._protocol._answers import EnvelopeRead

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
                   relowerer: Relowerer | CasesInChild | None,
                   declared: ProjectTargets | None = None, reader: Any = None,
                   strict: bool = False, changes_fail: bool = True,
                   newest: bool = True, measured: MeasuredRuns | None = None,
                   current: Mapping[str, Any] | None = None,
                   shipped_expired_fails: bool = True,
                   run: ArtifactRun | None = None,
                   load_types: Callable[[], bool] | None = None) -> dict[str, Any]:
  """The audit record of one artifact: its versions (envelope layout, calling convention, the
  jax that wrote it), whether the running jax reads it as it is, when it leaves that jax's
  window, targets, drift, expiry, its findings and the status the judge gives them, with
  problems (what fails it) and warnings; ``declared``: the targets the project guarantees,
  stable besides jaxport's table; ``reader``: what reads the module (the command's module
  parser child, ``cli._parser``; default: this process); ``newest``: the entry is its case's
  newest among those audited (an older one's drift only warns, as in the replay);
  ``measured``: the project's replays under other releases, which take precedence over the
  release table in the entry's runs_on, and what TensorFlow releases measured of it; ``current``: each case's newest entry recorded by the
  installed jax, by case key (:func:`current_jax_entries`), the evidence that another
  release's lowering difference is jax's; ``shipped_expired_fails``: a shipped artifact the
  running jax refuses as it is fails (else warns, ``jaxport_shipped_expired = "warn"``);
  ``run``: what ``--run`` made of it (its sample inputs run, the outputs judged);
  ``load_types``: imports the project's case modules here, for an entry of the project's own
  pytree or effect types (True when there are any), only when one needs them. The
  blob is read once (:func:`_artifact_read.read_artifact`). A module that crashes or hangs the
  parser is a problem of this artifact, typed in ``parser_failure``."""
  reader = InProcess() if reader is None else reader
  found = ArtifactFindings()
  rec: dict[str, Any] = {"artifact": art.label, "kind": "entry" if art.entry else "blob",
                         "path": str(art.path)}
  sigs = None
  read = None
  platforms: list[str] = []
  allowed: frozenset[str] = frozenset()
  manifest = None
  record_date = None
  data_errors: list[dict[str, Any]] = []
  policy = audit_policy(strict, changes_fail, newest)
  consumer = installed_jax_version()
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
      record_date = manifest.record_date
      # What the manifest says, until the module itself is read: stability is judged from
      # the module's own custom calls, which the manifest must match.
      sigs = manifest.custom_call_targets
      try:
        # The platforms the module was lowered for; the entry's platform is the
        # host that records and replays it (lowering-only entries differ).
        read = _read_with_types(snapshot.blob(), reader, art.label, load_types)
      except (JaxportError, NotImplementedError) as e:
        _note_parser_failure(rec, e)
        found.unreadable(f"cannot deserialize exported.bin: {type(e).__name__}: {e}")
      else:
        sigs = read.signatures
        sha = manifest.files.get("exported.bin")
        runs = () if measured is None else measured.of(art.entry.entry_id, sha)
        rec.update(serves_on_tf_json(() if measured is None
                                     else measured.served_by(art.entry.entry_id, sha)))
        rec.update(read.runs_on(manifest, reader, art.label,
                                _own(declared, list(read.exported.platforms)), runs).to_json())
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
      read = _read_with_types(blob, reader, art.label, load_types)
      sigs = read.signatures
      rec["days_to_expiry"] = None
      rec.update(read.runs_on(None, reader, art.label,
                              _own(declared, list(read.exported.platforms))).to_json())
    except (JaxportError, NotImplementedError, OSError) as e:
      _note_parser_failure(rec, e)
      found.unreadable(f"cannot read the blob: {type(e).__name__}: {e}")
  if read is not None:
    platforms = list(read.exported.platforms)
    allowed = disabled_targets(read.exported.disabled_safety_checks)
    rec.update(read.envelope_json())
    if read.producer is None and manifest is not None:
      rec["writing_jax"] = manifest.producer.jax
    _judge_loading(read, manifest, consumer, found, shipped_expired_fails)
    rec["window_exit"] = window_exit(record_date, consumer).to_json()
  if run is not None:
    if run.run is not None:
      found.ran(run.run)
    rec["run"] = run.to_json()
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
  today = _today(manifest, read, relowerer, reader, art.label)
  rec["drift"] = _drift(manifest, relowerer, today, found,
                        _current_lowering(art, current or {}) if manifest is not None else None)
  if manifest is not None and read is not None:
    _contract(manifest, today, found, newest)
  # The problems that are damaged or forged golden data, typed (each also in ``problems``).
  rec["golden_data_errors"] = data_errors
  return {**rec, **found.judged(policy).to_json()}


def _read_with_types(blob: bytes, reader: Any, label: str,
                     load_types: Callable[[], bool] | None) -> _artifact_read.ArtifactRead:
  """The artifact read once; read again after the project's case modules were imported here
  when it uses a pytree or effect type of the project's that is not registered."""
  try:
    return _artifact_read.read_artifact(blob, reader, label)
  except UnregisteredTypeError:
    if load_types is None or not load_types():
      raise
    return _artifact_read.read_artifact(blob, reader, label)


def _judge_loading(read: _artifact_read.ArtifactRead, manifest: Any, consumer: str,
                   found: ArtifactFindings, shipped_expired_fails: bool) -> None:
  """What the running jax makes of the bytes as they are, judged: a bare blob or an imported
  entry is judged as shipped, a recorded entry as the replay judges it (``upgraded``)."""
  loading = read.loading
  if loading.refusal is None:
    return
  shipped = manifest is None or is_imported_artifact(manifest)
  r = loading.rewrite
  env = None if r is None else EnvelopeRead(r.layout, r.from_version, r.to_version, r.reason,
                                            r.producer, loading.refusal)
  found.refused_as_is(env, consumer, shipped=shipped, shipped_fails=shipped_expired_fails,
                      why_not=f"{loading.refusal}; {loading.upgrade_error}")


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


def _today(manifest: Any, read: Any, relowerer: Any, reader: Any, label: str) -> Today | None:
  """Today's export of the entry's case against the entry, from the case modules' process
  (None: no case modules, or not an entry): its signatures, and the calling contract's
  differences from the one ``read`` from the blob (its donated arguments read by the
  command's module parser, ``reader``). A crash or hang of the project's code there is said
  for this entry alone."""
  if manifest is None or relowerer is None or relowerer.unavailable:
    return None
  recorded = None
  if read is not None and manifest.imported_from is None:
    try:
      donated = reader.donations(bytes(read.exported.mlir_module_serialized), label)
    except JaxportError:  # its module's own failure is said where its signatures are read
      donated = ()
    recorded = _calling.contract_of(read.exported, donated)
  try:
    return relowerer.today(manifest, recorded, label)
  except JaxportError as e:  # Report and go on: one case's lowering must not hide the others.
    line = str(e).splitlines()[0] if str(e) else ""
    return Today(True, lowering_error=f"{type(e).__name__}: {line}")


def _drift(manifest: Any, relowerer: Any, today: Today | None, found: ArtifactFindings,
           current: tuple | None = None) -> dict[str, Any]:
  """Today's custom-call signatures of the entry's case against the recorded ones, each
  difference judged by the judge's drift rule (``_judge._drift``, with ``current``, the
  signatures of the case's entry recorded by the installed jax, as its evidence), a change of
  partitioner metadata only as any other, as the replay judges it."""
  if manifest is None:
    return {"checked": False, "reason": "only golden entries record signatures"}
  recorded = manifest.custom_call_targets
  if not any(s.operand_types or s.result_types for s in recorded):
    return {"checked": False, "reason": "the manifest records no signatures"}
  if relowerer is None:
    return {"checked": False, "reason": "disabled (--no-drift)"}
  if relowerer.unavailable:
    return {"checked": False, "reason": relowerer.unavailable}
  if today is None or not today.found:
    return {"checked": False,
            "reason": f"no case {manifest.case_id!r} in {relowerer.source}"}
  if today.signatures is None:
    msg = f"re-lowering case {manifest.case_id} failed: {today.lowering_error}"
    found.notes.append(msg)
    return {"checked": False, "reason": msg}
  changes = _signatures.drift(recorded, today.signatures)
  consumer = installed_jax_version()
  lines = [str(c) for c in changes]
  for c in changes:
    found.lowering_difference(manifest, consumer, LEAD, str(c), current, lines)
  return {"checked": True, "differences": [str(c) for c in changes]}


def _contract(manifest: Any, today: Today | None, found: ArtifactFindings,
              newest: bool) -> None:
  """The entry's calling contract (as read from its blob) against today's export of its case,
  with its comparison settings, judged as the replay judges it (``_judge._drift``). Nothing
  is said where drift cannot be checked (the drift record says why)."""
  if (today is None or not today.found or today.signatures is None
      or manifest.imported_from is not None):
    return
  if today.contract_error is not None:
    found.notes.append(f"calling contract of case {manifest.case_id} not compared: "
                       f"{today.contract_error}")
    return
  found.contract(manifest, installed_jax_version(), today.by_function, today.by_jax, newest,
                 today.platforms_added, today.donation_removed)


def version_lines(r: Mapping[str, Any]) -> list[str]:
  """The lines of an artifact's versions: its envelope (layout, header version, calling
  convention, the jax that wrote it), whether the running jax reads it as it is, and when it
  leaves that jax's window."""
  if "envelope_layout" not in r:
    return []
  lines = [f"  envelope: layout {r['envelope_layout']} (header version "
           f"{r['serialization_version']}), calling convention "
           f"{r['calling_convention_version']}, written by jax {r['writing_jax'] or 'unknown'}",
           f"  read as it is by jax {installed_jax_version()}: "
           f"{_artifact_read.loading_text(r)}"]
  w = r["window_exit"]
  lines.append(f"  leaves jax {w['consumer'] or 'installed'}'s window: "
               + (w["why"] if w["date"] is None else f"{w['date']} ({w['why']})"))
  return lines


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
    out.extend(version_lines(r))
    for t in r["custom_call_targets"]:
      status = ", ".join(f"{p}: {s}" for p, s in t["status_by_platform"].items())
      out.append(f"  target {t['target']}: {status}")
    if not r["custom_call_targets"] and r["platforms"]:
      out.append("  no custom-call targets")
    if "runs_on" in r:
      out.extend(artifact_runs_on.runs_on_lines(r))
    out.extend(serves_on_tf_lines(r))
    if "run" in r:
      ran = r["run"]
      out.append(f"  run with its sample inputs: {ran['status'] if ran['ran'] else 'not run'} "
                 f"({ran['detail']})")
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
