"""The report as GitHub-flavoured Markdown, sized for a job summary.

Counts first (with what the run's jax build is when the release table has not
measured it, such as a nightly), then the matrix, what needs attention (failures
and warnings, one line per finding, capped), the compat window, with a history
each failing entry's first failing run and its jax build and the targets whose
status changed, and the skip ledger folded away.

Every string that comes from the report (messages, ids, targets, host
descriptions, versions) is untrusted, as on the HTML page: it goes through
:func:`_text` (or :func:`_code`, which falls back to it), which makes it one
line, turns ``<``, ``>`` and ``&`` into entities and backslash-escapes the
Markdown syntax of links, images, code spans and table cells, so no report
string can add markup, a link or a remote image to the job summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jaxport.report._model import RunReport
from jaxport.report._sections import host_line
from jaxport.report._served import ServedBy
from jaxport.report._visible import visible
from jaxport.report._views import (
    ENTRY_STATUSES, CellStatus, build_history, build_matrix, build_note, entry_status,
    failure_onsets, order_runs, run_labels, source_name, window_rows)

# A job summary holds at most 1 MiB; long finding lists are cut here and the page has them all.
MAX_ATTENTION_ENTRIES = 40
MAX_FINDING_CHARS = 300
MAX_LISTED_TARGETS = 12


# Characters of a report string that Markdown or HTML would read as syntax: entities for HTML's,
# a backslash before Markdown's (links, images, code spans, table cells, and the backslash itself).
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Emphasis marks too: ``*`` and ``~`` anywhere, ``_`` where it does not stand inside a word
# (``lapack_spotrf_ffi`` stays as it is; a CPU model "EPYC *_x" does not open emphasis).
_MARKDOWN_SYNTAX = re.compile(r"([\\\[\]()!`|*~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
# A string of only these shows verbatim in a code span; anything else is shown as escaped text.
_PLAIN_CODE = re.compile(r"[\w.,:;/+=@ -]+")


def _text(text: object) -> str:
  """A report string safe anywhere in the summary, table cells included: one line, no markup,
  control and bidirectional characters shown as their escapes."""
  line = " ".join(visible(text).split())
  line = "".join(_HTML_ENTITIES.get(c, c) for c in line)
  return _MARKDOWN_SYNTAX.sub(r"\\\1", line)


def _code(text: object) -> str:
  """A report string (an id, a target) in a code span, or as :func:`_text` if it is not plain."""
  line = " ".join(visible(text).split())
  return f"`{line}`" if _PLAIN_CODE.fullmatch(line) else _text(line)


def _short(text: str) -> str:
  """A finding or reason as escaped text, cut at ``MAX_FINDING_CHARS`` characters."""
  line = " ".join(text.split())
  return _text(line if len(line) <= MAX_FINDING_CHARS else line[:MAX_FINDING_CHARS - 1] + "…")


def _counts_line(r: RunReport) -> str:
  parts = [f"{s.badge} {sum(entry_status(e) == s for e in r.entries)} {s.label}"
           for s in ENTRY_STATUSES]
  other = (f" ({r.summary.other_host} of the passes within tolerance on another host class "
           "than the recording one)" if r.summary.other_host else "")
  hosts = "; ".join(_text(host_line(h)) for h in r.replay_hosts)
  cached = r.summary.work_line()
  return (f"**{r.summary.replayed} entries replayed** of {r.summary.present} present: "
          + " · ".join(parts) + other + cached + (f". Replayed on: {hosts}" if hosts else ""))


def _targets_line(r: RunReport) -> str:
  t = r.targets
  missing = ", ".join(_code(x) for x in t.missing_required[:MAX_LISTED_TARGETS]) or "none"
  if len(t.missing_required) > MAX_LISTED_TARGETS:
    missing += f" and {len(t.missing_required) - MAX_LISTED_TARGETS} more"
  return (f"Targets: {len(t.covered)} covered; {len(t.required) - len(t.missing_required)} of the "
          f"{len(t.required)} required by the stable-target table; required but not covered: "
          f"{missing}.")


def _served_mark(cells: Sequence[Any], by: ServedBy) -> str:
  """A matrix row's "served by" cell: the serving reader's verdict on the row's newest
  producer's entry."""
  lead = next((c.lead for c in reversed(cells) if c.lead is not None), None)
  if lead is None:
    return "–"
  got = by.of(lead.entry_id)
  return "not run" if got is None else _text(got.text)


