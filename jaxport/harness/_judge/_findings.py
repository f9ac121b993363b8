"""The findings of one entry's replay: the worker's answer, read against what was asked.

What each kind means, and what it makes of an entry: ``jaxport.harness._judge``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

from jaxport._isolation._process import exit_text
from jaxport.golden._host import Host
from jaxport.harness._judge import _reader_policy
from jaxport._vocabulary import Finding, FindingKind, Subject, TargetVerdict
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import CustomCallSignature, Manifest, is_imported_artifact
from jaxport.harness._protocol._answers import (EnvelopeRead, FailureKind, Numerics,
                                                ReaderResult, ReplayAnswer, Stage,
                                                WorkerFailure)
from jaxport.harness._protocol._requests import ReplayRequest
from jaxport.harness._protocol._stage_marks import CASE_CODE, TODAY, stage_reader
from jaxport.report._entries import EntryResult
from jaxport.harness._judge._age import age_findings, days_to_expiry
from jaxport.harness._judge._drift import (contract_findings, lowering_difference,
                                           lowers_as_current_entry, replaced_by_jax)
from jaxport.harness._judge._targets import module_target_verdicts, not_stable_finding
from jaxport.harness._project import ProjectTargets

K = FindingKind
S = Subject

# The name an envelope rewrite goes by among an entry's upgrade rules.
ENVELOPE_RULE = "envelope"

def _inexact(where: str, max_abs_err: float, hosts: _Hosts) -> tuple[FindingKind, str]:
  """The finding for results within tolerance but not bitwise equal: drift on the recording
  host's class, a pass with its reason on any other host."""
  head = f"{where}: results within tolerance but not bitwise equal (max abs err {max_abs_err:.3g})"
  if hosts.same_class:
    return K.NUMERICS_DRIFT, head + " on a host of the recording host's class"
  return K.NUMERICS_OTHER_HOST, (f"{head}; bitwise equality was not expected: {hosts.why_not}")


@dataclasses.dataclass(frozen=True)
class _Hosts:
  """The recording host of an entry and the host that replayed it."""
  recorded: Host | None
  replayed: Host | None

  @property
  def same_class(self) -> bool:
    return self.recorded is not None and self.recorded.same_class(self.replayed)

  @property
  def why_not(self) -> str:
    if self.recorded is None:
      return "the entry's recording host is unknown (recorded before hosts were kept, or imported)"
    if self.replayed is None:
      return "the replay host is unknown"
    differences = "; ".join(self.recorded.differences(self.replayed))
    if self.recorded.same_machine(self.replayed):
      # The machine's class is the recording one's: only the software around XLA changed.
      return (f"recorded on a machine of this class with other software ({differences}), which "
              "compiles to other code")
    return f"recorded on another host class ({differences})"


def _hosts(answer: ReplayAnswer, manifest: Manifest, where: str) -> _Hosts:
  replayed = answer.host
  return _Hosts(manifest.host,
                None if replayed is None else Host.from_json(replayed, f"{where}: worker answer: host"))


def broke(r: ReaderResult) -> bool:
  """Whether one reader's replay, that did not fail at a stage, is a break all the same: the
  module or a sharding check found something wrong, or its outputs are outside tolerance."""
  return bool(r.problems) or (r.numerics is not None and not r.numerics.ok)


def reproduced(r: ReaderResult) -> bool:
  """Whether one reader's replay read, ran and matched (lowering-only: read)."""
  return r.error is None and not broke(r)


def _reader_findings(r: ReaderResult, hosts: _Hosts) -> list[Finding]:
  """The breaks and drifts of one reader's replay (a checker that raised on its outputs
  judged nothing of them, which :func:`checker_findings` says; what the module or a sharding
  check found wrong is a break all the same)."""
  name = r.reader
  if r.error is None and r.numerics is not None and r.numerics.checker_error is not None:
    return [Finding(K.COMPATIBILITY_BREAK, S.READER, f"{name} reader: {p}", name)
            for p in r.problems]
  if r.error is not None:
    refused = f" (upgrade refused: {r.upgrade_refused})" if r.upgrade_refused else ""
    return [Finding(K.COMPATIBILITY_BREAK, S.READER,
                    f"{name} reader: {r.stage} failed: {r.error}{refused}", name)]
  if broke(r):
    problems = (*(r.numerics.problems if r.numerics is not None else ()), *r.problems)
    return [Finding(K.COMPATIBILITY_BREAK, S.READER, f"{name} reader: {p}", name)
            for p in problems or ["results rejected"]]
  if r.stage is Stage.COMPARE and r.numerics is not None and not r.numerics.exact:
    kind, message = _inexact(f"{name} reader", r.numerics.max_abs_err, hosts)
    return [Finding(kind, S.READER, message, name)]
  return []


