"""The report as one self-contained HTML page: inline CSS, an inline SVG chart, no script.

It opens offline from a CI artifact: nothing is fetched, every link is an
anchor inside the page. Every text that comes from a report is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from html import escape
from urllib.parse import quote

from jaxport._vocabulary import FindingKind
from jaxport.golden._entry_id import EntryId
from jaxport.report._entries import EntryResult, about_current_lowering
from jaxport.report._model import RunReport
from jaxport.report._sections import host_line
from jaxport.report._served import ServedBy
from jaxport.report._svg import status_chart
from jaxport.report._visible import visible
from jaxport.report._views import (
    ENTRY_STATUSES, CellStatus, Matrix, build_history, build_matrix, build_note, entry_anchor,
    entry_status, order_runs, passing_groups, run_labels, source_name, target_anchor, window_rows)

_CSS = """
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:24px;color:#212121;font-size:14px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 4px} .sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 7px;text-align:left}
th{background:#f5f5f5} code,pre{font-family:"DejaVu Sans Mono",monospace;font-size:12px}
pre{white-space:pre-wrap;margin:2px 0;background:#fafafa;padding:4px}
.cards{display:flex;gap:10px;flex-wrap:wrap}
.card{border-radius:6px;padding:8px 14px;color:#fff;min-width:90px}
.card b{font-size:22px;display:block}
.matrix td.cell{text-align:center;width:46px;font-weight:bold}
.matrix td.cell a{color:inherit;text-decoration:none;display:block}
.matrix th.group{background:#e8eaf6;text-align:left}
.badge{border-radius:4px;padding:1px 6px;color:#fff;font-size:12px;white-space:nowrap}
.changed{outline:3px solid #1a237e;outline-offset:-3px}
.fail-box{border-left:5px solid #c62828;background:#ffebee;padding:6px 10px;margin:6px 0}
.warn-box{border-left:5px solid #ef8c00;background:#fff3e0;padding:6px 10px;margin:6px 0}
.entry{border:1px solid #e0e0e0;border-radius:6px;padding:4px 12px 8px;margin:10px 0}
.entry dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0}
.entry dt{color:#555} .entry dd{margin:0}
.kind{font-family:"DejaVu Sans Mono",monospace;font-size:12px;color:#555}
details.group{border:1px solid #e0e0e0;border-radius:6px;margin:4px 0;padding:2px 10px}
details.group summary{cursor:pointer;padding:2px 0}
table.passes td{font-size:12px} .attention li{margin:2px 0}
.chart .axis{font-size:11px;fill:#333}
"""


def _status_css() -> str:
  rules = []
  for s in CellStatus:
    text = "#fff" if s is not CellStatus.NOT_COVERED else "#616161"
    bg = s.colour if s is not CellStatus.NOT_COVERED else "#f5f5f5"
    rules.append(f".{s.css}{{background:{bg};color:{text}}}")
  return "\n".join(rules)


def _e(text: object) -> str:
  """``text`` for the page: markup escaped, control and bidirectional characters shown as
  their escapes."""
  return escape(visible(text), quote=True)


def _href(entry_id: EntryId) -> str:
  return "#" + quote(entry_anchor(entry_id), safe="/:._-")


def _badge(s: CellStatus) -> str:
  return f'<span class="badge {s.css}">{s.symbol} {_e(s.label)}</span>'


def _expiry(days: int | None) -> str:
  if days is None:
    return "unknown"
  return f"expires in {days} days" if days >= 0 else f"expired {-days} days ago"


def _summary(r: RunReport) -> list[str]:
  s = r.summary
  out = ['<h2 id="summary">Summary</h2>', '<div class="cards">']
  for st in ENTRY_STATUSES:
    n = sum(entry_status(e) == st for e in r.entries)
    out.append(f'<div class="card {st.css}"><b>{n}</b>{st.symbol} {_e(st.label)}</div>')
  out.append("</div>")
  out += _attention(r)
  t = r.targets
  out.append(f"<p>{s.replayed} entries replayed of {s.present} present in the store; "
             f"{len(t.covered)} custom-call targets covered, of which "
             f"{len(t.required) - len(t.missing_required)} of the {len(t.required)} the "
             f"stable-target table requires and {len(t.reachable) - len(t.missing_reachable)} of "
             f"the {len(t.reachable)} today's lowering emits. Compat window {r.compat_window_days} days; "
             f"{'strict' if r.strict else 'not strict'} (<code>--compat-strict</code>).</p>")
  hosts = r.replay_hosts
  if hosts:
    out.append("<p>Replayed on: " + "; ".join(_e(host_line(h)) for h in hosts) + ".</p>")
  if s.other_host:
    out.append(f"<p>{s.other_host} of the passing entries matched within tolerance but not "
               "bitwise, on a host of another class than the one that recorded them (or with "
               "the recording host unknown), where bitwise equality is not expected.</p>")
  if r.mode == "record":
    out.append("<p>Record run: " + ", ".join(f"{n} {a}" for a, n in s.actions.items()) + ".</p>")
  for f in r.session_failures:
    out.append(f'<div class="fail-box"><b>session failure:</b> {_e(f)}</div>')
  for w in r.session_warnings:
    out.append(f'<div class="warn-box"><b>session warning:</b> {_e(w)}</div>')
  return out


def _legend() -> str:
  return "<p>" + " ".join(_badge(s) for s in CellStatus) + "</p>"


# A matrix cell's tooltip names at most this many of its entries, the worst first; the rest
# are counted (each is in the entries section), so a cell of thousands stays one line's worth.
TIP_ENTRIES = 12


def _cell_tip(entries: Sequence[EntryResult]) -> str:
  """The tooltip of a matrix cell: its worst entries with their statuses, the rest counted."""
  ranked = sorted(entries, key=lambda e: -entry_status(e).severity)
  lines = [f"{entry_status(e).label}: {e.entry_id}" for e in ranked[:TIP_ENTRIES]]
  if len(ranked) > TIP_ENTRIES:
    lines.append(f"and {len(ranked) - TIP_ENTRIES} more (listed under Entries)")
  return "\n".join(lines)


def _served_cell(cells: Sequence[Any], by: ServedBy) -> str:
  """A matrix row's "served by" cell: what the serving reader said of the newest producer's
  entry of the row (its worst entry), the verdict's detail in the tooltip."""
  lead = next((c.lead for c in reversed(cells) if c.lead is not None), None)
  if lead is None:
    return '<td class="computed" title="no entry">–</td>'
  got = by.of(lead.entry_id)
  if got is None:
    return (f'<td class="computed" title="{_e(by.source)} does not list '
            f'{_e(lead.entry_id)}">not run</td>')
  st = {None: CellStatus.NOT_COVERED, "pass": CellStatus.PASS}.get(got.status, CellStatus.FAIL)
  return (f'<td class="cell {st.css}" title="{_e(lead.entry_id)}: {_e(got.detail)}">'
          f"{_e(got.text)}</td>")


def _matrix(m: Matrix, served: Sequence[ServedBy] = ()) -> list[str]:
  out = ['<h2 id="matrix">Targets by producer release</h2>',
         "<p>Each cell: the worst status of the entries that use the target and were recorded by "
         "that jax release (how many, when more than one); it links to the worst entry's "
         "details.</p>", _legend(), '<table class="matrix"><thead><tr><th>custom-call target</th>']
  out += [f"<th>jax {_e(p)}</th>" for p in m.producers]
  out.append('<th title="the jax releases the newest producer\'s entry runs on, computed from the '
             'release table (jaxport.releases.runs_on); each producer\'s in the tooltip">'
             "runs on (computed)</th>")
  out += [f'<th title="the newest producer\'s entry as {_e(by.source)} judged it">served by '
          f"{_e(by.reader)}</th>" for by in served]
  out.append("</tr></thead><tbody>")
  for g in m.groups:
    out.append(f'<tr><th class="group" colspan="{len(m.producers) + 2 + len(served)}">'
               f"{_e(g.platform)}</th></tr>")
    for row in g.rows:
      out.append(f'<tr id="{_e(target_anchor(row.target))}"><td><code>{_e(row.target)}</code></td>')
      for cell in row.cells:
        st = cell.status
        if cell.lead is None:
          out.append(f'<td class="cell {st.css}" title="no entry">{st.symbol}</td>')
          continue
        tip = _cell_tip(cell.entries)
        count = f"<sup>{len(cell.entries)}</sup>" if len(cell.entries) > 1 else ""
        out.append(f'<td class="cell {st.css}"><a href="{_href(cell.lead.entry_id)}" '
                   f'title="{_e(tip)}">{st.symbol}{count}</a></td>')
      out.append(_computed_range(g.platform, m.producers, row.cells))
      out += [_served_cell(row.cells, by) for by in served]
      out.append("</tr>")
  out.append("</tbody></table>")
  return out


def _span(releases: Sequence[str]) -> str:
  if not releases:
    return "none"
  return releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]} ({len(releases)})"


def _computed_range(platform: str, producers: Sequence[str], cells: Sequence[Any]) -> str:
  """The matrix row's "runs on (computed)" cell: the range of the newest producer's entry that
  carries one, each producer's in the tooltip; "not computed" for reports without ranges."""
  per = []
  for producer, cell in zip(producers, cells):
    got = next((e.runs_on for e in (cell.lead, *cell.entries)
                if e is not None and e.runs_on is not None and platform in e.runs_on), None)
    if got is not None:
      per.append((producer, tuple(got[platform])))
  if not per:
    if not any(cell.entries for cell in cells):
      return '<td class="computed" title="no entry">–</td>'
    return '<td class="computed" title="this report carries no computed ranges">not computed</td>'
  tip = "\n".join(f"jax {p}: {_span(r)}" for p, r in per)
  return f'<td class="computed" title="{_e(tip)}">{_e(_span(per[-1][1]))}</td>'


def _window(r: RunReport) -> list[str]:
  out = ['<h2 id="window">Compat window per producer release</h2>',
         "<p>jax promises that artifacts keep running on a jax up to six months newer than the "
         "one that produced them. An entry's own age against the store's compat window is its "
         "<code>expired</code> finding, a different clock.</p>",
         "<table><tr><th>producer jax</th><th>released</th><th>age (days)</th><th>gap to "
         f"jax {_e(r.versions.get('jax'))} (days)</th><th>producer within jax's 6-month release "
         "window</th><th>entries</th>"
         "<th>statuses</th><th>verdicts</th><th>agrees with policy</th></tr>"]
  for w in window_rows(r):
    inside = {True: "yes", False: "no", None: "unknown"}[w.inside_window]
    statuses = " ".join(f'<span class="badge {s.css}">{s.symbol} {n}</span>'
                        for s, n in sorted(w.statuses.items(), key=lambda x: x[0].severity))
    verdicts = ", ".join(f"{_e(k)} {n}" for k, n in sorted(w.verdicts.items()))
    out.append(f"<tr><td>{_e(w.producer)}</td><td>{_e(w.producer_date or '?')}</td>"
               f"<td>{_e(w.age_days if w.age_days is not None else '?')}</td>"
               f"<td>{_e(w.gap_days if w.gap_days is not None else '?')}</td><td>{inside}</td>"
               f"<td>{w.entries}</td><td>{statuses}</td><td>{verdicts}</td>"
               f"<td>{'<b>NO</b>' if w.policy_violations else 'yes'}</td></tr>")
  out.append("</table>")
  return out


def _coverage(r: RunReport) -> list[str]:
  t = r.targets
  out = ['<h2 id="coverage">Coverage</h2>', "<table>"]
  for label, items in (("required, not covered", t.missing_required),
                       ("emitted today, not covered", t.missing_reachable),
                       ("covered", t.covered)):
    text = ", ".join(f"<code>{_e(x)}</code>" for x in items) or "none"
    out.append(f"<tr><th>{label} ({len(items)})</th><td>{text}</td></tr>")
  out.append("</table>")
  return out


def _history(runs: Sequence[RunReport]) -> list[str]:
  h = build_history(runs)
  labels = list(run_labels(h.runs))
  out = ['<h2 id="history">History</h2>',
         f"<p>{len(h.runs)} runs from {labels[0]} to {labels[-1]}; {len(h.changed)} targets changed "
         "status. An outlined cell is a run where the target's status differs from the run "
         "before.</p>", status_chart(labels, h.counts),
         "<p>Runs: " + "; ".join(f"{_e(x)} <code>{_e(source_name(r))}</code>"
                                 for x, r in zip(labels, h.runs)) + ".</p>",
         '<table class="matrix"><thead><tr><th>custom-call target</th><th>platform</th>']
  out += [f'<th title="{_e(source_name(r))}">{_e(x)}</th>' for x, r in zip(labels, h.runs)]
  out.append("<th>first change</th></tr></thead><tbody>")
  for row in h.rows:
    out.append(f"<tr><td><code>{_e(row.target)}</code></td><td>{_e(row.platform)}</td>")
    for i, s in enumerate(row.statuses):
      changed = " changed" if row.changed_at(i) else ""
      out.append(f'<td class="cell {s.css}{changed}" title="{_e(labels[i])}: {_e(s.label)}">'
                 f"{s.symbol}</td>")
    first = "—" if row.first_change is None else _e(labels[row.first_change])
    out.append(f"<td>{first}</td></tr>")
  out.append("</tbody></table>")
  return out


def _entry(e: EntryResult, served: Sequence[ServedBy] = ()) -> list[str]:
  st = entry_status(e)
  facts = [("case", f"<code>{_e(e.case_id)}</code> (family <code>{_e(e.family)}</code>)"),
           ("producer jax", _e(e.producer)),
           ("recorded", _e(e.record_date or "unknown")),
           ("recording host", _e(host_line(e.recorded_host))),
           ("expiry", _e(_expiry(e.days_to_expiry))),
           ("recorded targets", ", ".join(f"<code>{_e(t)}</code>" for t in e.targets) or "none"),
           ("targets today", "not checked" if e.current_targets is None else
            ", ".join(f"<code>{_e(t)}</code>" for t in e.current_targets) or "none")]
  if e.lowering_only:
    facts.append(("numerics", "not compared (lowering-only entry)"))
  if e.release is not None:
    rel = e.release
    where = ("" if rel.window is None else
             f", released {rel.window.producer_date}, {rel.window.gap_days} days before the "
             f"consumer ({'inside' if rel.window.inside_window else 'outside'} the window)")
    facts.append(("release verdict", _e(f"{rel.verdict}: expected {rel.expected}{where}")))
  if e.expected_failure:
    facts.append(("expected failure", _e(e.expected_failure)))
  for by in served:
    got = by.of(e.entry_id)
    if got is not None:
      facts.append((f"served by {_e(by.reader)}", _e(f"{got.text}: {got.detail}")))
  out = [f'<section class="entry" id="{_e(entry_anchor(e.entry_id))}">',
         f"<h3>{_badge(st)} <code>{_e(e.entry_id)}</code></h3><dl>"]
  out += [f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts]
  out.append("</dl>")
  findings = [f for f in e.findings if not about_current_lowering(f)]
  lowering = [f for f in e.findings if about_current_lowering(f)]
  for title, items in (("findings", findings), ("signature and lowering differences", lowering)):
    if items:
      out.append(f"<b>{title}</b><ul>")
      out += [f'<li><span class="kind">[{_e(f.kind)}]</span> <pre>{_e(f.message)}</pre></li>'
              for f in items]
      out.append("</ul>")
  out.append("</section>")
  return out


# How many entries the summary's attention list links to; the rest are counted.
_ATTENTION_LINKS = 50


def _needs_attention(r: RunReport) -> list[EntryResult]:
  """The entries that are not passes, worst first: the page shows them in full, first."""
  passing = (CellStatus.PASS, CellStatus.DRIFT)
  return sorted((e for e in r.entries if entry_status(e) not in passing),
                key=lambda e: (-entry_status(e).severity, e.entry_id))


def _attention(r: RunReport) -> list[str]:
  """Links from the top of the page to each entry that needs attention, worst first."""
  bad = _needs_attention(r)
  if not bad:
    return ['<p class="attention">No entry needs attention.</p>']
  out = [f'<p class="attention"><b>Needs attention ({len(bad)}):</b></p><ol class="attention">']
  for i, e in enumerate(bad[:_ATTENTION_LINKS]):
    first = ' class="first-failure"' if i == 0 else ""
    out.append(f'<li>{_badge(entry_status(e))} <a{first} href="{_href(e.entry_id)}">'
               f"<code>{_e(e.entry_id)}</code></a></li>")
  out.append("</ol>")
  if len(bad) > _ATTENTION_LINKS:
    out.append(f"<p>... and {len(bad) - _ATTENTION_LINKS} more in the entries section.</p>")
  return out


def _pass_row(e: EntryResult, shared: frozenset[str] = frozenset()) -> str:
  """A passing entry in one table row: what identifies it and its notes (less those its group
  states once, ``shared``), without a card."""
  st = entry_status(e)
  notes = "; ".join(t for t in _notes(e) if t not in shared)
  return (f'<tr id="{_e(entry_anchor(e.entry_id))}"><td class="{st.css}">{st.symbol}</td>'
          f"<td><code>{_e(e.entry_id)}</code></td><td>{_e(e.record_date or 'unknown')}</td>"
          f"<td>{_e(_expiry(e.days_to_expiry))}</td>"
          f"<td>{'lowering only' if e.lowering_only else 'numerics'}</td><td>{_e(notes)}</td></tr>")


def _notes(e: EntryResult) -> list[str]:
  return [f.text for f in e.findings]


def _shared_notes(entries: Sequence[EntryResult]) -> list[str]:
  """The notes every one of ``entries`` carries (two or more entries), in the first's order:
  the page states them once for the group rather than on each row."""
  if len(entries) < 2:
    return []
  common = set(_notes(entries[0])).intersection(*(_notes(e) for e in entries[1:]))
  return [t for t in dict.fromkeys(_notes(entries[0])) if t in common]


def _passing(r: RunReport) -> list[str]:
  """The passing entries, folded in one group per target and producer release, counted; notes
  that all of a group's entries carry are stated once above its rows."""
  groups = passing_groups(r)
  total = sum(len(g.entries) for g in groups)
  out = [f'<h3 id="passing">Passing entries ({total}), by target and producer release</h3>']
  if not groups:
    out.append("<p>None.</p>")
  for g in groups:
    drift = sum(entry_status(e) is CellStatus.DRIFT for e in g.entries)
    within = f", {drift} within tolerance only" if drift else ""
    shared = _shared_notes(g.entries)
    out.append(f'<details class="group" id="{_e(g.anchor)}"><summary><code>{_e(g.target)}</code>, '
               f"recorded by jax {_e(g.producer)}: {len(g.entries)} passing{within}</summary>")
    if shared:
      out.append(f'<p class="shared">Every entry of this group: {_e("; ".join(shared))}</p>')
    out.append('<table class="passes"><tr><th></th><th>entry</th><th>recorded</th><th>expiry</th>'
               "<th>checked</th><th>notes</th></tr>")
    out += [_pass_row(e, frozenset(shared)) for e in g.entries]
    out.append("</table></details>")
  return out


def _updated(r: RunReport) -> list[str]:
  """An update run's recorded cases and what changed in each (nothing for other runs)."""
  if r.updated is None:
    return []
  out = [f'<h2 id="updated">Updated cases ({len(r.updated)})</h2>']
  if not r.updated:
    out.append("<p>No case's newest entry differs from today's function.</p>")
  for u in r.updated:
    since = f"since <code>{_e(u.since)}</code>" if u.since else "a new case"
    out.append(f"<p><b>{_e(u.action)}</b> <code>{_e(u.entry_id or u.case_id)}</code> "
               f"({since})</p>")
    lines = u.change_lines()
    if lines:
      out.append("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in lines) + "</ul>")
  return out


def _skips(r: RunReport) -> list[str]:
  out = [f'<h2 id="skips">Skip ledger ({len(r.skips)})</h2>', "<table><tr><th>what</th><th>why</th></tr>"]
  out += [f"<tr><td><code>{_e(s.what)}</code></td><td>{_e(s.why)}</td></tr>" for s in r.skips]
  out.append("</table>")
  return out


def _golden_data_errors(r: RunReport) -> list[str]:
  """Entries whose own files are damaged: not a verdict on jax, so a section apart."""
  damaged = [e for e in r.entries if FindingKind.GOLDEN_DATA_ERROR in e.kinds]
  if not damaged:
    return []
  out = [f'<h2 id="golden-data-errors">Golden data errors ({len(damaged)})</h2>',
         "<p>These entries' files fail verification (edited, truncated or replaced after "
         "recording); restore them from version control or record the cases again.</p><ul>"]
  for e in damaged:
    texts = [f.message for f in e.findings if f.kind == FindingKind.GOLDEN_DATA_ERROR]
    out.append(f'<li><a href="{_href(e.entry_id)}"><code>{_e(e.entry_id)}</code></a>: '
               f"{_e(texts[0] if texts else '')}</li>")
  out.append("</ul>")
  return out


def render_html(current: RunReport, earlier: Sequence[RunReport] = (),
                served: Sequence[ServedBy] = ()) -> str:
  """The page of ``current``, with history over ``earlier`` runs when given, and a column per
  serving reader's verdicts (``served``: the tf reader's reports) when given."""
  runs = order_runs(current, earlier)
  r = current
  v = r.versions
  title = f"jaxport compatibility report: {r.platform}, {r.today}"
  body = [f"<h1>{_e(title)}</h1>",
          f'<p class="sub">jax {_e(v.get("jax"))}, jaxlib {_e(v.get("jaxlib"))}, jaxport '
          f'{_e(v.get("jaxport"))}, numpy {_e(v.get("numpy"))}; readers '
          f'{_e(", ".join(r.readers))}; {_e(r.mode)} run. Sections: <a href="#summary">summary</a>, '
          '<a href="#matrix">matrix</a>, <a href="#window">compat window</a>, '
          '<a href="#coverage">coverage</a>'
          + (', <a href="#history">history</a>' if len(runs) > 1 else "")
          + (', <a href="#updated">updated cases</a>' if r.updated is not None else "")
          + ', <a href="#entries">entries</a>, <a href="#skips">skip ledger</a>.</p>']
  note = build_note(r)
  if note is not None:
    body.append(f'<p class="sub">{_e(note)}.</p>')
  body += _summary(r)
  body += _matrix(build_matrix(r), served)
  body += _window(r)
  body += _coverage(r)
  if len(runs) > 1:
    body += _history(runs)
  body += _updated(r)
  body += _golden_data_errors(r)
  bad = _needs_attention(r)
  body.append(f'<h2 id="entries">Entries ({len(r.entries)})</h2>')
  body.append(f"<p>The {len(bad)} that need attention first, in full, worst first; then the "
              "passing ones, folded by target and producer release (open a group, or follow a "
              "link, to see them).</p>")
  for e in bad:
    body += _entry(e, served)
  body += _passing(r)
  body += _skips(r)
  body.append(f'<p class="sub">Rendered by <code>jaxport report render</code> from '
              f'{_e(", ".join(source_name(x) for x in runs))}.</p>')
  return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          f"<title>{_e(title)}</title><style>{_CSS}{_status_css()}</style></head><body>\n"
          + "\n".join(body) + "\n</body></html>\n")
