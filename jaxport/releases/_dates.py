"""jax release dates and the backward-compatibility window (kept by hand).

jax promises that a serialized artifact keeps running on a jax/jaxlib up to
six months newer than the one that produced it. Whether an entry lies inside
that window is decided by release dates, kept here (first upload of each
release to the package index) so the check needs no network.
"""

from __future__ import annotations

import dataclasses
import datetime
import re

# First upload date of each jax release to the package index; add new
# releases at the end of each minor line. 0.12.0.1: the date its wheel's files carry.
RELEASE_DATES: dict[str, str] = {
    "0.4.26": "2024-04-03", "0.4.27": "2024-05-07", "0.4.28": "2024-05-09", "0.4.29": "2024-06-10",
    "0.4.30": "2024-06-18", "0.4.31": "2024-07-30", "0.4.33": "2024-09-16",
    "0.4.34": "2024-10-04", "0.4.35": "2024-10-22", "0.4.36": "2024-12-05",
    "0.4.37": "2024-12-10", "0.4.38": "2024-12-17",
    "0.5.0": "2025-01-17", "0.5.1": "2025-02-24", "0.5.2": "2025-03-05", "0.5.3": "2025-03-19",
    "0.6.0": "2025-04-17", "0.6.1": "2025-05-21", "0.6.2": "2025-06-17",
    "0.7.0": "2025-07-22", "0.7.1": "2025-08-20", "0.7.2": "2025-09-16",
    "0.8.0": "2025-10-15", "0.8.1": "2025-11-18", "0.8.2": "2025-12-18", "0.8.3": "2026-01-29",
    "0.9.0": "2026-01-20", "0.9.1": "2026-03-02", "0.9.2": "2026-03-18",
    "0.10.0": "2026-04-16", "0.10.1": "2026-05-20", "0.10.2": "2026-06-17",
    "0.11.0": "2026-07-16", "0.11.1": "2026-08-17", "0.11.2": "2026-09-17",
    "0.12.0": "2026-10-19", "0.12.0.1": "2026-10-20",
}

# jax's stated windows: a consumer up to six months newer than the producer
# (backward, counted as 183 days) or up to three weeks older (forward).
BACKWARD_WINDOW_DAYS = 183
FORWARD_WINDOW_DAYS = 21

# MAJOR.MINOR.PATCH and jax's optional fourth number (0.12.0.1).
VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(version: str) -> tuple[int, ...]:
  """``"0.9.2"`` -> ``(0, 9, 2)``; a ValueError naming the format otherwise."""
  m = VERSION_RE.fullmatch(str(version))
  if m is None:
    raise ValueError(f"jax version {version!r} is not of the form MAJOR.MINOR.PATCH (e.g. 0.9.2).")
  return tuple(int(g) for g in m.groups() if g is not None)


def release_date(version: str) -> datetime.date:
  """The release date of jax ``version`` from :data:`RELEASE_DATES`."""
  parse_version(version)
  try:
    return datetime.date.fromisoformat(RELEASE_DATES[version])
  except KeyError:
    raise ValueError(
        f"No release date known for jax {version}. Add it to RELEASE_DATES "
        "(jaxport.releases.RELEASE_DATES: the date its wheels were first published), or "
        "upgrade to a jaxport that knows the release.") from None


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
