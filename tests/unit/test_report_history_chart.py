"""The history chart's run labels: runs sharing a date have labels as long as any, and still
each one lies apart from its neighbours and inside the chart."""

import math
import re

from jaxport.report._svg import status_chart
from jaxport.report._views import CellStatus

# The CSS of the page draws labels at 11px; a digit or a sign of it is at most 7px wide.
FONT_PX = 11
CHAR_PX = 7


def _labels(svg: str) -> list[tuple[float, float, float, str]]:
  """(x, y, rotation in degrees, text) of each run label."""
  found = re.findall(r'<text transform="translate\(([\d.]+),([\d.]+)\) rotate\(([\d.]+)\)" '
                     r'class="axis">([^<]*)</text>', svg)
  return [(float(x), float(y), float(a), t) for x, y, a, t in found]


def test_labels_of_runs_sharing_a_date_neither_overlap_nor_leave_the_chart():
  labels = ["2026-11-20", "2026-11-22 #1", "2026-11-22 #2", "2026-11-22 #3", "2026-11-23"]
  svg = status_chart(labels, [{CellStatus.PASS: 10, CellStatus.FAIL: 1}] * len(labels))
  placed = _labels(svg)
  assert [t for *_, t in placed] == labels
  height = float(re.search(r'<svg [^>]*height="([\d.]+)"', svg).group(1))
  for (x0, _, angle, _), (x1, *_) in zip(placed, placed[1:]):
    # Parallel labels rotated by ``angle`` lie (x1 - x0) * sin(angle) apart, across their lines.
    assert (x1 - x0) * math.sin(math.radians(angle)) >= 1.5 * FONT_PX
  for x, y, angle, text in placed:
    drop = len(text) * CHAR_PX * math.sin(math.radians(angle))
    assert y + drop <= height, f"{text!r} runs past the chart's bottom edge"
