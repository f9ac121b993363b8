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
  ``producer_drift``       lowering drift or a stale target of an entry recorded
                           by an older jax release (``_expectations``): the
                           release difference itself. Reported only.
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
import importlib.metadata as md
from typing import Any

from jaxport._isolation._process import exit_text
from jaxport.golden._host import Host
from jaxport.harness import _reader_policy
from jaxport.harness._verdicts import Finding, Outcome
from jaxport.report import FindingKind, Status

K = FindingKind

# Verdicts on a lowering-only module's targets against the stable table of its platforms.
TARGET_STABLE = "stable"
TARGET_NOT_STABLE = "not_stable"
# Not stable, but the module's own disabled_safety_checks allow it: its producer vouches for it.
TARGET_ALLOWED = "allowed_by_disabled_checks"

# The name an envelope rewrite goes by among an entry's upgrade rules.
ENVELOPE_RULE = "envelope"

ALWAYS_FAIL = frozenset({K.GOLDEN_DATA_ERROR, K.COMPATIBILITY_BREAK, K.EXPORT_ERROR,
                         K.BELOW_MIN_CONSUMER})
STRICT_FAIL = frozenset({K.LOWERING_DRIFT, K.NUMERICS_CHANGE, K.EXPIRED, K.FUTURE_DATE,
                         K.STALE_TARGET, K.UNEXPECTED_PASS})
# The kinds that say the case's function computes something else today.
CHANGE_KINDS = frozenset({K.LOWERING_DRIFT, K.NUMERICS_CHANGE})


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


def _hosts(answer: dict[str, Any], manifest: dict[str, Any], where: str) -> _Hosts:
  recorded = manifest.get("host")
  replayed = answer.get("host")
  return _Hosts(None if recorded is None else Host.from_json(recorded, f"{where}: manifest"),
                None if replayed is None else Host.from_json(replayed, f"{where}: worker answer"))


def _reader_findings(r: dict, hosts: _Hosts) -> list[Finding]:
  """The breaks and drifts of one reader's replay."""
  name = r.get("reader", "?")
  if r.get("error"):
    refused = f" (upgrade refused: {r['upgrade_refused']})" if r.get("upgrade_refused") else ""
    return [Finding(K.COMPATIBILITY_BREAK,
                    f"{name} reader: {r.get('stage', '?')} failed: {r['error']}{refused}", name)]
  if not r.get("ok", False):
    return [Finding(K.COMPATIBILITY_BREAK, f"{name} reader: {p}", name)
            for p in r.get("problems") or ["results rejected"]]
  if r.get("stage") == "compare" and not r.get("exact", True):
    return [Finding(*_inexact(f"{name} reader", r.get("max_abs_err", 0.0), hosts), name)]
  return []


def _envelope_finding(reader: str, env: dict[str, Any]) -> tuple[FindingKind, str, str]:
  """An expired envelope that read after its rewrite: upgraded, when the measured reader
  policy of the installed jax predicts the refusal; a break when it says the layout reads."""
  consumer = _consumer()
  policy = _reader_policy.load()
  reading = policy.reading(consumer, env["layout"])
  what = (f"{reader} reader: the envelope (layout {env['layout']}, header version "
          f"{env['from_version']}) was refused: {env['error_before']}")
  if reading is not None and reading.status is _reader_policy.ReadStatus.READS:
    return (K.COMPATIBILITY_BREAK, f"{what}; but {policy.describe(consumer, env['layout'])}: "
                                   "the reader's policy changed since it was measured", reader)
  return (K.UPGRADED, f"{what}; read and matched the recorded outputs after "
                      f"jaxport.upgrade_envelope rewrote it (header version {env['to_version']}; "
                      f"{env['reason']}; {policy.describe(consumer, env['layout'])})", reader)


def _consumer() -> str | None:
  try:
    return md.version("jax")
  except md.PackageNotFoundError:
    return None


