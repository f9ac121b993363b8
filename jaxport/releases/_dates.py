"""jax release dates and the backward-compatibility window.

jax promises that a serialized artifact keeps running on a jax/jaxlib up to
six months newer than the one that produced it. Whether an entry lies inside
that window is decided by release dates: the first upload of each release to the
package index, kept in the release table beside what was measured of it, so the
check needs no network.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator, Mapping

from jaxport._record_codec import json_record
from jaxport._records import Strict
from jaxport.errors import ReleaseTableError
from jaxport.releases._table import load, release_facts
from jaxport.releases._version_text import parse_version


class _TableDates(Mapping[str, str]):
  """Release -> its first upload date (ISO text), read from the release table on first use:
  the table's release set is jaxport's one list of jax releases, and each release's date is
  kept there beside what was measured of it."""

  def __init__(self) -> None:
    self._read: tuple[object, Mapping[str, str]] | None = None  # (the table, its dates)

  def _dates(self) -> Mapping[str, str]:
    table = load()
    if self._read is None or self._read[0] is not table:
      self._read = (table, {f.version: f.date.isoformat() for f in table.facts})
    return self._read[1]

  def __getitem__(self, version: str) -> str:
    return self._dates()[version]

  def __iter__(self) -> Iterator[str]:
    return iter(self._dates())

  def __len__(self) -> int:
    return len(self._dates())


# Release -> first upload date, for every release of the release table, oldest first.
RELEASE_DATES: Mapping[str, str] = _TableDates()

# jax's stated windows: a consumer up to six months newer than the producer
# (backward, counted as 183 days) or up to three weeks older (forward).
BACKWARD_WINDOW_DAYS = 183
FORWARD_WINDOW_DAYS = 21


def release_date(version: str) -> datetime.date:
  """The release date of jax ``version`` from :data:`RELEASE_DATES`."""
  parse_version(version)
  try:
    return datetime.date.fromisoformat(RELEASE_DATES[version])
  except KeyError:
    raise ValueError(
        f"No release date known for jax {version}: jaxport's release table does not list it. "
        "Upgrade to a jaxport that knows the release (in a jaxport source checkout: measure it "
        f"with the release-table tool, --releases {version} --date YYYY-MM-DD, the day its "
        "wheels were first published).") from None


@dataclasses.dataclass(frozen=True)
class WindowPosition:
  """Where a producer release stands relative to a consumer release."""
  producer: str
  producer_date: datetime.date
  consumer: str
  consumer_date: datetime.date
  age_days: int            # today - producer release date
  gap_days: int            # consumer release date - producer release date
  direction: str           # "backward" (consumer newer or same) or "forward"
  inside_window: bool      # within BACKWARD_/FORWARD_WINDOW_DAYS for the direction

  def to_dict(self) -> dict:
    """The position as JSON values (dates as ISO strings)."""
    d = dataclasses.asdict(self)
    d["producer_date"] = self.producer_date.isoformat()
    d["consumer_date"] = self.consumer_date.isoformat()
    return d


def window_position(producer: str, consumer: str, today: datetime.date) -> WindowPosition:
  """Whether artifacts of ``producer`` must run on ``consumer`` under jax's policy.

  A consumer released at most six months after the producer (backward) or at
  most three weeks before it (forward) must run the producer's artifacts.
  """
  p_date, c_date = release_date(producer), release_date(consumer)
  gap = (c_date - p_date).days
  direction = "backward" if gap >= 0 else "forward"
  inside = gap <= BACKWARD_WINDOW_DAYS if gap >= 0 else -gap <= FORWARD_WINDOW_DAYS
  return WindowPosition(producer=producer, producer_date=p_date, consumer=consumer,
                        consumer_date=c_date, age_days=(today - p_date).days, gap_days=gap,
                        direction=direction, inside_window=inside)


@json_record(Strict.raising(ReleaseTableError))
@dataclasses.dataclass(frozen=True)
class WindowExit:
  """When an artifact leaves ``consumer``'s window: its recording date plus the number of days
  that release reads envelopes for (``expiry_days`` of the release table); ``date`` None when
  it never does or that is unknown (``why`` says which)."""
  consumer: str | None
  window_days: int | None
  date: datetime.date | None
  why: str

  def text(self) -> str:
    if self.date is None:
      return self.why
    return f"{self.date.isoformat()} ({self.why})"


def window_exit(record_date: datetime.date | None, consumer: str | None) -> WindowExit:
  """The day an artifact recorded on ``record_date`` (None: not known, as of a bare blob)
  leaves the window of jax ``consumer`` (the running jax), from the release table."""
  if consumer is None:
    return WindowExit(None, None, None, "unknown: the running jax's version is not known")
  try:
    days = release_facts(consumer).expiry_days
  except ReleaseTableError:
    return WindowExit(consumer, None, None,
                      f"unknown: jaxport's release table does not list jax {consumer}")
  if days is None:
    return WindowExit(consumer, None, None,
                      f"none: jax {consumer} refuses no envelope for its age")
  if record_date is None:
    return WindowExit(consumer, days, None,
                      f"unknown: a bare blob records no date (jax {consumer}'s window is "
                      f"{days} days from it)")
  return WindowExit(consumer, days, record_date + datetime.timedelta(days=days),
                    f"recorded {record_date.isoformat()} + jax {consumer}'s {days}-day window")