def _envelope_finding(reader: str, env: EnvelopeRead, consumer: str | None,
                      ran: bool = True) -> Finding:
  """An expired envelope that read after its rewrite: upgraded, when the measured reader
  policy of the installed jax predicts the refusal; a break when it says the layout reads.
  ``ran``: the rewrite was run and its outputs matched (an audit reads it only)."""
  policy = _reader_policy.load()
  reading = policy.reading(consumer, env.layout)
  what = (f"{reader} reader: the envelope (layout {env.layout}, header version "
          f"{env.from_version}) was refused: {env.error_before}")
  if reading is not None and reading.status is _reader_policy.ReadStatus.READS:
    return Finding(K.COMPATIBILITY_BREAK, S.READER,
                   f"{what}; but {policy.describe(consumer, env.layout)}: "
                   "the reader's policy changed since it was measured", reader)
  return Finding(K.UPGRADED, S.READER,
                 f"{what}; read{' and matched the recorded outputs' if ran else ''} after "
                 f"jaxport.upgrade_envelope rewrote it (header version {env.to_version}; "
                 f"{env.reason}; {policy.describe(consumer, env.layout)})", reader)


def _shipped_envelope_finding(reader: str, env: EnvelopeRead, consumer: str | None,
                              fails: bool, ran: bool = True) -> Finding:
  """An imported artifact's envelope that jax refuses as it is: the fleet loads the shipped
  bytes, not their rewrite, so it fails (or warns, as the project chose) naming the remedy.
  ``ran``: the rewrite was run and its outputs matched (an audit reads it only)."""
  return Finding(
      K.COMPATIBILITY_BREAK if fails else K.EXPIRED, S.READER,
      f"{reader} reader: jax {consumer or 'installed'} refuses this shipped artifact as it is "
      f"(envelope layout {env.layout}, header version {env.from_version}): "
      f"{env.error_before.rstrip('. ')}. "
      f"It loads{' and matches' if ran else ''} after the rewrite `jaxport upgrade BLOB -o "
      f"NEW.bin` makes (header "
      f"version {env.to_version}): ship that blob and import it as a new entry (jaxport "
      "import-artifacts); jaxport_shipped_expired = \"warn\" makes this a warning", reader)


# What each stage a worker can die in is, as a finding names it.
_STAGE_TEXT = {CASE_CODE: "the case's own code (its inputs, its function traced for today's "
                          "export, or its checker)",
               TODAY: "today's export of the case (lowered, serialized, read back and run)"}


def _stage_text(stage: str) -> str:
  reader = stage_reader(stage)
  return f"the {reader} reader's replay of the recorded entry" if reader else _STAGE_TEXT[stage]


def checker_findings(answer: ReplayAnswer) -> list[Finding]:
  """The case's checker that raised while it judged outputs (readers' or today's): one
  finding per distinct error, naming the checker, the exception and whose outputs, in one
  line, and what the case's checker today makes of the entry's own recorded outputs."""
  where: dict[str, list[str]] = {}
  for r in answer.readers:
    if r.error is None and r.numerics is not None and r.numerics.checker_error is not None:
      where.setdefault(r.numerics.checker_error, []).append(f"the {r.reader} reader's")
  today = answer.today
  if today is not None and today.numerics is not None and today.numerics.checker_error:
    where.setdefault(today.numerics.checker_error, []).append("today's lowering's")
  if not where:
    return []
  after = _recorded_check_text(today.recorded_check if today is not None else None)
  return [Finding(K.CHECKER_ERROR, S.CHECKER,
                  f"{error} judging {' and '.join(whose)} outputs: the case's checker is at "
                  f"fault, not the entry or jax; {after}", detail=error)
          for error, whose in where.items()]


def _recorded_check_text(check: Numerics | None) -> str:
  """What a checker finding says of the case's checker today on the entry's own outputs."""
  if check is None:
    return ("fix the checker or choose another (the case's checker=), then record the case "
            "again")
  if check.ok:
    return ("the case's checker today accepts the entry's recorded outputs: --compat-update "
            "records the case anew")
  why = check.checker_error or "; ".join(check.problems) or "rejected"
  return (f"the case's checker today fails on the entry's own recorded outputs too ({why}): "
          "fix it or choose another (the case's checker=), then --compat-update records the "
          "case anew")


