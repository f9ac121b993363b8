"""The Python steps of ``replay_on_accelerator.sh``: the CPU cross-check and the summary.

``crosscheck`` judges every recorded entry of the platform in a store against the
same case computed on this machine's CPU, with the case's checker and the
tolerance the entry records (never wider for an accelerator), in both
directions: the CPU result against the recorded one, and the recorded one
against the CPU result (which checks the recorded result's own invariants:
reconstruction, orthogonality). ``summarize`` reads what the steps left in the
work folder (any of it may be missing: a step failed or ran out of time) and
writes the output folder: the archive of the new entries, the JSON report, and
the harness's own reports::

  python tools/accelerator/_accelerator_run.py crosscheck --store DIR --platform tpu --out FILE.json
  python tools/accelerator/_accelerator_run.py summarize --work DIR --out DIR --platform tpu [--cases EXPR]

``summarize`` imports neither jax nor the case modules, so it writes its report
even where jax cannot start.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import shutil
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
  sys.path.insert(0, str(REPO_ROOT))

from jaxport.custom_calls import _registry  # noqa: E402
from jaxport.errors import JaxportError  # noqa: E402
from jaxport.golden._entry import Entry  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402

logger = logging.getLogger("replay_on_accelerator")

REPORT_FORMAT = 1
# What the output folder holds: at most eight files, none in a subfolder.
ARCHIVE = "entries.tar.gz"
REPORT = "accelerator-report.json"
LOG = "accelerator-run.log"
HARNESS_REPORTS = {"record": "compat-record.json", "replay": "compat-replay.json",
                   "corpus": "compat-corpus.json"}
CROSSCHECK = "crosscheck.json"
OUTPUT_FILES = (ARCHIVE, REPORT, LOG, CROSSCHECK, *HARNESS_REPORTS.values())
# The work folder's files, written by the shell script's steps.
STEPS_FILE = "steps.tsv"
CORPUS_IMPORT = "corpus-import.json"
STORE = "store"
INSTALL_STEP = "install"
# The exit status the script writes for a store step it had no case to run for.
NOT_NEEDED = "none"
# The steps that work on the platform's own cases, and the verdicts they decide.
STORE_STEPS = ("record", "crosscheck", "replay")
STORE_VERDICTS = ("targets", "crosscheck", "replay")
# The record actions after which a case's entry is in the work store as the case is today.
TAKEN_ACTIONS = ("written", "unchanged")
# Where the archive's entries go, relative to the repository root (``tar xzf`` there).
ARCHIVE_ROOT = "compat_data"


# --- crosscheck --------------------------------------------------------------------------


def crosscheck(store: Path, platform: str, record_report: Path) -> dict[str, Any]:
  """Every entry of ``platform`` in ``store`` whose case this run's record step took (its
  report, ``record_report``: written now, or unchanged from the repository's seeded entry)
  judged against its case's result on the CPU."""
  import jax

  import harness.cases as repository

  cpu = jax.devices("cpu")[0]
  problems: list[str] = []
  taken = _recorded_cases(_load(record_report, problems))
  listed = [e for e in _all_entries(GoldenStore(store), platform, problems)
            if e.manifest.case_id in taken]
  entries = [_crosscheck_entry(e, repository.case(e.manifest.case_id),
                               repository.cpu_reference(e.manifest.case_id), cpu)
             for e in listed]
  return {"platform": platform, "cpu_device": str(cpu), "entries": entries, "problems": problems,
          "cases": {c.case_id: sorted(c.targets) for c in repository.cases_for(platform)},
          "unreachable": dict(repository.UNREACHABLE)}


def _recorded_cases(report: Any) -> set[str]:
  """The cases a record step's harness report says it recorded or found unchanged."""
  if not isinstance(report, Mapping):
    return set()
  return {r["case_id"] for r in report.get("recorded", ()) if isinstance(r, Mapping)
          and isinstance(r.get("case_id"), str) and r.get("action") in TAKEN_ACTIONS}


def _first_line(e: BaseException) -> str:
  lines = str(e).strip().splitlines()
  return f"{type(e).__name__}: {lines[0] if lines else ''}"[:1000]