def _matrix(r: RunReport, served: Sequence[ServedBy] = ()) -> list[str]:
  m = build_matrix(r)
  out = ["### Targets by producer release", "",
         "Legend: " + ", ".join(f"{s.mark} {s.label}" for s in CellStatus), ""]
  for g in m.groups:
    out += [f"**{_text(g.platform)}**", "",
            "| target | " + " | ".join([*(f"jax {_text(p)}" for p in m.producers),
                                         *(f"served by {_text(by.reader)}" for by in served)])
            + " |",
            "|---|" + "---|" * (len(m.producers) + len(served))]
    for row in g.rows:
      cells = []
      for c in row.cells:
        n = len(c.entries)
        cells.append(c.status.mark + (f" {n}" if n > 1 else ""))
      cells += [_served_mark(row.cells, by) for by in served]
      out.append(f"| {_code(row.target)} | " + " | ".join(cells) + " |")
    out.append("")
  return out


def _attention(r: RunReport) -> list[str]:
  bad = [e for e in r.entries if entry_status(e) in (CellStatus.FAIL, CellStatus.WARN)]
  if not bad:
    return []
  bad.sort(key=lambda e: (-entry_status(e).severity, e.entry_id))
  out = [f"### Needs attention ({len(bad)})", ""]
  for e in bad[:MAX_ATTENTION_ENTRIES]:
    s = entry_status(e)
    out.append(f"- {s.badge} **{s.label}** {_code(e.entry_id)} (jax {_text(e.producer)})")
    out += [f"  - {_code(f.kind)} {_short(f.message)}" for f in e.findings]
  if len(bad) > MAX_ATTENTION_ENTRIES:
    out.append(f"- … and {len(bad) - MAX_ATTENTION_ENTRIES} more; the HTML report lists them all.")
  out.append("")
  return out


def _updated(r: RunReport) -> list[str]:
  """An update run's recorded cases and what changed in each."""
  if r.updated is None:
    return []
  out = [f"### Updated cases ({len(r.updated)})", ""]
  if not r.updated:
    out += ["No case's newest entry differs from today's function.", ""]
  for u in r.updated:
    since = f"since {_code(u.since)}" if u.since else "a new case"
    out.append(f"- **{_text(u.action)}** {_code(u.entry_id or u.case_id)} ({since})")
    out += [f"  - {_short(line)}" for line in u.change_lines()]
  out.append("")
  return out


def _window(r: RunReport) -> list[str]:
  out = ["### Compat window per producer release", "",
         "jax's release policy: an artifact keeps running on a jax released up to six months "
         "after the one that produced it. An entry's own age against the store's compat window "
         "is its `expired` finding, a different clock.", "",
         "| producer jax | released | age (days) | producer within jax's 6-month release window "
         "| entries | statuses | agrees with policy |", "|---|---|---|---|---|---|---|"]
  for w in window_rows(r):
    inside = {True: "yes", False: "no", None: "unknown"}[w.inside_window]
    statuses = " ".join(f"{s.badge} {n}" for s, n in sorted(w.statuses.items(),
                                                               key=lambda x: x[0].severity))
    cells = [w.producer, w.producer_date or "?", "?" if w.age_days is None else w.age_days, inside,
             w.entries, statuses, "**NO**" if w.policy_violations else "yes"]
    out.append("| " + " | ".join(_text(c) for c in cells) + " |")
  out.append("")
  return out


