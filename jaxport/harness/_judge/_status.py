"""From an entry's findings to its status: which kinds fail always, which fail only under
``--strict`` or when the project's policy is that a changed function fails, which only
inform. The replay and ``jaxport audit`` both take an entry's status from here."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from jaxport._vocabulary import (ALWAYS_FAIL, CHANGE_KINDS, NEVER_EXCUSED, STRICT_FAIL,
                                 UPDATE_KINDS, FindingKind, Status)

K = FindingKind

@dataclasses.dataclass(frozen=True)
class Policy:
  """How strictly one entry is judged in one run.

  ``strict``: warnings fail (``--strict``). ``changes_fail``: a changed function fails
  without ``--strict`` (the project's ``on_change = fail``, for a case's newest entry).
  ``superseded``: the case has a newer entry, so this one's differences from today's
  function, and an error of the checker it was recorded with, only warn.
  ``checker_fixed``: the entry is its case's newest and the case's checker today accepts its
  recorded outputs, so an update run records the case anew and its checker error only warns.
  ``updating``: the run records every changed case anew (``--compat-update``), so a change
  warns, whatever else holds.
  """
  strict: bool = False
  changes_fail: bool = False
  superseded: bool = False
  updating: bool = False
  checker_fixed: bool = False


def severity(kind: FindingKind, policy: Policy) -> Status:
  """What one finding of ``kind`` makes of an entry on its own under ``policy``."""
  if kind in UPDATE_KINDS and policy.updating:
    return Status.WARN
  if kind is K.CHECKER_ERROR and policy.updating and policy.checker_fixed:
    return Status.WARN
  if kind is K.CHECKER_ERROR and policy.superseded:
    # Its manifest keeps the checker it was recorded with; the case's newer entry is judged
    # with today's.
    return Status.FAIL if policy.strict else Status.WARN
  if kind in ALWAYS_FAIL or (policy.changes_fail and kind in CHANGE_KINDS):
    return Status.FAIL
  if kind in STRICT_FAIL:
    if kind in UPDATE_KINDS and policy.superseded:
      return Status.WARN
    return Status.FAIL if policy.strict else Status.WARN
  if kind is K.NUMERICS_DRIFT:
    return Status.DRIFT
  return Status.PASS


# The statuses in the order the worst of several wins.
_ORDER = (Status.PASS, Status.DRIFT, Status.WARN, Status.FAIL)


def worst_first(kind: FindingKind, policy: Policy) -> int:
  """A sort key putting the findings that fail an entry before those that warn or inform."""
  return -_ORDER.index(severity(kind, policy))


def status_of(kinds: Iterable[FindingKind], policy: Policy,
              expected_failure: bool = False) -> Status:
  """The status of an entry with findings of ``kinds``: the worst severity among them, or
  ``xfail`` when the expectations table excuses its failure (``expected_failure``) and no
  kind that nothing excuses is among them."""
  kinds = set(kinds)
  if expected_failure and not kinds & NEVER_EXCUSED:
    return Status.XFAIL
  return max((severity(k, policy) for k in kinds), key=_ORDER.index, default=Status.PASS)