def _crosscheck_entry(entry: Entry, case: Any, reference: Any, cpu: Any) -> dict[str, Any]:
  """One entry's recorded outputs and the CPU result of the case's ``reference`` function (its
  own, or a Pallas kernel interpreted) on the entry's own inputs, judged with the checker and
  the tolerance of each output the entry records."""
  import jax
  import numpy as np

  from jaxport.harness._worker import _case_runs, _gradients, _jax_setup
  from jaxport.harness import checkers

  m = entry.manifest
  c = m.comparison
  out: dict[str, Any] = {"entry_id": str(entry.entry_id), "case_id": m.case_id,
                         "targets": sorted({s.target for s in m.custom_call_targets}),
                         "checker": c.mode, "rtol": c.rtol, "atol": c.atol}
  if m.lowering_only:
    return {**out, "status": "skipped", "why": "lowering-only entry: no recorded outputs"}
  if case is None:
    return {**out, "status": "error", "why": f"no registered case {m.case_id}"}
  if case.vjp_order or case.num_devices > 1 or _gradients.entry_has_vjp(m):
    return {**out, "status": "skipped",
            "why": "a case with a VJP or several devices is not computed on one CPU device here"}
  try:
    inputs, recorded = entry.inputs(), entry.expected_outputs()
    args, kwargs, today = _case_runs.case_inputs(case)
    if len(today) != len(inputs) or not all(
        np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(today, inputs)):
      return {**out, "status": "error",
              "why": "the entry's inputs are not the case's inputs of today: record it again"}
    config = {**_jax_setup.entry_jax_config(m), **dict(case.jax_flags)}
    with _jax_setup.jax_config(config), jax.default_device(cpu):
      a, k = jax.tree.unflatten(jax.tree.structure((args, kwargs)), inputs)
      computed = [np.asarray(x) for x in jax.tree.leaves(jax.jit(reference)(*a, **k))]
  except Exception as e:  # noqa: BLE001  (the finding is the report's)
    return {**out, "status": "error", "why": f"computing the case on the CPU failed: {_first_line(e)}"}
  per_output = None if m.tolerances is None else [
      checkers.OutputTolerance(t.path, t.rtol, t.atol) for t in m.tolerances]
  if per_output is not None:
    out["tolerances"] = {t.path: [t.rtol, t.atol] for t in m.tolerances}
  # The flags the case computes under, the matrix-product precision among them (the module
  # holds it too, as each product's precision).
  out["jax_flags"] = {name: value for name, value in case.jax_flags}

  def judged(want: Any, got: Any) -> Any:
    return checkers.BUILTIN.check(c.mode, inputs, want, got, rtol=c.rtol, atol=c.atol,
                                     outputs=per_output)

  cpu_vs_recorded, recorded_vs_cpu = judged(recorded, computed), judged(computed, recorded)
  ok = cpu_vs_recorded.ok and recorded_vs_cpu.ok
  return {**out, "status": "pass" if ok else "fail",
          "cpu_against_recorded": cpu_vs_recorded.to_json(),
          "recorded_against_cpu": recorded_vs_cpu.to_json()}


# --- summarize ---------------------------------------------------------------------------


def _load(path: Path, problems: list[str]) -> Any:
  """A JSON file a step wrote, or None (missing: the step did not get that far)."""
  if not path.is_file():
    return None
  try:
    return json.loads(path.read_text())
  except (OSError, ValueError) as e:
    problems.append(f"{path.name} cannot be read: {e}")
    return None


def read_steps(path: Path) -> list[dict[str, Any]]:
  """The steps the script ran: name, exit status, seconds, time limit (a tab-separated file)."""
  steps = []
  if path.is_file():
    for line in path.read_text().splitlines():
      parts = line.split("\t")
      if len(parts) == 4 and parts[1] == NOT_NEEDED:
        steps.append({"step": parts[0], "rc": None, "seconds": 0, "limit_s": 0,
                      "timed_out": False, "not_run": "no cases of the platform are registered"})
      elif len(parts) == 4 and parts[1].lstrip("-").isdigit():
        rc = int(parts[1])
        steps.append({"step": parts[0], "rc": rc, "seconds": int(parts[2]),
                      "limit_s": int(parts[3]), "timed_out": rc in (124, 137)})
  return steps


def _all_entries(store: GoldenStore, platform: str, problems: list[str]) -> list[Entry]:
  """The entries of ``platform`` in ``store`` (none where it cannot be listed, said once)."""
  try:
    return store.entries(platform=platform)
  except JaxportError as e:
    message = f"the work store cannot be listed: {e}"
    if message not in problems:
      problems.append(message)
    return []


def _new_entries(store: GoldenStore, platform: str, repo_store: Path,
                 problems: list[str]) -> list[Entry]:
  """The entries of ``platform`` in ``store`` that the repository's store does not hold."""
  return [e for e in _all_entries(store, platform, problems)
          if not (repo_store / str(e.entry_id)).exists()]


