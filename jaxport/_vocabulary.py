"""The harness's shared vocabulary: platforms, statuses, finding kinds and subjects, and the
finding itself.

A leaf module (it imports no jax, and nothing of jaxport but the platform table, a leaf
itself), so that the pytest plugin's entry point, the report package and the harness all name
these once, from here.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

# The platforms a golden entry is recorded for, in the order reports list them.
from jaxport._platforms import PLATFORMS as PLATFORMS  # noqa: E402, F401
# The key of targets declared stable on every platform (stable-target tables, project files).
ANY_PLATFORM = "any"
# The target a DisabledSafetyCheck.custom_call names to allow every custom-call target.
ALL_TARGETS = "ALL"

# Days a golden entry stays inside jaxport's compat window after its record date; older
# entries are reported as expired (``--compat-window-days``, ``jaxport audit --window-days``).
# jaxport's own window for its golden entries, kept apart from jax's policy window
# (``jaxport.releases.BACKWARD_WINDOW_DAYS``, 183 days between two jax releases).
EXPIRY_WINDOW_DAYS = 180

# Seconds one worker request (replaying or recording one entry) may take before the worker
# is killed and the entry fails (``--compat-worker-timeout``).
WORKER_TIMEOUT_S = 300.0
# The longest ``--compat-worker-timeout`` accepted: a week, far past any real entry.
MAX_WORKER_TIMEOUT_S = 7 * 24 * 3600.0


class Status(enum.StrEnum):
  """The verdict on one entry in one run, as the harness reports it."""
  PASS = "pass"
  DRIFT = "drift"    # results within tolerance but not bitwise equal
  WARN = "warn"      # drift or staleness that fails only under --compat-strict
  XFAIL = "xfail"    # an expected failure of an old producer release
  FAIL = "fail"


class FindingKind(enum.StrEnum):
  """What one finding of an entry says; the harness's finding vocabulary, worst first.

  Each kind's side, severity and where it counts are its row of :data:`KINDS`; their meanings
  are in ``jaxport/harness/_judge/__init__.py``.
  """
  # The entry's own files are damaged (a hash, the manifest, an array file): always fails.
  GOLDEN_DATA_ERROR = "golden_data_error"
  COMPATIBILITY_BREAK = "compatibility_break"
  EXPORT_ERROR = "export_error"
  # The case's checker raised while it judged outputs (a reader's or today's): the case's
  # code is at fault, not the entry or jax. Always fails; warns for an entry its case has
  # a newer one of (the checker it was recorded with stays in its manifest).
  CHECKER_ERROR = "checker_error"
  # The releases the entry runs on (computed from the release table) leave out its case's
  # min_consumer, or a release between that and the producer: always fails.
  BELOW_MIN_CONSUMER = "below_min_consumer"
  # Whether the entry runs on its case's min_consumer is not known: the range cannot be computed
  # from its blob, or the release table does not measure that release. Warns (fails under
  # --compat-strict): what was not measured is neither a pass nor a break.
  MIN_CONSUMER_UNKNOWN = "min_consumer_unknown"
  LOWERING_DRIFT = "lowering_drift"
  # Today's export is called with other input or output trees, dtypes, shapes, shardings or
  # effects than the entry: the artifact's calling contract changed. As a function change.
  SIGNATURE_CHANGE = "signature_change"
  # Today's export is lowered for platforms the entry was not (and for all it was): the
  # artifact changed, and every old caller still loads it. Warns (fails under --compat-strict);
  # --compat-update records the case anew. A platform removed is a signature change.
  PLATFORMS_ADDED = "platforms_added"
  # Today's export no longer donates an input the entry's module donates: the artifact changed,
  # and every old caller still calls it (it keeps the buffer). Warns (fails under
  # --compat-strict); --compat-update records the case anew. A donation added is a signature
  # change.
  DONATION_REMOVED = "donation_removed"
  NUMERICS_CHANGE = "numerics_change"
  NUMERICS_DRIFT = "numerics_drift"
  # Within tolerance, not bitwise, on a host of another class than the recording one: a pass.
  NUMERICS_OTHER_HOST = "numerics_other_host"
  PRODUCER_DRIFT = "producer_drift"   # drift of an older release's entry: the release difference
  # A lowering difference of another release's entry with no evidence that jax made it: no
  # entry of the case recorded by the replaying jax has today's lowering. Warns (fails under
  # --compat-strict): the function's owner may have changed it.
  DRIFT_UNATTRIBUTED = "drift_unattributed"
  EXPIRED = "expired"
  FUTURE_DATE = "future_date"
  STALE_TARGET = "stale_target"
  UNEXPECTED_PASS = "unexpected_pass"
  # The case's code changed a jax setting (jax.config.update) while the entry was replayed;
  # the worker put it back before the next entry. Warns (fails under --compat-strict).
  JAX_CONFIG_CHANGED = "jax_config_changed"
  UPGRADED = "upgraded"


class Side(enum.StrEnum):
  """Whose a finding is: what the entry's owner, jax or the case's author would look at."""
  ARTIFACT = "artifact"  # the entry itself: its files, its age, its promise (min_consumer)
  JAX = "jax"            # the readers and jax's own lowering across releases
  CASE = "case"          # the case's function, checker, code or the project's tables


class Severity(enum.StrEnum):
  """What one finding makes of an entry on its own (``jaxport.harness._judge._status``)."""
  FAIL = "fail"        # always fails
  STRICT = "strict"    # warns; fails under --compat-strict
  DRIFT = "drift"      # reported as drift
  INFO = "info"        # reported only: the entry passes


@dataclasses.dataclass(frozen=True)
class KindFacts:
  """One finding kind's row: its side, its severity, and where it counts.

  ``change``: the case's function computes something else today (fails where the project's
  policy is that a change fails). ``updated``: ``--compat-update`` records its case anew.
  ``needs_run``: only running the entry finds it (``jaxport audit`` reads without running).
  ``never_excused``: no expectations-table row excuses it. ``drift``: the report's drift
  section lists it. ``release_difference``: on an entry an older release recorded it is the
  release difference itself (producer drift), never a failure."""
  side: Side
  severity: Severity
  change: bool = False
  updated: bool = False
  needs_run: bool = False
  never_excused: bool = False
  drift: bool = False
  release_difference: bool = False


_A, _J, _C = Side.ARTIFACT, Side.JAX, Side.CASE
_F, _S, _D, _I = Severity.FAIL, Severity.STRICT, Severity.DRIFT, Severity.INFO
_K = FindingKind
# Every finding kind's row, defined once here (what each makes of an entry: ``_judge``).
KINDS: dict[FindingKind, KindFacts] = {
    _K.GOLDEN_DATA_ERROR: KindFacts(_A, _F, never_excused=True),
    _K.COMPATIBILITY_BREAK: KindFacts(_J, _F),
    _K.EXPORT_ERROR: KindFacts(_C, _F, needs_run=True, never_excused=True),
    _K.CHECKER_ERROR: KindFacts(_C, _F, needs_run=True, never_excused=True),
    _K.BELOW_MIN_CONSUMER: KindFacts(_A, _F, needs_run=True, never_excused=True),
    _K.MIN_CONSUMER_UNKNOWN: KindFacts(_A, _S, needs_run=True),
    _K.LOWERING_DRIFT: KindFacts(_C, _S, change=True, updated=True, drift=True,
                                 release_difference=True),
    _K.SIGNATURE_CHANGE: KindFacts(_C, _S, change=True, updated=True, drift=True),
    _K.PLATFORMS_ADDED: KindFacts(_C, _S, updated=True, drift=True),
    _K.DONATION_REMOVED: KindFacts(_C, _S, updated=True, drift=True),
    _K.NUMERICS_CHANGE: KindFacts(_C, _S, change=True, updated=True, needs_run=True, drift=True),
    _K.NUMERICS_DRIFT: KindFacts(_J, _D, needs_run=True, drift=True),
    _K.NUMERICS_OTHER_HOST: KindFacts(_J, _I, needs_run=True),
    _K.PRODUCER_DRIFT: KindFacts(_J, _I, drift=True),
    _K.DRIFT_UNATTRIBUTED: KindFacts(_C, _S, drift=True),
    _K.EXPIRED: KindFacts(_A, _S),
    _K.FUTURE_DATE: KindFacts(_A, _S),
    _K.STALE_TARGET: KindFacts(_A, _S, release_difference=True),
    _K.UNEXPECTED_PASS: KindFacts(_C, _S, needs_run=True),
    _K.JAX_CONFIG_CHANGED: KindFacts(_C, _S, needs_run=True),
    _K.UPGRADED: KindFacts(_J, _I, needs_run=True),
}
_missing = set(FindingKind) - set(KINDS)
if _missing:  # a kind without its row: its status would be nobody's decision
  raise TypeError(f"finding kinds without a row in KINDS: {sorted(_missing)}")


def _kinds(**wanted: object) -> frozenset[FindingKind]:
  return frozenset(k for k, f in KINDS.items()
                   if all(getattr(f, name) == value for name, value in wanted.items()))


# The sets the judge and the report read, each from the table.
ALWAYS_FAIL = _kinds(severity=Severity.FAIL)
STRICT_FAIL = _kinds(severity=Severity.STRICT)
# The kinds that say the case's function computes something else today.
CHANGE_KINDS = _kinds(change=True)
# The kinds whose case ``--compat-update`` records anew: a changed function, and an artifact
# that today's export ships for more platforms or donates fewer inputs (warnings, as no caller
# breaks).
UPDATE_KINDS = _kinds(updated=True)
# The kinds only running an entry can find. ``jaxport audit`` reads an artifact without running
# it (it lowers the case and compares the calling contract, as the replay does), so these are
# all it cannot say.
RUN_ONLY_KINDS = _kinds(needs_run=True)
# What no expectations-table row excuses: the case's own promise (min_consumer), damaged data,
# a case that cannot be exported and a checker that raises.
NEVER_EXCUSED = _kinds(never_excused=True)
# The kinds the report's ``drift`` section lists: differences between an entry and today's
# lowering or readers that are not breaks.
DRIFT_KINDS = _kinds(drift=True)
# Kinds of findings on an entry that jax.export of an older release recorded which are the
# release difference itself: reported as producer drift, never a failure (nobody can
# re-record with that release's lowering of today's case).
RELEASE_DIFFERENCE_KINDS = _kinds(release_difference=True)


class Subject(enum.StrEnum):
  """What a finding is about: where in the replay of an entry it came from."""
  GOLDEN_DATA = "golden_data"    # the entry's own files
  WORKER = "worker"              # the process replaying it (a crash, an error of the harness)
  READER = "reader"              # one reader's replay of the recorded blob
  TODAY = "today"                # today's lowering of the entry's case
  CHECKER = "checker"            # the case's checker, judging outputs (a reader's, today's)
  AGE = "age"                    # the entry's record date against today and the compat window
  CONSUMERS = "consumers"        # the jax releases the entry runs on, against its min_consumer
  EXPECTATION = "expectation"    # the project's expectations table for the producer release


@dataclasses.dataclass(frozen=True)
class Finding:
  """One finding about one entry: its kind, its subject, what it says, the reader whose
  replay found it (None unless the subject is one reader's replay), and ``detail``: the
  difference itself without the message's lead-in naming the subject (a signature line,
  a numerics problem), for tools that list differences; None when the message is all."""

  kind: FindingKind
  subject: Subject
  message: str
  reader: str | None = None
  detail: str | None = None

  @property
  def text(self) -> str:
    """The finding as the report's ``messages`` list writes it."""
    return f"[{self.kind}] {self.message}"

  def rekinded(self, kind: FindingKind) -> Finding:
    return dataclasses.replace(self, kind=kind)

  # Written by hand, not by jaxport._record_codec: this module imports the standard library
  # alone, so its reader takes the caller's Strict (the codec reads it so, nested in a record).
  def to_json(self) -> dict[str, Any]:
    return {"kind": str(self.kind), "subject": str(self.subject), "message": self.message,
            "reader": self.reader, "detail": self.detail}

  @classmethod
  def from_json(cls, d: Any, where: str, strict: Any) -> Finding:
    """The finding ``to_json`` wrote, read by ``strict``: the caller's
    ``jaxport._records.Strict`` (passed in, as the vocabulary imports only the standard
    library), raising the caller's own error naming the field for anything else."""
    d = strict.record(cls, d, where)
    return cls(strict.enum(FindingKind, d["kind"], f"{where}.kind"),
               strict.enum(Subject, d["subject"], f"{where}.subject"),
               strict.of(d["message"], str, f"{where}.message"),
               strict.of(d["reader"], str, f"{where}.reader", nullable=True),
               strict.of(d["detail"], str, f"{where}.detail", nullable=True))


