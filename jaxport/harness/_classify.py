"""Turning a worker's raw findings for one entry into a classified outcome.

Kinds, from worst to mildest:
  ``golden_data_error``    the entry's own files fail verification (a hash, the
                           manifest, an array file): damage to the golden data,
                           not a verdict on jax. Always fails, and no
                           expected-status row ever excuses it.
  ``compatibility_break``  the old entry no longer reads, runs, or computes the
                           recorded results (any reader); golden data that fails
                           verification; a worker crash. Always fails.
  ``export_error``         the case can no longer be exported today. Always fails.
  ``below_min_consumer``   the case declares the oldest jax release its entries
                           must run on (``min_consumer``), and the entry's
                           computed range (``jaxport.releases.runs_on``) leaves
                           out that release or a newer one up to the producer;
                           the message names the release and the limiting
                           factor. Always fails.
  ``signature_change``     today's export is called with other input or output
                           trees, dtypes, shapes, shardings or effects than the
                           entry (its calling contract, ``_calling``): fails and
                           warns as ``lowering_drift`` does. An entry older than
                           its case's newest is judged by its readers and
                           recorded outputs only (a skip line, "earlier
                           contract").
  ``lowering_drift``       today's lowering uses other targets or other operand,
                           result or attribute signatures. Fails lowering-only
                           entries (their signatures are all they promise);
                           otherwise a warning, a failure with ``--strict``.
  ``numerics_change``      today's lowering computes results outside tolerance.
                           A warning, a failure with ``--strict``.
  ``numerics_drift``       results within tolerance but not bitwise equal, on
                           a host of the recording host's class
                           (``jaxport.golden._host``). Reported only.
  ``numerics_other_host``  results within tolerance but not bitwise equal on
                           a host of another class than the recording one, or
                           with either host unknown: bitwise equality was not
                           expected, so this is a pass with a note, counted
                           apart from the bitwise passes.
  ``upgraded``             the entry failed to run because its custom calls are
                           no longer registered, and ran and matched the
                           recorded outputs after ``jaxport.upgrade`` (the rules
                           applied are in the message); or the installed jax
                           refused its envelope as expired, and it read and
                           matched after ``jaxport.upgrade_envelope`` (rule
                           ``envelope``). Reported only.
  ``producer_drift``       a lowering difference of an entry recorded by
                           another jax release whose results today's module
                           still computes (``_jax_side``), or a stale target an
                           expectations table attributes to an old release:
                           jax's change, not the function's. Reported only.
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

import dataclasses
import datetime
import functools
import importlib.metadata as md
from typing import Any

from jaxport._isolation._process import exit_text
from jaxport.golden._host import Host
from jaxport.harness import _reader_policy
from jaxport._vocabulary import Finding, FindingKind, Status, Subject, TargetVerdict
from jaxport.golden._entry_id import EntryId
from jaxport.golden._manifest import Manifest
from jaxport.harness._protocol import (EnvelopeRead, FailureKind, ReaderResult, ReplayAnswer, Stage,
                                       TodayResult, WorkerFailure)
from jaxport.harness._requests import ReplayRequest
from jaxport.harness._verdicts import Outcome

K = FindingKind
S = Subject

# The name an envelope rewrite goes by among an entry's upgrade rules.
ENVELOPE_RULE = "envelope"

ALWAYS_FAIL = frozenset({K.GOLDEN_DATA_ERROR, K.COMPATIBILITY_BREAK, K.EXPORT_ERROR,
                         K.BELOW_MIN_CONSUMER})
STRICT_FAIL = frozenset({K.LOWERING_DRIFT, K.SIGNATURE_CHANGE, K.NUMERICS_CHANGE, K.EXPIRED,
                         K.FUTURE_DATE,
                         K.STALE_TARGET, K.UNEXPECTED_PASS})
# The kinds that say the case's function computes something else today.
CHANGE_KINDS = frozenset({K.LOWERING_DRIFT, K.SIGNATURE_CHANGE, K.NUMERICS_CHANGE})


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
    return "recorded on another host class (" + "; ".join(
        self.recorded.differences(self.replayed)) + ")"


def _hosts(answer: ReplayAnswer, manifest: Manifest, where: str) -> _Hosts:
  replayed = answer.host
  return _Hosts(manifest.host,
                None if replayed is None else Host.from_json(replayed, f"{where}: worker answer"))


def _reader_findings(r: ReaderResult, hosts: _Hosts) -> list[Finding]:
  """The breaks and drifts of one reader's replay."""
  name = r.reader
  if r.error is not None:
    refused = f" (upgrade refused: {r.upgrade_refused})" if r.upgrade_refused else ""
    return [Finding(K.COMPATIBILITY_BREAK, S.READER,
                    f"{name} reader: {r.stage} failed: {r.error}{refused}", name)]
  if not r.ok:
    problems = (*(r.numerics.problems if r.numerics is not None else ()), *r.problems)
    return [Finding(K.COMPATIBILITY_BREAK, S.READER, f"{name} reader: {p}", name)
            for p in problems or ["results rejected"]]
  if r.stage is Stage.COMPARE and r.numerics is not None and not r.numerics.exact:
    kind, message = _inexact(f"{name} reader", r.numerics.max_abs_err, hosts)
    return [Finding(kind, S.READER, message, name)]
  return []


