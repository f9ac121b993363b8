"""The nightly workflow's steps that decide something, run by ``.ci/nightly-cpu`` (see there).

  install LABEL              install the jax of LABEL (pinned: as installed; newest: the newest
                             release; nightly: jax's nightly wheels from JAX_NIGHTLY_INDEX) and
                             write reports/install-cpu-LABEL.json; a nightly that does not
                             install (none built, the index down) is said and tolerated
  summary LABEL              the job summary of the night: what was installed, the report with
                             the earlier nights' history (each failure's first failing build),
                             the report added to history/; exits 1 when the night fails: a
                             failing report, a missing report although jax installed, or the
                             third night in a row without a nightly
  fuzz-findings LOG FINDINGS the fuzz suite's failures (shrunk examples) and jax.export's own
                             findings as Markdown

Environment: REPORTS (reports), HISTORY (history), GITHUB_STEP_SUMMARY (the job summary file;
without it the summary goes to stdout), JAX_NIGHTLY_INDEX, NIGHTLY_DATE (the night's date,
default today, UTC), NIGHTLY_DRY_RUN=1 (install nothing: the installed jax stands in for
tonight's build, so the steps run offline).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# jax's index of nightly wheels only (jax's installation docs, "JAX nightly installation"):
# used beside the default index, which serves the nightlies' dependencies.
DEFAULT_NIGHTLY_INDEX = ("https://us-python.pkg.dev/ml-oss-artifacts-published/"
                         "jax-public-nightly-artifacts-registry/simple/")
# Nights in a row without an installed nightly that turn the run red.
MISSING_NIGHTS_LIMIT = 3
# Earlier runs' reports kept in history/.
HISTORY_KEPT = 60

REPORTS = Path(os.environ.get("REPORTS", "reports"))
HISTORY = Path(os.environ.get("HISTORY", "history"))


def _night() -> str:
  today = datetime.datetime.now(datetime.timezone.utc).date()
  return os.environ.get("NIGHTLY_DATE") or today.isoformat()


def _versions() -> dict[str, str | None]:
  code = ("import importlib.metadata as m, json\n"
          "def v(n):\n"
          "  try: return m.version(n)\n"
          "  except m.PackageNotFoundError: return None\n"
          "print(json.dumps({n: v(n) for n in ('jax', 'jaxlib')}))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  return json.loads(out.stdout)


def _pip(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-m", "pip", "install", *args],
                        capture_output=True, text=True)


def install(label: str) -> int:
  """Install LABEL's jax; write what was installed. Exit 1 when a release fails to install."""
  record: dict[str, object] = {"label": label, "night": _night(), "installed": True, "why": None}
  if os.environ.get("NIGHTLY_DRY_RUN") == "1" and label in ("newest", "nightly"):
    record["stand_in"] = "dry run: the installed jax stands in for this build"
  elif label == "newest":
    done = _pip("--upgrade", "jax", "jaxlib")
    if done.returncode:
      sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
      return 1
  elif label == "nightly":
    index = os.environ.get("JAX_NIGHTLY_INDEX") or DEFAULT_NIGHTLY_INDEX
    record["index"] = index
    done = _pip("--upgrade", "--pre", "jax", "jaxlib", "--extra-index-url", index)
    versions = _versions()
    if done.returncode:
      tail = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
      record.update(installed=False, why=f"pip could not install jax's nightly from {index}: {tail}")
    elif ".dev" not in (versions.get("jax") or ""):
      record.update(installed=False, why=f"{index} served no nightly newer than the release "
                                          f"jax {versions.get('jax')}")
  elif label != "pinned":
    print(f"nightly_steps install: unknown label {label!r}; use pinned, newest or nightly.",
          file=sys.stderr)
    return 2
  record.update(_versions())
  REPORTS.mkdir(parents=True, exist_ok=True)
  (REPORTS / f"install-cpu-{label}.json").write_text(json.dumps(record, indent=1) + "\n")
  github_output = os.environ.get("GITHUB_OUTPUT")
  if github_output:
    with open(github_output, "a") as f:
      f.write(f"installed={'true' if record['installed'] else 'false'}\n")
  if record["installed"]:
    print(f"{label}: jax {record['jax']}, jaxlib {record['jaxlib']}")
  else:
    print(f"{label}: no nightly tonight: {record['why']}")
  return 0


def _install_record(label: str) -> dict:
  path = REPORTS / f"install-cpu-{label}.json"
  if not path.is_file():
    return {"label": label, "installed": True, "why": None}
  return json.loads(path.read_text())


_KEPT_NAME = re.compile(r"(compat|no-build)-cpu-(.+)-(\d{4}-\d{2}-\d{2})-[^-]+\.json")


