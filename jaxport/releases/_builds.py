"""What a run's jax build is, next to the release table: a measured release, or a build the
table has no measurement for (a nightly, a release newer than the table).

A nightly's version carries its build date (``0.12.1.dev20261202``); it sorts after the
release it builds towards is measured only once that release is in the table, so a dev
build of a release the table lacks is "newer than the newest measured release", and
nothing the table says about where an artifact runs covers it.
"""

from __future__ import annotations

import dataclasses
import datetime
import re

from jaxport.releases._version_text import VERSION_RE
from jaxport.releases._table import releases as table_releases

# ``.devYYYYMMDD`` after the release numbers (jax's nightly wheels).
_DEV_DATE = re.compile(r"\.dev(\d{4})(\d{2})(\d{2})")


@dataclasses.dataclass(frozen=True)
class Build:
  """One jax version as a consumer: its release numbers, its nightly date, and its place
  beside the measured release table."""
  version: str
  release: tuple[int, ...]
  # The build date of a nightly (``.devYYYYMMDD``); None for a release.
  built: datetime.date | None
  # Whether the release table holds measurements of exactly this version.
  measured: bool
  # The newest release the table measured.
  newest_measured: str

  @property
  def nightly(self) -> bool:
    return self.built is not None

  @property
  def newer_than_table(self) -> bool:
    """Whether the build is past every measured release (a nightly of the next release, or a
    release the table does not list yet)."""
    newest = _numbers(self.newest_measured)
    return self.release > newest or (self.release == newest and not self.measured
                                     and not self.nightly)

  @property
  def runs_on(self) -> str:
    """``measured`` when the table covers the build; ``unmeasured`` otherwise: no predicted
    range of an artifact names it."""
    return "measured" if self.measured else "unmeasured"

  def describe(self) -> str:
    """One line for a report's header: what the build is and what the table says of it."""
    if self.measured:
      return f"jax {self.version}: a release the table measured"
    what = (f"a nightly build of {self.built.isoformat()}" if self.built is not None
            else "a build the release table does not list")
    where = (f"newer than the newest measured release {self.newest_measured}"
             if self.newer_than_table else
             f"not among the measured releases (newest {self.newest_measured})")
    return f"jax {self.version}: {what}, {where}; runs_on: unmeasured"


def _numbers(version: str) -> tuple[int, ...]:
  """The release numbers a version starts with (``0.12.1`` of ``0.12.1.dev20261202``)."""
  m = VERSION_RE.match(version)
  if m is None:
    raise ValueError(f"jax version {version!r} does not start with MAJOR.MINOR.PATCH.")
  return tuple(int(g) for g in m.groups() if g is not None)


def build_of(version: str) -> Build:
  """The :class:`Build` of jax ``version`` (a release, ``0.12.1.dev20261202``, ``0.13.0rc1``);
  a ValueError naming the version when it does not start with release numbers."""
  version = str(version)
  release = _numbers(version)
  dev = _DEV_DATE.search(version)
  built = None
  if dev is not None:
    try:
      built = datetime.date(*(int(g) for g in dev.groups()))
    except ValueError:
      raise ValueError(f"jax version {version!r} names no real build date after .dev "
                       "(expected .devYYYYMMDD).") from None
  measured_versions = [f.version for f in table_releases()]
  return Build(version, release, built, version in measured_versions, measured_versions[-1])