def _envelope_finding(reader: str, env: EnvelopeRead) -> Finding:
  """An expired envelope that read after its rewrite: upgraded, when the measured reader
  policy of the installed jax predicts the refusal; a break when it says the layout reads."""
  consumer = _consumer()
  policy = _reader_policy.load()
  reading = policy.reading(consumer, env.layout)
  what = (f"{reader} reader: the envelope (layout {env.layout}, header version "
          f"{env.from_version}) was refused: {env.error_before}")
  if reading is not None and reading.status is _reader_policy.ReadStatus.READS:
    return Finding(K.COMPATIBILITY_BREAK, S.READER,
                   f"{what}; but {policy.describe(consumer, env.layout)}: "
                   "the reader's policy changed since it was measured", reader)
  return Finding(K.UPGRADED, S.READER,
                 f"{what}; read and matched the recorded outputs after "
                 f"jaxport.upgrade_envelope rewrote it (header version {env.to_version}; "
                 f"{env.reason}; {policy.describe(consumer, env.layout)})", reader)


@functools.cache
def _consumer() -> str | None:
  """The installed jax's release (what reads the envelopes here; read once per process)."""
  try:
    return md.version("jax")
  except md.PackageNotFoundError:
    return None


def _jax_side(manifest: Manifest, today: TodayResult) -> str | None:
  """Why a lowering difference of this entry is jax's change rather than the function's, or
  None when it may be the function's: the entry was recorded by another jax release than the
  one lowering it today, and today's module still computes the recorded results (it was not
  run, for a lowering-only entry, or matched them). A function changed in the same upgrade
  without changing its results cannot be told apart from this (docs/harness.md)."""
  producer, consumer = manifest.producer.jax, _consumer()
  if producer is None or consumer is None or producer == consumer:
    return None
  if today.numerics is not None and not today.numerics.ok:
    return None
  return (f"recorded by jax {producer}, lowered today by jax {consumer}: a change of jax's "
          "lowering between the two releases, the results still match")


def _failure_finding(failure: WorkerFailure) -> Finding:
  """The finding of a request that got no replay answer."""
  if failure.kind is FailureKind.CRASHED:
    tail = failure.stderr_tail.strip()
    return Finding(K.COMPATIBILITY_BREAK, S.WORKER,
                   f"the worker process died while replaying ({failure.why}, "
                   f"{exit_text(failure.returncode)}: a native crash, or case code that ended "
                   "its process with os._exit or a signal); "
                   + (f"its last stderr lines:\n{tail}" if tail else "it wrote nothing to stderr"))
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
  numerics for an entry that is run, ``module`` with target verdicts for one that is not),
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
    elif not runs and r.target_verdicts is None:
      out.append(f"the {r.reader} reader's module has no target verdicts")
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