def classify(answer: dict[str, Any], *, entry_id: str, manifest: dict[str, Any],
             today: datetime.date, window_days: int,
             numerics_skipped: str | None = None) -> Outcome:
  """The outcome of one entry (the worker's ``answer`` to its replay): kinds found,
  messages, skips and staleness; no status yet. ``numerics_skipped``: why an entry with
  recorded outputs was checked the way lowering-only entries are (an accelerator's entry in
  a CPU run), for the skip ledger."""
  record_date = datetime.date.fromisoformat(manifest["record_date"])
  recorded_targets = sorted({s["target"] for s in manifest["custom_call_targets"]})
  days_to_expiry = window_days - (today - record_date).days
  findings: list[Finding] = []
  skips: list[str] = []
  facts: dict[str, Any] = {}

  def add(kind: FindingKind, message: str, reader: str | None = None) -> None:
    findings.append(Finding(kind, message, reader))

  if answer.get("crashed"):
    tail = (answer.get("stderr_tail") or "").strip()
    add(K.COMPATIBILITY_BREAK,
        f"the worker process died while replaying ({answer.get('why')}, "
        f"{exit_text(answer.get('returncode'))}); "
        + (f"its last stderr lines:\n{tail}" if tail else "it wrote nothing to stderr"))
  elif answer.get("golden_error"):
    add(K.GOLDEN_DATA_ERROR, f"golden data error: {answer['golden_error']}")
  elif answer.get("error"):
    add(K.COMPATIBILITY_BREAK, f"the harness could not replay the entry: {answer['error']}\n"
                               f"{answer.get('traceback', '')}")
  else:
    hosts = _hosts(answer, manifest, entry_id)
    for r in answer.get("readers", []):
      found = _reader_findings(r, hosts)
      findings += found
      if any(f.kind == K.COMPATIBILITY_BREAK for f in found):
        continue
      name = r.get("reader", "?")
      env = r.get("envelope")
      if env:
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), ENVELOPE_RULE}))
        add(*_envelope_finding(name, env))
      up = r.get("upgraded")
      if up:
        facts["upgrade_rules"] = tuple(sorted({*facts.get("upgrade_rules", ()), *up["rules"]}))
        add(K.UPGRADED, f"{name} reader: ran and matched the recorded outputs "
                        f"after jaxport.upgrade (rules {', '.join(up['rules'])}); before: "
                        f"{up['error_before']}", name)
    imported = manifest.get("imported_from") is not None
    if manifest["lowering_only"] or numerics_skipped is not None:
      skips.append(numerics_skipped or
                   "numerics not compared: lowering-only entry (its platform cannot run here)")
      read = next((r for r in answer.get("readers", []) if r.get("target_verdicts") is not None), None)
      if read is not None:
        facts["platforms"] = tuple(read.get("platforms") or ())
        facts["target_verdicts"] = dict(read["target_verdicts"])
        for target, verdict in sorted(read["target_verdicts"].items()):
          if verdict == TARGET_NOT_STABLE:
            add(K.STALE_TARGET, f"target {target} is not in the stable table of "
                                f"{'/'.join(read.get('platforms') or [])} "
                                "(jaxport/custom_calls/stable_targets.json): nothing promises it "
                                "still works")
    cur = answer.get("current", {})
    if not cur.get("available", False):
      skips.append(f"current lowering not checked: {cur.get('reason', 'unavailable')}")
    elif cur.get("error"):
      add(K.EXPORT_ERROR, f"the case cannot be exported today: {cur['error']}")
    else:
      facts["current_targets"] = tuple(cur.get("targets", []))
      facts["matched_case"] = cur.get("matched_case")
      # A lowering-only entry promises its signatures; an imported dataset is another
      # function than the case it is compared with, so a difference there is drift.
      against = f" of case {cur['matched_case']}" if cur.get("matched_case") else ""
      for line in cur.get("signature_diff", []):
        add(K.COMPATIBILITY_BREAK if manifest["lowering_only"] and not imported else K.LOWERING_DRIFT,
            f"current lowering{against}: {line}")
      gone = sorted(set(recorded_targets) - set(cur.get("targets", [])))
      if gone:
        add(K.STALE_TARGET, f"recorded targets {gone} are no longer emitted by today's lowering; "
                            "record a new entry for the new lowering and keep this one until it "
                            "expires")
      num = cur.get("numerics")
      if num is not None and not num.get("ok", True):
        for p in num.get("problems", []):
          add(K.NUMERICS_CHANGE, f"current lowering: {p}")
      elif num is not None and not num.get("exact", True):
        add(*_inexact("current lowering", num.get("max_abs_err", 0.0), hosts))
  if days_to_expiry < 0:
    add(K.EXPIRED, f"recorded {manifest['record_date']}, {-days_to_expiry} days past the "
                   f"{window_days}-day compat window; prune it (jaxport prune) once a newer entry "
                   "of the case exists")
  if record_date > today:
    add(K.FUTURE_DATE, f"recorded {manifest['record_date']}, {(record_date - today).days} days "
                       f"after today ({today}): no recording can come from the future, so the "
                       "record date is wrong (a bad clock or an edited entry) and the entry would "
                       "never expire; record the case again and remove this entry (jaxport prune "
                       "--dated-in-future)")
  return Outcome(entry_id=entry_id, case_id=manifest["case_id"], family=manifest["family"],
                 record_date=manifest["record_date"], days_to_expiry=days_to_expiry,
                 lowering_only=manifest["lowering_only"], targets=tuple(recorded_targets),
                 recorded_host=manifest.get("host"), replay_host=answer.get("host"),
                 findings=tuple(findings), skips=tuple(skips), **facts)