def _crash_finding(failure: WorkerFailure) -> Finding:
  """The finding of a worker that died, by the stage it left word of (``_stage_marks``): the
  stage whose thread called ``os._exit``, else the stages in progress. A death in a reader's
  replay, alone or beside another stage, is a compatibility break naming the reader (in its
  message: a crash is never excused as a reader's own failure can be); one in
  the case's own code or today's export alone is the entry's export error, the recorded
  entry not at fault; without word, a compatibility break of the worker."""
  tail = failure.stderr_tail.strip()
  stderr = f"its last stderr lines:\n{tail}" if tail else "it wrote nothing to stderr"
  how = f"{failure.why}, {exit_text(failure.returncode)}"
  stages = (failure.exited_in,) if failure.exited_in is not None else failure.stages
  readers = [r for r in map(stage_reader, stages) if r is not None]
  during = " and ".join(_stage_text(s) for s in stages)
  ended = "was ended by a call of os._exit" if failure.exited_in is not None else "stopped"
  if readers:
    # Named in the message, not as the finding's reader: a crash is never excused as a
    # reader's failure is (the forward gap, an expectations row).
    return Finding(K.COMPATIBILITY_BREAK, S.WORKER,
                   f"{', '.join(readers)} reader{'s' if len(readers) > 1 else ''}: the worker "
                   f"process {ended} during {during} ({how}); {stderr}")
  if stages:
    return Finding(K.EXPORT_ERROR, S.TODAY,
                   f"the worker process {ended} during {during} ({how}), while no reader "
                   "replayed the recorded entry; a case (its function, inputs or checker) must "
                   f"return or raise an Exception, never end the process; {stderr}")
  return Finding(K.COMPATIBILITY_BREAK, S.WORKER,
                 f"the worker process died while replaying ({how}: a native crash, or case "
                 f"code that ended its process with os._exit or a signal); {stderr}")


def _failure_finding(failure: WorkerFailure) -> Finding:
  """The finding of a request that got no replay answer."""
  if failure.kind is FailureKind.CRASHED:
    return _crash_finding(failure)
  if failure.kind is FailureKind.GOLDEN_DATA:
    return Finding(K.GOLDEN_DATA_ERROR, S.GOLDEN_DATA, f"golden data error: {failure.why}")
  if failure.kind is FailureKind.CASE_CODE:
    return Finding(K.EXPORT_ERROR, S.WORKER, f"{failure.why}\n{failure.traceback}".rstrip())
  if failure.kind is FailureKind.CASE_MODULES:
    return Finding(K.COMPATIBILITY_BREAK, S.WORKER,
                   f"the project's case modules cannot be loaded: {failure.why}")
  return Finding(K.COMPATIBILITY_BREAK, S.WORKER,
                 f"the harness could not replay the entry: {failure.why}\n{failure.traceback}")


def _inconsistencies(answer: ReplayAnswer, request: ReplayRequest, runs: bool,
                     imported: bool) -> list[str]:
  """What a well-formed replay answer leaves out of what its ``request`` asked for, or of what
  its entry needs judged, one line each: a reader asked for that did not answer, a reader
  nobody asked for, a reader that neither failed nor got to its last stage (``compare`` with
  numerics for an entry that is run, ``module`` for one that is not, the targets as read in both),
  today's lowering asked for and missing, or neither run nor found to be the entry's own
  module, the blob's features asked for and neither read nor refused. An answer that leaves
  out a judgement fails; it never passes by omission, and never as a skip."""
  out = []
  if not answer.readers:
    out.append("it lists no reader's replay")
  names = [r.reader for r in answer.readers]
  asked = ", ".join(request.readers) or "none"
  for name in request.readers:
    if name not in names:
      out.append(f"the {name} reader was asked for and did not answer")
  for name in dict.fromkeys(names):
    if name not in request.readers:
      out.append(f"an answer of a reader named {name!r}, which was not asked for (asked: {asked})")
    elif names.count(name) > 1:
      out.append(f"the {name} reader answered {names.count(name)} times")
  last = Stage.COMPARE if runs else Stage.MODULE
  for r in answer.readers:
    if r.error is not None:
      continue
    if r.stage is not last:
      out.append(f"the {r.reader} reader stopped at stage {r.stage!s} without an error "
                 f"(expected {last!s})")
    elif runs and r.numerics is None:
      out.append(f"the {r.reader} reader's comparison has no numerics")
    elif r.allowed_targets is None:
      out.append(f"the {r.reader} reader's module has no targets as read")
  today = answer.today
  if request.current and today is None:
    out.append("today's lowering was asked for and is missing")
  if (runs and not imported and today is not None and today.available and today.error is None
      and not today.same_module and today.numerics is None and not today.contract_diff):
    out.append("today's lowering was neither run nor found to be the entry's own module")
  if (request.features is not None and answer.features is None
      and answer.features_error is None):
    out.append(f"the blob's features were asked for ({request.features}) and are missing")
  return out