def classify(answer: ReplayAnswer | WorkerFailure, request: ReplayRequest, *, entry_id: str,
             manifest: Manifest, today: datetime.date, window_days: int,
             numerics_skipped: str | None = None, newest: bool = True) -> Outcome:
  """The outcome of one entry (the worker's ``answer`` to its replay ``request``): kinds
  found, messages, skips and staleness; no status yet. Every part the request asked for must
  be in the answer (``_inconsistencies``). ``newest``: the entry is its case's newest (an
  older one whose calling contract differs from today's is judged by its readers only).
  ``numerics_skipped``: why an entry with recorded outputs was checked the way lowering-only
  entries are (an accelerator's entry in a CPU run), for the skip ledger. A :class:`WorkerFailure` (a crash, an error, an answer
  that did not read) is an error verdict."""
  record_date = manifest.record_date
  recorded_targets = sorted({s.target for s in manifest.custom_call_targets})
  days_to_expiry = window_days - (today - record_date).days
  findings: list[Finding] = []
  skips: list[str] = []
  facts: dict[str, Any] = {}

  def add(kind: FindingKind, subject: Subject, message: str, reader: str | None = None,
          detail: str | None = None) -> None:
    findings.append(Finding(kind, subject, message, reader, detail))

  if isinstance(answer, WorkerFailure):
    findings.append(_failure_finding(answer))
  else:
    hosts = _hosts(answer, manifest, entry_id)
    runs = not manifest.lowering_only and numerics_skipped is None
    for line in _inconsistencies(answer, request, runs, manifest.imported_from is not None):
      add(K.COMPATIBILITY_BREAK, S.WORKER, f"the worker's answer is incomplete: {line}")
    for r in answer.readers:
      found = _reader_findings(r, hosts)
      findings += found
      if any(f.kind == K.COMPATIBILITY_BREAK for f in found):
        continue
      if r.envelope is not None:
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), ENVELOPE_RULE}))
        findings.append(_envelope_finding(r.reader, r.envelope))
      if r.upgraded is not None:
        up = r.upgraded
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), *up.rules}))
        add(K.UPGRADED, S.READER, f"{r.reader} reader: ran and matched the recorded outputs "
                                  f"after jaxport.upgrade (rules {', '.join(up.rules)}); before: "
                                  f"{up.error_before}", r.reader)
    imported = manifest.imported_from is not None
    if manifest.lowering_only or numerics_skipped is not None:
      skips.append(numerics_skipped or
                   "numerics not compared: lowering-only entry (its platform cannot run here)")
      read = next((r for r in answer.readers if r.target_verdicts is not None), None)
      if read is not None:
        facts["platforms"] = tuple(read.platforms or ())
        facts["target_verdicts"] = {t: str(v) for t, v in read.target_verdicts.items()}
        for target, verdict in sorted(read.target_verdicts.items()):
          if verdict == TargetVerdict.NOT_STABLE:
            add(K.STALE_TARGET, S.READER,
                f"target {target} is not in the stable table of "
                f"{'/'.join(read.platforms or [])} "
                "(jaxport's stable-target table or the project's jaxport_stable_targets): "
                "nothing promises it still works")
    cur = answer.today
    if cur is None or not cur.available:
      # Asked for and missing is an incomplete answer, a failure above, never a skip.
      if cur is not None or not request.current:
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
      by_jax = _jax_side(manifest, cur)
      for line in cur.signature_diff:
        if by_jax is not None:
          add(K.PRODUCER_DRIFT, S.TODAY, f"current lowering{against}: {line} ({by_jax})",
              detail=line)
        else:
          add(K.COMPATIBILITY_BREAK if manifest.lowering_only and not imported
              else K.LOWERING_DRIFT, S.TODAY, f"current lowering{against}: {line}", detail=line)
      for line in cur.contract_by_jax:
        add(K.PRODUCER_DRIFT if manifest.producer.jax != _consumer() else K.SIGNATURE_CHANGE,
            S.TODAY, f"calling contract of case {manifest.case_id}: {line}", detail=line)
      if cur.contract_diff and not newest:
        skips.append(f"earlier contract: case {manifest.case_id}'s calling contract changed since "
                     f"this entry ({'; '.join(cur.contract_diff)}); it is judged by its readers "
                     "and recorded outputs only")
      for line in cur.contract_diff if newest else ():
        add(K.SIGNATURE_CHANGE, S.TODAY, f"calling contract of case {manifest.case_id}: {line}",
            detail=line)
      gone = sorted(set(recorded_targets) - set(cur.targets))
      if gone:
        add(K.STALE_TARGET, S.TODAY,
            f"recorded targets {gone} are no longer emitted by today's lowering; "
            "record a new entry for the new lowering and keep this one until it expires")
      num = cur.numerics
      if num is not None and not num.ok:
        for p in num.problems:
          add(K.NUMERICS_CHANGE, S.TODAY, f"current lowering: {p}", detail=p)
      elif num is not None and not num.exact:
        kind, message = _inexact("current lowering", num.max_abs_err, hosts)
        add(kind, S.TODAY, message)
  iso = record_date.isoformat()
  if days_to_expiry < 0:
    add(K.EXPIRED, S.AGE, f"recorded {iso}, {-days_to_expiry} days past the "
                          f"{window_days}-day compat window; prune it (jaxport prune) once a "
                          "newer entry of the case exists")
  if record_date > today:
    add(K.FUTURE_DATE, S.AGE,
        f"recorded {iso}, {(record_date - today).days} days "
        f"after today ({today}): no recording can come from the future, so the "
        "record date is wrong (a bad clock or an edited entry) and the entry would "
        "never expire; record the case again and remove this entry (jaxport prune "
        "--dated-in-future)")
  return Outcome(entry_id=entry_id, case_id=manifest.case_id, family=manifest.family,
                 record_date=iso, days_to_expiry=days_to_expiry,
                 lowering_only=manifest.lowering_only, targets=tuple(recorded_targets),
                 recorded_host=None if manifest.host is None else manifest.host.to_json(),
                 replay_host=None if isinstance(answer, WorkerFailure) else answer.host,
                 findings=tuple(findings), skips=tuple(skips), **facts)


