"""Whether anything promises that a custom-call target of an entry keeps working: jaxport's
stable-target table, the project's declarations, or the artifact's own
``disabled_safety_checks``. The replay (from the module as the worker read it) and
``jaxport audit`` both judge a target here."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from jaxport._vocabulary import ALL_TARGETS, ANY_PLATFORM, Finding, FindingKind, Subject, TargetVerdict
from jaxport.custom_calls import _registry
from jaxport.errors import JaxportError
from jaxport.golden._manifest import CustomCallSignature
from jaxport.harness._project import ProjectTargets


class TargetStatus(enum.StrEnum):
  """A target's standing on one platform of an artifact (audit's ``status_by_platform``)."""
  STABLE = "stable"
  DECLARED = "declared stable by the project"
  ALLOWED = "allowed by the artifact's disabled_safety_checks"
  DELIBERATELY_UNSTABLE = "deliberately unstable"
  NO_GUARANTEE = "no compatibility guarantee"


# The statuses under which a target is promised, by someone, to keep working.
PROMISED = frozenset({TargetStatus.STABLE, TargetStatus.DECLARED, TargetStatus.ALLOWED})


def _table_stable(target: str, platform: str) -> bool:
  if target in _registry.stable_targets(ANY_PLATFORM):
    return True
  try:
    return target in _registry.stable_targets(platform)
  except JaxportError:  # a platform the table does not know
    return False


def target_statuses(target: str, platforms: Iterable[str],
                    declared: ProjectTargets | None = None,
                    allowed: frozenset[str] = frozenset()) -> dict[str, TargetStatus]:
  """``target``'s status on each of ``platforms`` (those the artifact was lowered for); with
  none, its status on any platform. ``allowed``: the targets the artifact's
  ``disabled_safety_checks`` allow (``ALL`` allows every one)."""
  declared = declared or ProjectTargets()
  unstable = _registry.deliberately_unstable()
  out = {}
  for p in list(platforms) or [ANY_PLATFORM]:
    if _table_stable(target, p):
      out[p] = TargetStatus.STABLE
    elif target in declared.stable(p):
      out[p] = TargetStatus.DECLARED
    elif target in allowed or ALL_TARGETS in allowed:
      out[p] = TargetStatus.ALLOWED
    elif target in unstable:
      out[p] = TargetStatus.DELIBERATELY_UNSTABLE
    else:
      out[p] = TargetStatus.NO_GUARANTEE
  return out


def target_verdict(statuses: Mapping[str, TargetStatus]) -> TargetVerdict:
  """The target's verdict over the artifact's platforms: stable when a table or the project
  promises it on one of them, allowed when only the artifact's own checks do, else not."""
  found = set(statuses.values())
  if found & {TargetStatus.STABLE, TargetStatus.DECLARED}:
    return TargetVerdict.STABLE
  if TargetStatus.ALLOWED in found:
    return TargetVerdict.ALLOWED_BY_DISABLED_CHECKS
  return TargetVerdict.NOT_STABLE


def module_target_verdicts(sigs: Iterable[CustomCallSignature], platforms: Iterable[str],
                           declared: ProjectTargets | None,
                           allowed: Iterable[str]) -> dict[str, TargetVerdict]:
  """Each custom-call target of ``sigs`` (an entry's) and its verdict on the ``platforms`` its
  module was lowered for, with the targets its ``disabled_safety_checks`` allow."""
  platforms, allowed = tuple(platforms), frozenset(allowed)
  return {t: target_verdict(target_statuses(t, platforms, declared, allowed))
          for t in sorted({s.target for s in sigs})}


def not_stable_finding(target: str, platforms: Iterable[str], subject: Subject,
                       reader: str | None = None) -> Finding:
  """The ``stale_target`` finding of a target nothing promises."""
  return Finding(FindingKind.STALE_TARGET, subject,
                 f"target {target} is not in the stable table of {'/'.join(platforms)} "
                 "(jaxport's stable-target table or the project's jaxport_stable_targets): "
                 "nothing promises it still works", reader)