def window_table(report: RunReport) -> str:
  """The compat-window table of a run, one row per producer release: its date and age, the
  consumer and the gap, whether it lies within jax's six-month window, its entries' release
  verdicts and whether they agree with the expected-status table (Markdown)."""
  lines = ["| producer jax | released | age (days) | consumer jax | gap (days) "
           "| within jax's 6-month release window | entries | verdicts | agrees with policy |",
           "|---|---|---|---|---|---|---|---|---|"]
  for w in window_rows(report):
    window = report.window_of(w.producer)
    inside = {True: "yes", False: "no", None: "unknown"}[w.inside_window]
    verdicts = ", ".join(f"{k} {v}" for k, v in sorted(w.verdicts.items()))
    cells = [w.producer, w.producer_date, w.age_days, window.consumer if window else None,
             w.gap_days, inside, w.entries, verdicts, "NO" if w.policy_violations else "yes"]
    lines.append("| " + " | ".join("?" if c is None else str(c) for c in cells) + " |")
  return "\n".join(lines) + "\n"


def _history(runs: Sequence[RunReport]) -> list[str]:
  h = build_history(runs)
  labels = list(run_labels(h.runs))
  out = ["### History", "",
         "| run | report | " + " | ".join(s.label for s in ENTRY_STATUSES) + " |",
         "|---|---|" + "---|" * len(ENTRY_STATUSES)]
  for label, run, c in zip(labels, h.runs, h.counts):
    out.append(f"| {_text(label)} | {_code(source_name(run))} | "
               + " | ".join(str(c[s]) for s in ENTRY_STATUSES) + " |")
  out.append("")
  if not h.changed:
    out += [f"No target changed status over these {len(labels)} runs.", ""]
    return out
  out += [f"Targets that changed status ({len(h.changed)}):", "",
          "| target | first change | " + " | ".join(_text(x) for x in labels) + " |",
          "|---|---|" + "---|" * len(labels)]
  for row in h.changed:
    out.append(f"| {_code(row.target)} | {_text(labels[row.first_change])} | "
               + " | ".join(s.mark for s in row.statuses) + " |")
  out.append("")
  return out


def _build_line(r: RunReport) -> list[str]:
  """What the run's jax is beside the release table, when the table has not measured it."""
  note = build_note(r)
  return [] if note is None else [_text(note) + ".", ""]


def _onsets(runs: Sequence[RunReport]) -> list[str]:
  """Each failing entry with the first run, and its jax build, that showed the failure."""
  onsets = failure_onsets(runs)
  if not onsets:
    return []
  labels = dict(zip((id(r) for r in runs), run_labels(runs)))
  out = [f"### Failing since ({len(onsets)})", ""]
  for o in onsets[:MAX_ATTENTION_ENTRIES]:
    when = "new in this run" if o.new else "failing in every run since"
    out.append(f"- {_code(o.entry_id)}: {when}; first shown by jax {_text(o.first_jax)} "
               f"(run {_text(labels[id(o.first)])})")
  if len(onsets) > MAX_ATTENTION_ENTRIES:
    out.append(f"- … and {len(onsets) - MAX_ATTENTION_ENTRIES} more on the page")
  out.append("")
  return out


def render_markdown(current: RunReport, earlier: Sequence[RunReport] = (),
                    served: Sequence[ServedBy] = ()) -> str:
  """The job summary of ``current``, with history over ``earlier`` runs when given, and a
  column per serving reader's verdicts (``served``) when given."""
  runs = order_runs(current, earlier)
  r = current
  v = r.versions
  out = [f"## jaxport compatibility: {_text(r.platform)}, {_text(r.today)}", "",
         f"jax {_text(v.get('jax'))}, jaxlib {_text(v.get('jaxlib'))}, jaxport "
         f"{_text(v.get('jaxport'))}; readers {_text(', '.join(r.readers))}.", "",
         *_build_line(r),
         _counts_line(r), "",
         _targets_line(r), ""]
  out += [f"> **session failure:** {_short(f)}" for f in r.session_failures]
  out += [f"> session warning: {_short(w)}" for w in r.session_warnings]
  if r.session_failures or r.session_warnings:
    out.append("")
  out += _attention(r)
  out += _updated(r)
  out += _matrix(r, served)
  out += _window(r)
  if len(runs) > 1:
    out += _onsets(runs)
    out += _history(runs)
  out += [f"<details><summary>Skip ledger ({len(r.skips)})</summary>", ""]
  out += [f"- {_code(s.what)}: {_short(s.why)}" for s in r.skips]
  out += ["", "</details>", ""]
  return "\n".join(out)