def _history_nights(label: str) -> list[tuple[str, bool]]:
  """(night, had a build) of the nights in history/, oldest first."""
  nights: dict[str, bool] = {}
  for p in HISTORY.glob("*.json"):
    m = _KEPT_NAME.fullmatch(p.name)
    if m and m.group(2) == label:
      nights[m.group(3)] = nights.get(m.group(3), False) or m.group(1) == "compat"
  return sorted(nights.items())


def _emit(text: str) -> None:
  target = os.environ.get("GITHUB_STEP_SUMMARY")
  if target:
    with open(target, "a") as f:
      f.write(text + "\n")
  else:
    print(text)


def _keep_newest() -> None:
  """Drop all but the newest :data:`HISTORY_KEPT` nights' files (by the night in the name)."""
  kept = [(m.group(3), p) for p in HISTORY.glob("*.json")
          if (m := _KEPT_NAME.fullmatch(p.name)) is not None]
  for _, p in sorted(kept, reverse=True)[HISTORY_KEPT:]:
    p.unlink()


def summary(label: str) -> int:
  """The night's job summary and verdict; the night's report (or its absence) goes to history."""
  night = _night()
  run_id = os.environ.get("GITHUB_RUN_ID", "local")
  HISTORY.mkdir(parents=True, exist_ok=True)
  installed = _install_record(label)
  report = REPORTS / f"compat-cpu-{label}.json"
  if not installed.get("installed", True):
    earlier = [had for n, had in _history_nights(label) if n != night]
    missing = 1
    for had in reversed(earlier):
      if had:
        break
      missing += 1
    (HISTORY / f"no-build-cpu-{label}-{night}-{run_id}.json").write_text(
        json.dumps({"night": night, "why": installed.get("why")}) + "\n")
    _keep_newest()
    line = (f"## jaxport compatibility: cpu, {label}\n\nNo jax nightly was installed on {night}: "
            f"{installed.get('why')}. Nights in a row without one: {missing} (the run fails at "
            f"{MISSING_NIGHTS_LIMIT}).")
    _emit(line)
    return 1 if missing >= MISSING_NIGHTS_LIMIT else 0
  if installed.get("stand_in"):
    _emit(f"{installed['stand_in']} (jax {installed.get('jax')}).\n")
  if not report.is_file():
    _emit(f"## jaxport compatibility: cpu, {label}\n\njax installed, but the replay wrote no "
          f"report ({report}): the replay or the merge failed before writing it; see the job log.")
    return 1
  earlier = sorted(str(p) for p in HISTORY.glob(f"compat-cpu-{label}-*.json"))
  page = REPORTS / f"compat-cpu-{label}.html"
  markdown = REPORTS / f"compat-cpu-{label}.md"
  rendered = subprocess.run(["jaxport", "report", "render", str(report), *earlier,
                             "--html", str(page), "--markdown", str(markdown)],
                            capture_output=True, text=True)
  if rendered.returncode:
    sys.stderr.write(rendered.stderr)
    _emit(f"## jaxport compatibility: cpu, {label}\n\nThe report did not render: "
          f"{rendered.stderr.strip().splitlines()[-1:]}")
    return 1
  _emit(markdown.read_text())
  (HISTORY / f"compat-cpu-{label}-{night}-{run_id}.json").write_bytes(report.read_bytes())
  _keep_newest()
  data = json.loads(report.read_text())
  failed = bool(data.get("session_failures")) or any(e.get("status") == "fail"
                                                      for e in data.get("entries", ()))
  return 1 if failed else 0


def fuzz_findings(log: str, findings: str) -> int:
  """The fuzz run's failures with their shrunk examples, and jax.export's own findings."""
  out = []
  text = Path(log).read_text(errors="replace") if Path(log).is_file() else ""
  failures = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, flags=re.M)
  examples = re.findall(r"Falsifying example: .*?(?=\n\n|\Z)", text, flags=re.S)
  blobs = re.findall(r"@reproduce_failure\([^)]*\)", text)
  out.append(f"### Symbolic-shape fuzzing: {len(failures)} failing properties")
  for name, example in zip(failures, examples + [""] * len(failures)):
    out += [f"- `{name}`", "", "```", example.strip()[:3000], "```"]
  out += [f"- reproduce with `{b}`" for b in blobs]
  path = Path(findings)
  lines = path.read_text().splitlines() if path.is_file() else []
  out.append(f"\n### jax.export's own findings ({len(lines)}): not jaxport failures")
  for line in lines[:100]:
    item = json.loads(line)
    out += [f"- {item['kind']}: {item['detail'][:300]}"]
  _emit("\n".join(out))
  return 0


def main(argv: list[str]) -> int:
  if len(argv) >= 2 and argv[0] == "install":
    return install(argv[1])
  if len(argv) >= 2 and argv[0] == "summary":
    return summary(argv[1])
  if len(argv) >= 3 and argv[0] == "fuzz-findings":
    return fuzz_findings(argv[1], argv[2])
  print(__doc__, file=sys.stderr)
  return 2


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