def min_consumer_findings(min_consumer: str, platform: str, range_: Any,
                          measured: tuple[str, ...], producer: str | None,
                          why: str | None = None) -> list[Finding]:
  """A ``below_min_consumer`` finding when ``range_`` (a :class:`jaxport.releases.RunsOn`, None
  when it could not be computed, ``why`` saying why where known) leaves out ``min_consumer``
  or a measured release between it and ``producer`` on ``platform``; none when it covers
  them."""
  def key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))
  if range_ is None:
    because = f" ({why})" if why else ""
    return [Finding(K.BELOW_MIN_CONSUMER, S.CONSUMERS,
                    f"min_consumer {min_consumer}: the releases the entry runs on cannot be "
                    f"computed from its blob{because}, so that it runs on jax "
                    f"{min_consumer} is not shown; inspect it with `jaxport inspect ENTRY`")]
  if min_consumer not in measured:
    return [Finding(K.BELOW_MIN_CONSUMER, S.CONSUMERS,
                    f"min_consumer {min_consumer} is not a measured release of the release table "
                    f"(it measures {measured[0]} to {measured[-1]}); name a measured release, or "
                    "upgrade to a jaxport whose release table measures it")]
  lo = key(min_consumer)
  hi = max(lo, key(producer)) if producer is not None and producer in measured else lo
  for release in measured:
    if lo <= key(release) <= hi and not range_.covers(platform, release):
      why = range_.why_not(platform, release) or "not in the computed range"
      return [Finding(K.BELOW_MIN_CONSUMER, S.CONSUMERS,
                      f"min_consumer {min_consumer}: the entry does not run on jax {release} "
                      f"({platform}): {why}; it runs on {range_.summary(platform)}. Export the "
                      f"case for that consumer (Case(..., for_jax='{min_consumer}'), as "
                      f"jaxport.export(f, for_jax='{min_consumer}') does) or raise the case's "
                      "min_consumer")]
  return []


def unreadable(entry_id: str, error: Exception) -> Outcome:
  """The outcome of an entry whose golden data cannot even be read."""
  parts = EntryId.parse(entry_id)
  return Outcome(entry_id=entry_id, case_id=parts.case_id, family=parts.family, record_date=None,
                 days_to_expiry=None, lowering_only=None, targets=(),
                 findings=(Finding(K.GOLDEN_DATA_ERROR, S.GOLDEN_DATA,
                                   f"golden data error: {error}"),))


def status(outcome: Outcome, strict: bool, changes_fail: bool = False,
           superseded: bool = False) -> Status:
  """The status of an outcome under the given strictness; with ``changes_fail``, a changed
  function fails as well. ``superseded``: the case has a newer entry, so this one's
  differences from today's function are expected and only warn, strict or not."""
  kinds = set(outcome.kinds)
  # A declared min_consumer is the case's own promise: no producer-release expectation excuses it.
  if outcome.expected_failure and not kinds & {K.EXPORT_ERROR, K.GOLDEN_DATA_ERROR,
                                               K.BELOW_MIN_CONSUMER}:
    return Status.XFAIL
  if kinds & ALWAYS_FAIL or (changes_fail and kinds & CHANGE_KINDS):
    return Status.FAIL
  if kinds & (STRICT_FAIL - CHANGE_KINDS if superseded else STRICT_FAIL):
    return Status.FAIL if strict else Status.WARN
  if kinds & STRICT_FAIL:
    return Status.WARN
  if K.NUMERICS_DRIFT in kinds:
    return Status.DRIFT
  return Status.PASS
