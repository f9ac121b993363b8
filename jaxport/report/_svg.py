"""A stacked bar chart of entry statuses per run, as inline SVG (no script, no fonts to fetch)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from jaxport.report._views import ENTRY_STATUSES, CellStatus

BAR = 28
GAP = 14
HEIGHT = 160
LEFT = 44
TOP = 12
# The labels run down from the axis, one per bar: the width an 11px character takes at most,
# so the space below the axis fits the longest label whole.
CHAR_WIDTH = 7
LABEL_GAP = 8


def status_chart(labels: Sequence[str], counts: Sequence[dict[CellStatus, int]]) -> str:
  """One stacked bar per run (oldest left), an axis with the largest total, a legend.

  Each run's label is written downwards under its bar (labels of runs that share a date, such
  as ``2026-11-22 #2``, are as long as any), so neighbours never overlap and none is cut off."""
  n = len(labels)
  most = max((sum(c.values()) for c in counts), default=0) or 1
  width = LEFT + n * (BAR + GAP) + GAP + 170
  bottom = LABEL_GAP + CHAR_WIDTH * max((len(x) for x in labels), default=0) + LABEL_GAP
  total_h = TOP + HEIGHT + bottom
  scale = HEIGHT / most
  parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
           f'height="{total_h}" viewBox="0 0 {width} {total_h}" role="img" '
           f'aria-label="entry statuses over {n} runs">',
           f'<line x1="{LEFT}" y1="{TOP + HEIGHT}" x2="{LEFT + n * (BAR + GAP) + GAP}" '
           f'y2="{TOP + HEIGHT}" stroke="#555"/>',
           f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + HEIGHT}" stroke="#555"/>',
           f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end" class="axis">{most}</text>',
           f'<text x="{LEFT - 6}" y="{TOP + HEIGHT}" text-anchor="end" class="axis">0</text>']
  for i, (label, c) in enumerate(zip(labels, counts)):
    x = LEFT + GAP + i * (BAR + GAP)
    y = TOP + HEIGHT
    for s in ENTRY_STATUSES:
      h = c.get(s, 0) * scale
      if h <= 0:
        continue
      y -= h
      parts.append(f'<rect x="{x}" y="{y:.2f}" width="{BAR}" height="{h:.2f}" fill="{s.colour}">'
                   f'<title>{escape(label)}: {c[s]} {escape(s.label)}</title></rect>')
    total = sum(c.values())
    parts.append(f'<text x="{x + BAR / 2}" y="{y - 3:.2f}" text-anchor="middle" class="axis">'
                 f'{total}</text>')
    parts.append(f'<text transform="translate({x + BAR / 2 - 4},{TOP + HEIGHT + LABEL_GAP}) '
                 f'rotate(90)" class="axis">{escape(label)}</text>')
  lx = LEFT + n * (BAR + GAP) + GAP + 16
  for j, s in enumerate(ENTRY_STATUSES):
    ly = TOP + 6 + j * 20
    parts.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{s.colour}"/>'
                 f'<text x="{lx + 18}" y="{ly + 11}" class="axis">{escape(s.label.split(" (")[0])}</text>')
  parts.append("</svg>")
  return "".join(parts)
