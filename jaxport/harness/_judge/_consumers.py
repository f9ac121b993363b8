"""The jax releases an entry runs on, against the oldest consumer its case promises
(``min_consumer``): computed from the release table and the features the worker read from
the entry's blob."""

from __future__ import annotations

from collections.abc import Mapping

from jaxport._vocabulary import Finding, FindingKind, Subject
from jaxport.errors import JaxportError
from jaxport.releases import ArtifactFeatures, RunsOn, lazy_lapack_caveat, parse_version, runs_on
from jaxport.releases import releases as table_releases


def releases_run_on(features: Mapping | None, features_error: str | None,
                    project_targets: frozenset[str]
                    ) -> tuple[RunsOn | None, str | None, ArtifactFeatures | None]:
  """The releases per platform an entry with the blob ``features`` runs on (the project
  registers ``project_targets`` itself), or None with why it could not be computed; and the
  features read."""
  if features is None:
    return None, features_error, None
  try:
    read = ArtifactFeatures.from_dict(features)
    return runs_on(read, project_targets=project_targets), None, read
  except (ValueError, JaxportError) as e:
    return None, str(e), None


def measured_releases() -> tuple[str, ...]:
  """The releases the release table measures, oldest first."""
  return tuple(f.version for f in table_releases() if f.measured)


def unreadable_features_finding(min_consumer: str, error: str) -> Finding:
  """The failure of an entry whose case promises ``min_consumer`` while the features its blob
  needs of a consumer do not read (``error``): the promise cannot be checked, so it is not
  kept, whatever the readers did."""
  return Finding(FindingKind.BELOW_MIN_CONSUMER, Subject.CONSUMERS,
                 f"min_consumer {min_consumer}: what the entry needs of a consumer cannot be "
                 f"read from its blob ({error}), so that it runs on jax {min_consumer} cannot "
                 "be checked; inspect it with `jaxport inspect ENTRY`, and record the case "
                 "again if its blob is at fault")


def min_consumer_findings(min_consumer: str, platform: str, range_: RunsOn | None,
                          measured: tuple[str, ...], producer: str | None,
                          why: str | None = None,
                          features: ArtifactFeatures | None = None) -> list[Finding]:
  """A ``below_min_consumer`` finding when ``range_`` leaves out ``min_consumer`` or a
  measured release between it and ``producer`` on ``platform``; a ``min_consumer_unknown``
  one when that cannot be said (``range_`` None, ``why`` saying why where known, or a
  ``min_consumer`` the table does not measure); none when it covers them. A range naming a
  release before jax registered its LAPACK kernels eagerly carries that caveat when the blob's
  ``features`` call LAPACK."""
  if range_ is None:
    because = f" ({why})" if why else ""
    return [Finding(FindingKind.MIN_CONSUMER_UNKNOWN, Subject.CONSUMERS,
                    f"min_consumer {min_consumer}: the releases the entry runs on cannot be "
                    f"computed from its blob{because}, so that it runs on jax "
                    f"{min_consumer} is not shown; inspect it with `jaxport inspect ENTRY`")]
  if min_consumer not in measured:
    return [Finding(FindingKind.MIN_CONSUMER_UNKNOWN, Subject.CONSUMERS,
                    f"min_consumer {min_consumer} is not a measured release of the release table "
                    f"(it measures {measured[0]} to {measured[-1]}); name a measured release, or "
                    "upgrade to a jaxport whose release table measures it")]
  lo = parse_version(min_consumer)
  hi = max(lo, parse_version(producer)) if producer is not None and producer in measured else lo
  for release in measured:
    if lo <= parse_version(release) <= hi and not range_.covers(platform, release):
      why = range_.why_not(platform, release) or "not in the computed range"
      caveat = None if features is None else lazy_lapack_caveat(
          features, platform, tuple(range_.releases.get(platform, ())))
      runs = range_.summary(platform) + ("" if caveat is None else f" ({caveat})")
      return [Finding(FindingKind.BELOW_MIN_CONSUMER, Subject.CONSUMERS,
                      f"min_consumer {min_consumer}: the entry does not run on jax {release} "
                      f"({platform}): {why}; it runs on {runs}. Export the "
                      f"case for that consumer (Case(..., for_jax='{min_consumer}'), as "
                      f"jaxport.export(f, for_jax='{min_consumer}') does) or raise the case's "
                      "min_consumer")]
  return []