class RecordAction(enum.StrEnum):
  """What recording (``--compat-record``, ``--compat-update``) did for one case; the report's
  ``recorded[].action`` and its ``summary`` counts use these strings."""
  WRITTEN = "written"      # a new entry is in the store
  UNCHANGED = "unchanged"  # today's recording equals an entry of the same day: nothing written
  CONFLICT = "conflict"    # an entry of the same day differs: nothing written
  ERROR = "error"          # the case could not be recorded


class TargetVerdict(enum.StrEnum):
  """A custom-call target of a lowering-only entry, judged against the stable tables of the
  platforms its module was lowered for (the report's ``target_verdicts``)."""
  STABLE = "stable"
  NOT_STABLE = "not_stable"
  # Not stable, but the module's own disabled_safety_checks allow it: its producer vouches for it.
  ALLOWED_BY_DISABLED_CHECKS = "allowed_by_disabled_checks"


class ExpectationVerdict(enum.StrEnum):
  """An entry's outcome judged against the project's expectations table for its producer
  release (the report's ``release.verdict``)."""
  PASS = "pass"                                # expected to pass, passed
  UPGRADED = "upgraded"                        # passed after jaxport.upgrade, outside the window
  EXPECTED_FAILURE = "expected_failure"        # expected to fail, failed as stated
  UNEXPECTED_FAILURE = "unexpected_failure"    # expected to pass, failed
  WRONG_FAILURE = "wrong_failure"              # expected to fail, failed for another reason
  UNEXPECTED_PASS = "unexpected_pass"          # expected to fail, passed: the row is stale
  POLICY_VIOLATION = "policy_violation"        # failing inside jax's backward window
  OUTSIDE_FORWARD_WINDOW = "outside_forward_window"  # a newer producer, failing: reported only

  @property
  def ok(self) -> bool:
    """Whether the verdict lets the run pass."""
    return self in _OK_EXPECTATION_VERDICTS


_OK_EXPECTATION_VERDICTS = frozenset({ExpectationVerdict.PASS, ExpectationVerdict.UPGRADED,
                                      ExpectationVerdict.EXPECTED_FAILURE,
                                      ExpectationVerdict.OUTSIDE_FORWARD_WINDOW})
