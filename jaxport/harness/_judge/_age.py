"""An entry's age against today and the compat window: expired, or dated after today.

The replay and ``jaxport audit`` both take these findings from here, so an entry is expired
(a warning, a failure under ``--strict``) in both or in neither."""

from __future__ import annotations

import datetime

from jaxport._vocabulary import Finding, FindingKind, Subject

# Below this many days left, audit notes that an entry expires soon.
SOON_DAYS = 30


def days_to_expiry(record_date: datetime.date, today: datetime.date, window_days: int) -> int:
  """Days left in the compat window for an entry recorded on ``record_date`` (negative:
  expired that many days ago)."""
  return window_days - (today - record_date).days


def age_findings(record_date: datetime.date, today: datetime.date,
                 window_days: int) -> list[Finding]:
  """``expired`` when the entry is past the window, ``future_date`` when it is dated after
  today (its date is wrong, and it would never expire)."""
  iso = record_date.isoformat()
  left = days_to_expiry(record_date, today, window_days)
  out = []
  if left < 0:
    out.append(Finding(FindingKind.EXPIRED, Subject.AGE,
                       f"recorded {iso}, {-left} days past the {window_days}-day compat window; "
                       "prune it (jaxport prune) once a newer entry of the case exists"))
  if record_date > today:
    out.append(Finding(FindingKind.FUTURE_DATE, Subject.AGE,
                       f"recorded {iso}, {(record_date - today).days} days after today "
                       f"({today}): no recording can come from the future, so the record date "
                       "is wrong (a bad clock or an edited entry) and the entry would never "
                       "expire; record the case again and remove this entry (jaxport prune "
                       "--dated-in-future)"))
  return out
