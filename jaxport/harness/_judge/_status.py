"""From an entry's findings to its status: which kinds fail always, which fail only under
``--strict`` or when the project's policy is that a changed function fails, which only
inform. The replay and ``jaxport audit`` both take an entry's status from here."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from jaxport._vocabulary import FindingKind, Status

K = FindingKind

ALWAYS_FAIL = frozenset({K.GOLDEN_DATA_ERROR, K.COMPATIBILITY_BREAK, K.EXPORT_ERROR,
                         K.BELOW_MIN_CONSUMER})
STRICT_FAIL = frozenset({K.LOWERING_DRIFT, K.SIGNATURE_CHANGE, K.NUMERICS_CHANGE, K.EXPIRED,
                         K.FUTURE_DATE, K.STALE_TARGET, K.UNEXPECTED_PASS})
# The kinds that say the case's function computes something else today.
CHANGE_KINDS = frozenset({K.LOWERING_DRIFT, K.SIGNATURE_CHANGE, K.NUMERICS_CHANGE})
# The kinds only running an entry can find: its results, today's export and its calling
# contract, an upgrade that made it run, its case's min_consumer, the expectations table.
# ``jaxport audit`` reads an artifact without running it, so these are all it cannot say.
RUN_ONLY_KINDS = frozenset({K.SIGNATURE_CHANGE, K.NUMERICS_CHANGE, K.NUMERICS_DRIFT,
                            K.NUMERICS_OTHER_HOST, K.UPGRADED, K.EXPORT_ERROR,
                            K.UNEXPECTED_PASS, K.BELOW_MIN_CONSUMER})
# What no expectations-table row excuses: the case's own promise (min_consumer), damaged data
# and a case that cannot be exported.
NEVER_EXCUSED = frozenset({K.EXPORT_ERROR, K.GOLDEN_DATA_ERROR, K.BELOW_MIN_CONSUMER})


@dataclasses.dataclass(frozen=True)
class Policy:
  """How strictly one entry is judged in one run.

  ``strict``: warnings fail (``--strict``). ``changes_fail``: a changed function fails
  without ``--strict`` (the project's ``on_change = fail``, for a case's newest entry).
  ``superseded``: the case has a newer entry, so this one's differences from today's
  function only warn. ``updating``: the run records every changed case anew
  (``--compat-update``), so a change warns, whatever else holds.
  """
  strict: bool = False
  changes_fail: bool = False
  superseded: bool = False
  updating: bool = False


def severity(kind: FindingKind, policy: Policy) -> Status:
  """What one finding of ``kind`` makes of an entry on its own under ``policy``."""
  if kind in CHANGE_KINDS and policy.updating:
    return Status.WARN
  if kind in ALWAYS_FAIL or (policy.changes_fail and kind in CHANGE_KINDS):
    return Status.FAIL
  if kind in STRICT_FAIL:
    if kind in CHANGE_KINDS and policy.superseded:
      return Status.WARN
    return Status.FAIL if policy.strict else Status.WARN
  if kind is K.NUMERICS_DRIFT:
    return Status.DRIFT
  return Status.PASS


# The statuses in the order the worst of several wins.
_ORDER = (Status.PASS, Status.DRIFT, Status.WARN, Status.FAIL)


def status_of(kinds: Iterable[FindingKind], policy: Policy,
              expected_failure: bool = False) -> Status:
  """The status of an entry with findings of ``kinds``: the worst severity among them, or
  ``xfail`` when the expectations table excuses its failure (``expected_failure``) and no
  kind that nothing excuses is among them."""
  kinds = set(kinds)
  if expected_failure and not kinds & NEVER_EXCUSED:
    return Status.XFAIL
  return max((severity(k, policy) for k in kinds), key=_ORDER.index, default=Status.PASS)