def min_consumer_findings(min_consumer: str, platform: str, range_: Any,
                          measured: tuple[str, ...], producer: str | None) -> list[Finding]:
  """A ``below_min_consumer`` finding when ``range_`` (a :class:`jaxport.releases.RunsOn`, None
  when it could not be computed) leaves out ``min_consumer`` or a measured release between it
  and ``producer`` on ``platform``; none when it covers them."""
  def key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))
  if range_ is None:
    return [Finding(K.BELOW_MIN_CONSUMER,
                    f"min_consumer {min_consumer}: the releases the entry runs on cannot be "
                    "computed from its blob, so that it runs on jax "
                    f"{min_consumer} is not shown; inspect it with `jaxport inspect ENTRY`")]
  if min_consumer not in measured:
    return [Finding(K.BELOW_MIN_CONSUMER,
                    f"min_consumer {min_consumer} is not a measured release of the release table "
                    f"(it measures {measured[0]} to {measured[-1]}); name a measured release, or "
                    "measure it with harness/tools/release_table.py")]
  lo = key(min_consumer)
  hi = max(lo, key(producer)) if producer is not None and producer in measured else lo
  for release in measured:
    if lo <= key(release) <= hi and not range_.covers(platform, release):
      why = range_.why_not(platform, release) or "not in the computed range"
      return [Finding(K.BELOW_MIN_CONSUMER,
                      f"min_consumer {min_consumer}: the entry does not run on jax {release} "
                      f"({platform}): {why}; it runs on {range_.summary(platform)}. Export the "
                      f"case for that consumer (jaxport.export(f, for_jax='{min_consumer}')) or "
                      "raise the case's min_consumer")]
  return []


def unreadable(entry_id: str, error: Exception) -> Outcome:
  """The outcome of an entry whose golden data cannot even be read."""
  _, family, case_id, _ = entry_id.split("/")
  return Outcome(entry_id=entry_id, case_id=case_id, family=family, record_date=None,
                 days_to_expiry=None, lowering_only=None, targets=(),
                 findings=(Finding(K.GOLDEN_DATA_ERROR, f"golden data error: {error}"),))


def status(outcome: Outcome, strict: bool, changes_fail: bool = False) -> Status:
  """The status of an outcome under the given strictness; with ``changes_fail``, a changed
  function fails as well."""
  kinds = set(outcome.kinds)
  # A declared min_consumer is the case's own promise: no producer-release expectation excuses it.
  if outcome.expected_failure and not kinds & {K.EXPORT_ERROR, K.GOLDEN_DATA_ERROR,
                                               K.BELOW_MIN_CONSUMER}:
    return Status.XFAIL
  if kinds & ALWAYS_FAIL or (changes_fail and kinds & CHANGE_KINDS):
    return Status.FAIL
  if kinds & STRICT_FAIL:
    return Status.FAIL if strict else Status.WARN
  if K.NUMERICS_DRIFT in kinds:
    return Status.DRIFT
  return Status.PASS