def findings_of(answer: ReplayAnswer | WorkerFailure, request: ReplayRequest, *, entry_id: EntryId,
                manifest: Manifest, today: datetime.date, window_days: int,
                consumer: str | None, numerics_skipped: str | None = None,
                newest: bool = True,
                current_jax: Sequence[CustomCallSignature] | None = None,
                declared: ProjectTargets | None = None,
                shipped_expired_fails: bool = True) -> EntryResult:
  """The outcome of one entry (the worker's ``answer`` to its replay ``request``): kinds
  found, messages, skips and staleness; no status yet. Every part the request asked for must
  be in the answer (``_inconsistencies``). ``newest``: the entry is its case's newest (an
  older one whose calling contract differs from today's is judged by its readers only).
  ``numerics_skipped``: why an entry with recorded outputs was checked the way lowering-only
  entries are (an accelerator's entry in a CPU run), for the skip ledger. ``consumer``: the
  installed jax's release; ``current_jax``: the custom-call signatures of the case's newest
  entry recorded by it (None: none), the evidence a lowering difference of another release's
  entry is jax's; ``declared``: the project's stable targets (``_targets``);
  ``shipped_expired_fails``: an imported artifact whose envelope jax refuses fails (else warns). A :class:`WorkerFailure` (a crash, an error, an answer that did not read)
  is an error verdict."""
  record_date = manifest.record_date
  recorded_targets = sorted({s.target for s in manifest.custom_call_targets})
  findings: list[Finding] = []
  skips: list[str] = []
  facts: dict[str, Any] = {}

  def add(kind: FindingKind, subject: Subject, message: str, reader: str | None = None,
          detail: str | None = None) -> None:
    findings.append(Finding(kind, subject, message, reader, detail))

  if isinstance(answer, WorkerFailure):
    findings.append(_failure_finding(answer))
  else:
    # The worker verified the entry's files against the manifest before it replayed them.
    facts["blob_sha256"] = manifest.files.get("exported.bin")
    hosts = _hosts(answer, manifest, entry_id)
    runs = not manifest.lowering_only and numerics_skipped is None
    for line in _inconsistencies(answer, request, runs, manifest.imported_from is not None):
      add(K.COMPATIBILITY_BREAK, S.WORKER, f"the worker's answer is incomplete: {line}")
    findings += [golden_problem(p) for p in answer.golden_problems]
    findings += checker_findings(answer)
    if answer.today is not None and answer.today.recorded_check is not None:
      check = answer.today.recorded_check
      facts["checker_fixed"] = check.ok and check.checker_error is None
    for r in answer.readers:
      found = _reader_findings(r, hosts)
      findings += found
      if any(f.kind == K.COMPATIBILITY_BREAK for f in found):
        continue
      if r.envelope is not None:
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), ENVELOPE_RULE}))
        findings.append(
            _shipped_envelope_finding(r.reader, r.envelope, consumer, shipped_expired_fails)
            if is_imported_artifact(manifest) else
            _envelope_finding(r.reader, r.envelope, consumer))
      if r.upgraded is not None:
        up = r.upgraded
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), *up.rules}))
        add(K.UPGRADED, S.READER, f"{r.reader} reader: ran and matched the recorded outputs "
                                  f"after jaxport.upgrade (rules {', '.join(up.rules)}); before: "
                                  f"{up.error_before}", r.reader)
    # The targets of the module as read: every entry's, whether it runs here or not.
    read = next((r for r in answer.readers if r.allowed_targets is not None), None)
    verdicts = None if read is None else module_target_verdicts(
        manifest.custom_call_targets, read.platforms or (), declared, read.allowed_targets)
    if manifest.lowering_only or numerics_skipped is not None:
      skips.append(numerics_skipped or
                   "numerics not compared: lowering-only entry (its platform cannot run here)")
      if read is not None:
        facts["platforms"] = tuple(read.platforms or ())
        facts["target_verdicts"] = {t: str(v) for t, v in verdicts.items()}
    if read is not None:
      for target, verdict in sorted(verdicts.items()):
        if verdict == TargetVerdict.NOT_STABLE:
          findings.append(not_stable_finding(target, read.platforms or (), S.READER))
    for line in answer.config_changes:
      add(K.JAX_CONFIG_CHANGED, S.WORKER, line)
    if answer.comparison_note is not None:
      skips.append(answer.comparison_note)
    cur = answer.today
    if cur is None or not cur.available:
      # Asked for and missing is an incomplete answer, a failure above, never a skip.
      # An imported artifact has no case by design: the run's ledger says so once for all.
      if (cur is not None or not request.current) and not is_imported_artifact(manifest):
        why = "not asked for" if cur is None else (cur.reason or "unavailable")
        skips.append(f"current lowering not checked: {why}")
    elif cur.error is not None:
      add(K.EXPORT_ERROR, S.TODAY, f"the case cannot be exported today: {cur.error}")
    else:
      facts["current_targets"] = cur.targets
      facts["matched_case"] = cur.matched_case
      # A lowering-only entry promises its signatures; an imported dataset is another
      # function than the case it is compared with, so a difference there is drift. An
      # entry another jax release recorded whose numerics still match: jax changed its
      # lowering, not the user the function.
      against = f" of case {cur.matched_case}" if cur.matched_case else ""
      results_match = cur.numerics is None or cur.numerics.ok
      evidence = lowers_as_current_entry(manifest, cur.signature_diff, current_jax)
      by_jaxlib = replaced_by_jax(recorded_targets, cur.targets, [
          w for r in answer.readers if r.upgraded is not None for w in r.upgraded.rewrites],
          consumer)
      findings += [lowering_difference(manifest, consumer, f"current lowering{against}", line,
                                       results_match, evidence, by_jaxlib.get(line))
                   for line in cur.signature_diff]
      found, skipped = contract_findings(manifest, consumer, cur.contract_diff,
                                         cur.contract_by_jax, newest, cur.platforms_added,
                                         cur.donation_removed)
      findings += found
      skips += skipped
      # An older entry whose contract or comparison is no longer the case's is judged by its
      # readers against its recorded outputs, with the tolerances it was recorded with.
      earlier = bool(cur.contract_diff) and not newest
      gone = sorted(set(recorded_targets) - set(cur.targets))
      if gone:
        add(K.STALE_TARGET, S.TODAY,
            f"recorded targets {gone} are no longer emitted by today's lowering; "
            "record a new entry for the new lowering and keep this one until it expires")
      # A checker that raised judged nothing (checker_findings says so).
      raised = cur.numerics is not None and cur.numerics.checker_error is not None
      num = None if earlier or raised else cur.numerics
      if num is not None and not num.ok:
        for p in num.problems:
          add(K.NUMERICS_CHANGE, S.TODAY, f"current lowering: {p}", detail=p)
      elif num is not None and not num.exact:
        kind, message = _inexact("current lowering", num.max_abs_err, hosts)
        add(kind, S.TODAY, message)
  findings += age_findings(record_date, today, window_days)
  return EntryResult(entry_id=entry_id, case_id=manifest.case_id, family=manifest.family,
                 record_date=record_date,
                 days_to_expiry=days_to_expiry(record_date, today, window_days),
                 lowering_only=manifest.lowering_only, targets=tuple(recorded_targets),
                 recorded_host=None if manifest.host is None else manifest.host.to_json(),
                 replay_host=None if isinstance(answer, WorkerFailure) else answer.host,
                 findings=tuple(findings), skips=tuple(skips), **facts)


def golden_problem(message: str) -> Finding:
  """The finding of what golden verification says of an entry as read (its manifest against
  its module, its comparison's worth): damage to the golden data."""
  return Finding(K.GOLDEN_DATA_ERROR, S.GOLDEN_DATA, message)


def unreadable_outcome(entry_id: EntryId, error: Exception) -> EntryResult:
  """The outcome of an entry whose golden data cannot even be read."""
  parts = entry_id
  return EntryResult(entry_id=entry_id, case_id=parts.case_id, family=parts.family, record_date=None,
                 days_to_expiry=None, lowering_only=None, targets=(),
                 findings=(Finding(K.GOLDEN_DATA_ERROR, S.GOLDEN_DATA,
                                   f"golden data error: {error}"),))