def write_archive(entries: Sequence[Entry], path: Path) -> list[str]:
  """A tar.gz of ``entries`` under ``compat_data/<entry id>/``; the ids archived."""
  with tarfile.open(path, "w:gz") as tar:
    for e in entries:
      for f in sorted(e.path.iterdir()):
        tar.add(f, arcname=f"{ARCHIVE_ROOT}/{e.entry_id}/{f.name}", recursive=False)
  return [str(e.entry_id) for e in entries]


def _by_id(items: Any, key: str = "entry_id") -> dict[str, Any]:
  return {x[key]: x for x in items or () if isinstance(x, Mapping) and key in x}


def covered(crosscheck: Mapping[str, Any], replay: Mapping[str, Any]) -> bool:
  """Whether a target's entries cover it: each replayed well, and each was cross-checked
  against the CPU or skipped there with its reason (a VJP case, judged by its replay), at
  least one of them cross-checked."""
  checks = list(crosscheck.values())
  return ("pass" in checks and all(v in ("pass", "skipped") for v in checks)
          and all(v in ("pass", "drift") for v in replay.values()))


def _target_rows(platform: str, entries: Sequence[Entry], cross: Mapping[str, Any],
                 replayed: Mapping[str, Any], check: Mapping[str, Any] | None,
                 record: Mapping[str, Any] | None, filtered: bool) -> list[dict[str, Any]]:
  """Per stable target of ``platform``: the entries with outputs that call it (the
  repository's and the new ones), their cross-check and replay, or why there is none
  (``UNREACHABLE``, a failed recording)."""
  unreachable = (check or {}).get("unreachable", {})
  case_targets = (check or {}).get("cases", {})
  failed = {r["case_id"]: r.get("message", "") for r in (record or {}).get("recorded", ())
            if r.get("action") in ("error", "conflict")}
  rows = []
  for target in sorted(_registry.stable_targets(platform)):
    ids = [str(e.entry_id) for e in entries if not e.manifest.lowering_only
           and target in {s.target for s in e.manifest.custom_call_targets}]
    row: dict[str, Any] = {"target": target, "entries": ids,
                           "crosscheck": {i: cross.get(i, {}).get("status") for i in ids},
                           "replay": {i: replayed.get(i, {}).get("status") for i in ids}}
    if ids:
      row["status"] = "covered" if covered(row["crosscheck"], row["replay"]) else "failed"
    elif target in unreachable:
      row.update(status="unreachable", reason=unreachable[target])
    else:
      why = [f"recording {case} failed: {failed[case].splitlines()[0] if failed[case] else ''}"
             for case, targets in sorted(case_targets.items()) if target in targets and case in failed]
      if not why:
        why = ["not selected by --cases" if filtered else
               f"no entry was recorded (no registered {platform} case calls it, or the record "
               "step did not finish)"]
      row.update(status="missing", reason="; ".join(why))
    rows.append(row)
  return rows


def _harness_part(report: Any) -> dict[str, Any] | None:
  if not isinstance(report, Mapping):
    return None
  failing = [{"entry_id": e.get("entry_id"), "messages": list(e.get("messages", ()))[:5]}
             for e in report.get("entries", ()) if e.get("status") == "fail"]
  return {"summary": report.get("summary"), "session_failures": report.get("session_failures"),
          "failing": failing}


