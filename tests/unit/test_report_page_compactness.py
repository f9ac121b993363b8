"""The HTML page stays compact at scale without losing what it shows: a matrix cell's tooltip
names its worst entries and counts the rest, and a note every passing entry of a group carries
is stated once for the group instead of on each row."""

import html
import re

import _report_helpers as helpers
from jaxport.report import RunReport, render_html
from jaxport.report._html import TIP_ENTRIES

SHARED = ("[upgraded] jaxport reader: ran and matched the recorded outputs after jaxport.upgrade "
          "(rules getrf); before: NOT_FOUND: No registered implementation for lapack_sgetrf")


def _report(n: int, failing: int | None = None) -> RunReport:
  entries = []
  for i in range(n):
    status = "fail" if i == failing else "pass"
    own = [f"[producer_drift] current lowering of case lu_{i:03d}: target lapack_sgetrf is no "
           "longer emitted"]
    messages = [SHARED, *own] if status == "pass" else [
        "[compatibility_break] jax reader: output 0: 1 of 4 elements differ"]
    entries.append(helpers._entry("lapack_getrf", f"lu_{i:03d}", "0.10.2", status,
                                  ["lapack_sgetrf_ffi"], messages))
  return RunReport.from_json(helpers.run_report(entries=entries))


def _tooltip(page: str) -> str:
  cell = re.search(r'<td class="cell [^"]+"><a href="[^"]+" title="([^"]*)"', page)
  assert cell is not None
  return html.unescape(cell.group(1))


def test_a_crowded_cell_names_its_worst_entries_first_and_counts_the_rest():
  n = TIP_ENTRIES + 30
  page = render_html(_report(n, failing=n - 1))
  lines = _tooltip(page).splitlines()
  assert len(lines) == TIP_ENTRIES + 1
  assert lines[0].startswith("fail: ") and "lu_%03d" % (n - 1) in lines[0]
  assert lines[-1] == f"and {n - TIP_ENTRIES} more (listed under Entries)"


def test_a_small_cell_lists_every_entry():
  lines = _tooltip(render_html(_report(3))).splitlines()
  assert len(lines) == 3 and all(line.startswith("pass: ") for line in lines)


def test_a_note_every_passing_entry_of_a_group_shares_is_stated_once_and_own_notes_stay():
  n = 40
  page = render_html(_report(n))
  shared = html.escape(SHARED, quote=True)
  assert page.count(shared) == 1
  assert re.search(r'<p class="shared">Every entry of this group: [^<]*'
                   + re.escape(shared), page)
  for i in range(n):
    row = re.search(r'<tr id="entry:cpu/lapack_getrf/lu_%03d/[^"]+">.*?</tr>' % i, page)
    assert row is not None and f"current lowering of case lu_{i:03d}" in row.group(0)
    assert shared not in row.group(0)


def test_a_group_of_one_keeps_its_notes_on_its_row():
  page = render_html(_report(1))
  assert 'class="shared"' not in page
  row = re.search(r'<tr id="entry:cpu/lapack_getrf/lu_000/[^"]+">.*?</tr>', page).group(0)
  assert html.escape(SHARED, quote=True) in row
