"""The producer x consumer compatibility matrix: build it from replay results, write JSON and text.

A producer is who recorded an entry (``jax 0.9.2`` for entries recorded by
that release's own ``jax.export``, ``jaxport 0.1.0 / jax 0.10.2`` for entries
the current build recorded); a consumer is the jax release that replayed it.
Each cell is a view of the judge's outcomes of its rows (``jaxport.harness._judge.
_release_runs``): it counts their statuses, says whether jax's policy requires the pair to work
(backward up to 6 months, forward up to 3 weeks, ``_releases``), and carries the judge's status
of the cell.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path
from typing import Any

from jaxport._vocabulary import Status
from jaxport.golden._entry_id import EntryId
from jaxport.harness._judge import _releases
from jaxport.harness._judge._release_runs import ReleaseRun, cell_status, judge_row

MATRIX_FORMAT = 2
# The count of a cell's entries the release replayer could not replay there (no status).
NOT_REPLAYED = "not_replayed"
# A TensorFlow release's key among the consumers (``tf-2.21.0``; :mod:`._tf_matrix`).
TF_PREFIX = "tf-"
# Error messages name the exported function; group failures without it.
_FUNCTION_NAME = re.compile(r"Function '?[\w<>.]+'? ")


def producer_label(producer: dict[str, Any]) -> str:
  """``jax 0.9.2`` or, for entries recorded by jaxport, ``jaxport 0.1.0 / jax 0.10.2``."""
  if producer.get("jaxport"):
    return f"jaxport {producer['jaxport']} / jax {producer.get('jax')}"
  return f"jax {producer.get('jax')}"


def consumer_title(key: str) -> str:
  """How the text names a consumer: ``jax 0.10.2``, or ``TensorFlow 2.21.0``."""
  return f"TensorFlow {key[len(TF_PREFIX):]}" if key.startswith(TF_PREFIX) else f"jax {key}"


def _version_key(version: str | None) -> tuple:
  try:
    return (0, _releases.parse_version(version or ""))
  except ValueError:
    return (1, (version or "",))


def build_matrix(results: dict[str, list[dict[str, Any]]], today: datetime.date) -> dict[str, Any]:
  """The matrix of per-entry ``results`` (the release replayer's rows) keyed by consumer jax
  version, each row as the judge weighs it."""
  cells: dict[str, dict[str, dict[str, Any]]] = {}
  producers: dict[str, str | None] = {}
  judged: dict[tuple[str, str], list[ReleaseRun]] = {}
  for consumer, rows in results.items():
    for r in rows:
      producer = r.get("producer") or {}
      label = producer_label(producer) if producer else "unknown"
      producers[label] = producer.get("jax")
      cell = cells.setdefault(label, {}).setdefault(consumer, {
          **{str(s): 0 for s in Status}, NOT_REPLAYED: 0, "total": 0, "failures": []})
      run = judge_row(r, consumer)
      judged.setdefault((label, consumer), []).append(run)
      cell[NOT_REPLAYED if run.status is None else str(run.status)] += 1
      cell["total"] += 1
      if run.status is None:
        cell.setdefault("skipped", []).append({"entry_id": str(run.entry_id), "why": run.detail})
      elif not run.passed:
        cell["failures"].append({"entry_id": str(run.entry_id), "status": str(run.status),
                                 "stage": run.stage, "error": run.error or run.detail})
  consumers = sorted(results, key=_version_key)
  ordered = sorted(producers, key=lambda p: (_version_key(producers[p]), p))
  for label in ordered:
    for consumer, cell in cells[label].items():
      cell["failures"].sort(key=lambda f: f["entry_id"])
      window = None
      try:
        window = _releases.window_position(producers[label], consumer, today)
      except ValueError:
        pass
      cell["window"] = None if window is None else window.to_dict()
      cell["must_pass"] = bool(window and window.inside_window)
      cell["status"] = str(cell_status(judged[(label, consumer)], cell["must_pass"]))
  return {"format": MATRIX_FORMAT, "today": today.isoformat(), "producers": ordered,
          "consumers": consumers, "cells": cells}


def violates_policy(cell: dict[str, Any]) -> bool:
  """The judge failed the cell: a pair jax's policy requires to work does not."""
  return Status(cell["status"]) is Status.FAIL


def _cell_text(cell: dict[str, Any] | None) -> str:
  if cell is None:
    return "-"
  text = f"{cell['pass']}/{cell['total'] - cell[NOT_REPLAYED]}"
  if cell[NOT_REPLAYED]:
    text += f" (+{cell[NOT_REPLAYED]} skipped)"
  if cell["must_pass"]:
    text += " * POLICY" if violates_policy(cell) else " *"
  return text


def render_text(matrix: dict[str, Any]) -> str:
  """A Markdown table (passing/total per cell) and the failures grouped by reason."""
  consumers = matrix["consumers"]
  lines = [f"Compatibility matrix ({matrix['today']}): rows are producers, columns consumer jax "
           "(or TensorFlow) releases; cells are passing/replayed entries; * marks pairs inside "
           "jax's window (consumer at most 6 months newer or 3 weeks older), which must all pass; "
           "skipped entries (multi-device) are not replayed by release venvs.", "",
           "| producer | " + " | ".join(consumer_title(c) for c in consumers) + " |",
           "|---|" + "---|" * len(consumers)]
  for p in matrix["producers"]:
    row = matrix["cells"].get(p, {})
    lines.append(f"| {p} | " + " | ".join(_cell_text(row.get(c)) for c in consumers) + " |")
  reasons: dict[tuple[str, str, str], list[str]] = {}
  for p in matrix["producers"]:
    for c, cell in matrix["cells"].get(p, {}).items():
      for f in cell["failures"]:
        reason = _FUNCTION_NAME.sub("Function <f> ", (f.get("error") or f["status"]).splitlines()[0])[:160]
        reasons.setdefault((p, c, reason), []).append(EntryId.parse(f["entry_id"]).case_id)
  if reasons:
    lines += ["", "Failures by producer, consumer and reason:"]
    for (p, c, reason), cases in sorted(reasons.items()):
      lines.append(f"- {p} on {consumer_title(c)}: {len(cases)} x {reason} ({', '.join(sorted(cases)[:6])}"
                   f"{', ...' if len(cases) > 6 else ''})")
  return "\n".join(lines) + "\n"


SUMMARY_FORMAT = 1


def summarize(matrix: dict[str, Any]) -> dict[str, Any]:
  """The matrix without messages: per cell the counts, whether the policy requires it, and
  the case ids of its failing entries (what an expected-status row of the cell lists)."""
  cells = {}
  for p in matrix["producers"]:
    for c, cell in matrix["cells"].get(p, {}).items():
      cells.setdefault(p, {})[c] = {
          "passed": cell["pass"], "replayed": cell["total"] - cell[NOT_REPLAYED],
          "skipped": cell[NOT_REPLAYED],
          "must_pass": cell["must_pass"],
          "failing_cases": sorted({EntryId.parse(f["entry_id"]).case_id for f in cell["failures"]})}
  return {"format": SUMMARY_FORMAT, "measured": matrix["today"], "producers": matrix["producers"],
          "consumers": matrix["consumers"], "cells": cells}


def load_summary(path: str | os.PathLike) -> dict[str, Any]:
  """A kept summary (``summarize``, ``matrix-summary.json``) of a measured matrix."""
  data = json.loads(Path(path).read_text())
  if data.get("format") != SUMMARY_FORMAT:
    raise ValueError(f"{path}: not a matrix summary of format {SUMMARY_FORMAT}")
  return data


def summary_table(summary: dict[str, Any]) -> str:
  """The summary as the Markdown table of the multi-release page."""
  consumers = summary["consumers"]
  lines = ["| producer | " + " | ".join(consumer_title(c) for c in consumers) + " |",
           "|---|" + "---|" * len(consumers)]
  for p in summary["producers"]:
    row = summary["cells"].get(p, {})
    texts = []
    for c in consumers:
      cell = row.get(c)
      texts.append("-" if cell is None else f"{cell['passed']}/{cell['replayed']}"
                   + (" *" if cell["must_pass"] else ""))
    lines.append(f"| {p} | " + " | ".join(texts) + " |")
  return "\n".join(lines) + "\n"


def write(matrix: dict[str, Any], out_dir: str | os.PathLike) -> tuple[Path, Path]:
  """Write ``matrix.json`` and ``matrix.md`` into ``out_dir``."""
  out = Path(out_dir)
  out.mkdir(parents=True, exist_ok=True)
  json_path, text_path = out / "matrix.json", out / "matrix.md"
  json_path.write_text(json.dumps(matrix, indent=1, sort_keys=True) + "\n")
  text_path.write_text(render_text(matrix))
  (out / "matrix-summary.json").write_text(json.dumps(summarize(matrix), indent=1, sort_keys=True)
                                           + "\n")
  return json_path, text_path