def summarize(work: Path, out: Path, platform: str, cases_filter: str | None,
              repo_store: Path) -> dict[str, Any]:
  """Write the output folder from what the steps left in ``work``; the report."""
  problems: list[str] = []
  steps = read_steps(work / STEPS_FILE)
  harness = {name: _load(work / file, problems) for name, file in HARNESS_REPORTS.items()}
  check = _load(work / CROSSCHECK, problems)
  imported = _load(work / CORPUS_IMPORT, problems)
  entries = _new_entries(GoldenStore(work / STORE), platform, repo_store, problems)
  archived = write_archive(entries, out / ARCHIVE)
  # Coverage counts the entries this run took: the repository's (seeded) that it cross-checked,
  # and the new ones.
  new_ids = {str(e.entry_id) for e in entries}
  checked = _by_id((check or {}).get("entries"))
  every = [e for e in _all_entries(GoldenStore(work / STORE), platform, problems)
           if str(e.entry_id) in new_ids or str(e.entry_id) in checked]
  for name, file in HARNESS_REPORTS.items():
    if (work / file).is_file():
      shutil.copyfile(work / file, out / file)
  if (work / CROSSCHECK).is_file():
    shutil.copyfile(work / CROSSCHECK, out / CROSSCHECK)
  cross = _by_id((check or {}).get("entries"))
  replayed = _by_id((harness["replay"] or {}).get("entries"))
  filtered = bool(cases_filter)
  targets = _target_rows(platform, every, cross, replayed, check, harness["record"], filtered)
  hosts = [e.manifest.host.to_json() for e in entries
           if not e.manifest.lowering_only and e.manifest.host is not None]
  corpus = _harness_part(harness["corpus"])
  if corpus is not None and isinstance(imported, Mapping):
    corpus["imported"] = len(imported.get("imported", ()))
    corpus["import_failed"] = list(imported.get("failed", ()))
  # The install is judged by the steps after it: where pip cannot install the checkout (no
  # setuptools in the image), the script loads jaxport from it instead.
  verdicts = {
      "steps": bool(steps) and all(s["rc"] in (0, None) for s in steps
                                   if s["step"] != INSTALL_STEP),
      "targets": filtered or all(r["status"] in ("covered", "unreachable") for r in targets),
      "crosscheck": bool(cross) and all(x.get("status") in ("pass", "skipped")
                                        for x in cross.values()),
      "replay": _passed(harness["replay"]),
      "corpus": _passed(harness["corpus"]),
  }
  # Until the platform has cases, its store steps have nothing to do: only the corpus and the
  # steps that ran are judged, and the report says why the rest is not.
  none_yet = {s["step"] for s in steps if s["rc"] is None} >= set(STORE_STEPS)
  not_judged = {}
  if none_yet:
    for name in STORE_VERDICTS:
      verdicts.pop(name)
      not_judged[name] = f"no {platform} cases are registered yet, so nothing was recorded"
  report = {
      "format": REPORT_FORMAT,
      "platform": platform,
      "mode": "device" if platform != "cpu" else "dry run on the CPU",
      "cases": cases_filter,
      "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      "ok": all(verdicts.values()) and not problems,
      "verdicts": verdicts,
      "not_judged": not_judged,
      "steps": steps,
      "versions": (harness["replay"] or harness["record"] or {}).get("versions"),
      "recording_hosts": [h for i, h in enumerate(hosts) if h not in hosts[:i]],
      "targets": targets,
      "crosscheck": list(cross.values()),
      "replay": _harness_part(harness["replay"]),
      "corpus": corpus,
      "archive": {"file": ARCHIVE, "root": ARCHIVE_ROOT, "entries": archived},
      "problems": problems,
  }
  (out / REPORT).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
  return report


def _passed(report: Any) -> bool:
  """A harness report's entries all judged, none failing (False when there is no report)."""
  if not isinstance(report, Mapping) or not isinstance(report.get("summary"), Mapping):
    return False
  summary = report["summary"]
  return summary.get("fail", 1) == 0 and summary.get("replayed", 0) > 0


# --- command line ------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(prog="python tools/accelerator/_accelerator_run.py",
                                   description=__doc__.splitlines()[0])
  actions = parser.add_subparsers(dest="action", required=True)
  c = actions.add_parser("crosscheck", help="judge recorded outputs against the CPU result")
  c.add_argument("--store", required=True, type=Path)
  c.add_argument("--platform", required=True)
  c.add_argument("--out", required=True, type=Path)
  c.add_argument("--record-report", required=True, type=Path,
                 help="the record step's harness report: the cases it took are cross-checked")
  s = actions.add_parser("summarize", help="write the archive and the report")
  s.add_argument("--work", required=True, type=Path)
  s.add_argument("--out", required=True, type=Path)
  s.add_argument("--platform", required=True)
  s.add_argument("--cases", default=None)
  s.add_argument("--repo-store", type=Path, default=REPO_ROOT / "compat_data")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
  if args.action == "crosscheck":
    result = crosscheck(args.store, args.platform, args.record_report)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    bad = [x["entry_id"] for x in result["entries"] if x["status"] not in ("pass", "skipped")]
    logger.info("crosscheck: %d entries, %d not passing %s", len(result["entries"]), len(bad), bad)
    return 1 if bad or result["problems"] or not result["entries"] else 0
  report = summarize(args.work, args.out, args.platform, args.cases, args.repo_store)
  logger.info("summary: ok=%s %s; %d new entries in %s", report["ok"], report["verdicts"],
              len(report["archive"]["entries"]), args.out / ARCHIVE)
  return 0 if report["ok"] else 1


if __name__ == "__main__":
  sys.exit(main())
