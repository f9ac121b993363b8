"""Measure the release table (``jaxport/releases/release_table.json``): what each jax release reads,
writes and registers.

The checkout's ``harness/tools/release_table.py`` is the command; it names the store whose
release cases give the sample blobs.

For every release of the table (or ``--releases``; a release it does not list yet with
``--date``, the day its wheels were first published), in
its own venv (reused from ``.jax-venvs/`` where one exists, else built in a
scratch folder and deleted after measuring unless ``--keep-venvs``), one release
at a time, this measures:

- the StableHLO versions its jaxlib writes and reads (``get_current_version``,
  ``get_minimum_version``) and the VHLO operations its jaxlib defines (the op
  names compiled into its shared libraries);
- the calling conventions it exports and calls (``jax.export``'s or
  ``jax.experimental.export``'s minimum/maximum supported versions);
- which envelope layouts its ``jax.export.deserialize`` reads (one blob per
  layout, as ``harness/tools/reader_policy.py`` always measured), and from that
  the serialization versions it accepts and whether it has an expiry policy;
  which device-count field it takes (a one-device blob with only ``nr_devices``,
  one with only the older ``nr_devices_short``);
- whether its jaxlib reads a StableHLO newer than its own (the newest
  release's export of ``sin``) and a module using the ``sdy`` dialect (the
  oldest release-case module whose bytecode lists it), and whether its reader
  refuses a calling convention above its maximum (its own export of ``sin`` at
  that version, serialized, read back and called);
- the cpu custom-call targets it registers: a minimal module calling each
  target of any release's stable table and of jaxport's upgrade rules is
  compiled on cpu (and, for a typed FFI target, executed without operands, whose
  refusal names the operand count the handler binds); a made-up target must
  fail, or the release is not measured;
- its own stable-target table, split per platform (cuda, rocm and tpu are taken
  from it only, never measured).

A release that shipped no jaxlib of its own number is measured with the jaxlib its
``[cpu]`` extra installs (recorded as ``jaxlib``); a release the package index
serves on none of Python 3.11 to 3.13 is listed with pip's reason. Results are written after
each release; a rerun skips releases already measured (``--force`` measures them again), and one
with none left to measure writes nothing. With ``--force`` or ``--reader-only``, a measured
release whose venv no longer builds keeps its record as it is: the command names it with pip's
reason and exits 1 once the others are written.

    python harness/tools/release_table.py                       # every release, resumably
    python harness/tools/release_table.py --releases 0.9.1 --keep-venvs
    python harness/tools/release_table.py --reader-only --out NEW.json   # reader facts again
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from jaxport.multirelease import _envs
from jaxport.multirelease._table_samples import sample_blobs
from jaxport.multirelease._replay import IN_RELEASE
from jaxport._files import write_replacing
from jaxport._vocabulary import PLATFORMS
from jaxport.custom_calls import _registry
from jaxport.releases import _table
from jaxport.releases._features import module_dialects as _mlir_dialects
from jaxport._platforms import target_platform
from jaxport.releases._dates import BACKWARD_WINDOW_DAYS
from jaxport.releases._version_text import parse_version
from jaxport.export import _mlir
from jaxport.serde import _read, _verify
from jaxport.serde._read import read_serialization_version
from jaxport.upgrades import read_any_envelope
from jaxport.upgrades import _table as upgrade_table

logger = logging.getLogger(__name__)
FIRST, LAST = "0.4.26", "0.12.0.1"
DEFAULT_SCRATCH = Path(tempfile.gettempdir()) / "jaxport-release-table-venvs"
UNKNOWN_TARGET = "jaxport_no_such_target_ffi"
# The scripts run in each release's own interpreter (never importing jaxport).
MEASURE_RELEASE = IN_RELEASE / "measure_release.py"
PROBE_TARGETS = IN_RELEASE / "probe_targets.py"
# How an installer says the package index serves no such release: pip's words, then uv's.
_UNSERVED = ("No matching distribution", "Could not find a version", "there is no version of")

def candidate_releases(doc: dict[str, Any]) -> list[str]:
  """The releases of the table ``doc`` from 0.4.26 to 0.12.0.1, oldest first."""
  lo, hi = parse_version(FIRST), parse_version(LAST)
  return sorted((v for v in doc.get("releases", {}) if lo <= parse_version(v) <= hi),
                key=parse_version)


def release_day(doc: dict[str, Any], version: str, given: str | None) -> str:
  """The first upload day of ``version``: the table's own, else ``given`` (``--date``)."""
  known = doc.get("releases", {}).get(version, {}).get("date")
  if given is not None:
    try:
      datetime.date.fromisoformat(given)
    except ValueError:
      raise SystemExit(f"--date {given!r} is not a day: give it as YYYY-MM-DD") from None
    if known is not None and known != given:
      raise SystemExit(f"jax {version}: the table dates it {known}, not {given}")
    return given
  if known is None:
    raise SystemExit(f"jax {version} is not in the table yet: give the day its wheels were "
                     "first published with --date YYYY-MM-DD")
  return known


def probed_targets(doc: dict[str, Any]) -> list[str]:
  """Every target of jaxport's stable table, of the stable tables measured so far and of the
  upgrade rules (legacy and successor), then the made-up one that must not compile."""
  names = set(_registry.stable_targets("cpu"))
  for rule in upgrade_table.rules():
    for letter in rule.letters:
      names.update((rule.legacy_target(letter), rule.successor_target(letter)))
  for facts in doc.get("releases", {}).values():
    names.update((facts.get("stable_targets") or {}).get("cpu", ()))
  return sorted(names) + [UNKNOWN_TARGET]


def _platform_split(flat: list[str]) -> dict[str, list[str]]:
  """A release's flat stable table per platform: by jaxport's platform table, the rest by
  name (cpu: lapack/blas/ducc; cuda: cu*; rocm: hip*; tpu: tpu_*), platform-free ones on all."""
  known = _registry.targets_by_platform()
  out: dict[str, set[str]] = {p: set() for p in PLATFORMS}
  for t in flat:
    placed = [p for p in PLATFORMS if t in known.get(p, ())]
    if not placed:
      owner = target_platform(t)
      placed = [owner] if owner is not None else list(PLATFORMS)
    for p in placed:
      out[p].add(t)
  return {p: sorted(ts) for p, ts in out.items()}


def facts_from(got: dict[str, Any], today: str, header: dict[str, int]) -> dict[str, Any]:
  """The table's record of one release from the measurement script's output."""
  probes = got["probes"]
  if probes.get(UNKNOWN_TARGET, {}).get("registered", True):
    raise RuntimeError(f"jax {got['jax']}: the made-up target {UNKNOWN_TARGET} compiled, so "
                       "compiling does not tell registered targets apart")
  return {
      "installable": True, "not_installable_reason": None, "measured_on": today,
      "python": got["python"], "jaxlib": got["jaxlib"],
      "stablehlo": got["stablehlo"], "vhlo_ops": got["vhlo_ops"],
      "calling_conventions": got["calling_conventions"],
      **_layout_facts(got, header),
      "cpu_targets": sorted(t for t, p in probes.items() if p["registered"] and t != UNKNOWN_TARGET),
      "cpu_xla_builtin_targets": sorted(t for t, p in probes.items() if p.get("xla_builtin")),
      "cpu_target_operands": {t: p["operands"] for t, p in sorted(probes.items()) if "operands" in p},
      "cpu_target_errors": {t: p["error"] for t, p in sorted(probes.items())
                            if not p["registered"] and t != UNKNOWN_TARGET},
      "stable_targets": _platform_split(got["stable_table"]),
      "stable_targets_note": "cuda, rocm, tpu: stable table only, not measured",
      **reader_facts(got),
  }


def _layout_facts(got: dict[str, Any], header: dict[str, int]) -> dict[str, Any]:
  """The layouts its reader reads, the serialization versions that makes and its expiry."""
  layouts = got["envelope_layouts"]
  ser = sorted({header[layout] for layout, r in layouts.items() if r["status"] == "reads"})
  expiring = any(r["status"] == "refuses_expired" for r in layouts.values())
  return {"envelope_layouts": layouts, "serialization_versions_read": ser,
          "expiry_days": BACKWARD_WINDOW_DAYS if expiring else None}


def reader_facts(got: dict[str, Any]) -> dict[str, Any]:
  """The reader facts beyond the layouts: which device-count fields it takes, whether it reads a
  newer StableHLO, whether it refuses a calling convention above its maximum."""
  return {"device_count_fields": got["device_count_fields"],
          "newer_stablehlo": got["newer_stablehlo"], "sdy_dialect": got["sdy_dialect"],
          "calling_convention_above_max": got["calling_convention_above_max"]}


def _pythons_for(version: str) -> list[str | None]:
  """Base Pythons to try, in order: the release's usual one, then the newest 3.11, 3.12 and 3.13
  under pyenv (by version number, so 3.11.10 before 3.11.9)."""
  root = _envs.pyenv_root()
  extra = []
  if root is not None:
    for minor in ((3, 11), (3, 12), (3, 13)):
      newest = _envs.pyenv_pythons(_envs.PythonNeed(minor, minor, ()), root)[:1]
      extra += [str(p) for p in newest]
  return [None, *extra]


def build_venv(version: str, scratch: Path) -> tuple[Path | None, str | None]:
  """(python, None) of a venv for ``version`` built under ``scratch``, or (None, pip's reason)."""
  reasons = []
  for base in _pythons_for(version):
    try:
      return _envs.ensure_venv(version, scratch, base=base), None
    except Exception as e:  # the installer's failure, kept as the reason
      text = str(e)
      line = next((ln.strip() for ln in text.splitlines() if any(w in ln for w in _UNSERVED)),
                  text.strip().splitlines()[-1] if text.strip() else "")
      reasons.append(f"{base or 'default Python'}: {line[:200]}")
      shutil.rmtree(_envs.venv_dir(version, scratch), ignore_errors=True)
  if all(f"jaxlib=={version}" in r for r in reasons):
    # Some releases shipped no jaxlib of their own number: measure them with the jaxlib their
    # own [cpu] extra names (the one pip installs for `jax[cpu]==X`).
    python = _build_with_own_extra(version, scratch)
    if python is not None:
      return python, None
  return None, "pip: no matching distribution on Python 3.11 to 3.13 (" + "; ".join(reasons) + ")"


def _build_with_own_extra(version: str, scratch: Path) -> Path | None:
  """The python of a venv with ``jax[cpu]==version`` (and the rest of the release's pins but
  jaxlib's), or None when pip refuses that too."""
  d = _envs.venv_dir(version, scratch)
  shutil.rmtree(d, ignore_errors=True)
  reqs = [f"jax[cpu]=={version}", *(r for r in _envs.requirements(version)
                                   if not r.startswith(("jax==", "jaxlib==")))]
  try:
    base = _envs.find_python(version)
    subprocess.run([base, "-m", "venv", str(d)], check=True, capture_output=True, text=True)
    subprocess.run([str(d / "bin" / "python"), "-m", "pip", "install", "--quiet", *reqs],
                   check=True, capture_output=True, text=True, timeout=1800)
  except (subprocess.CalledProcessError, subprocess.TimeoutExpired, _envs.VenvError) as e:
    logger.info("jax %s: jax[cpu] install failed too: %s", version, str(e)[-300:])
    shutil.rmtree(d, ignore_errors=True)
    return None
  logger.info("jax %s: measured with the jaxlib of its [cpu] extra", version)
  return d / "bin" / "python"


def probe_targets(python: Path, targets: list[str]) -> dict[str, dict[str, Any]]:
  """Each target's probe; a target that aborts the process (XLA's own calls, such as
  ``Sharding``, checked for their operands) is recorded as handled by XLA, and the probe
  goes on in a new process with the next target."""
  found: dict[str, dict[str, Any]] = {}
  left = list(targets)
  while left:
    proc = subprocess.run([str(python), str(PROBE_TARGETS), json.dumps(left)],
                          capture_output=True, text=True, timeout=1200)
    started = None
    for line in proc.stdout.splitlines():
      if not line.startswith("{"):
        continue
      row = json.loads(line)
      if row.pop("started", False):
        started = row["target"]
      else:
        found[row.pop("target")] = row
        started = None
    if proc.returncode == 0:
      break
    if started is None:
      raise RuntimeError(f"{python}: the probe failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    why = next((ln for ln in proc.stderr.splitlines() if "Check failed" in ln), proc.stderr[-200:])
    found[started] = {"registered": False, "xla_builtin": True,
                      "error": f"the compile aborted the process: {why.strip()[-200:]}"}
    left = [t for t in targets if t not in found]
  return found


def measure_reader(python: Path, samples: dict[str, Any]) -> dict[str, Any]:
  """The release's StableHLO, calling-convention, stable-table and reader facts."""
  proc = subprocess.run([str(python), str(MEASURE_RELEASE), json.dumps(samples)],
                        capture_output=True, text=True, timeout=1200)
  if proc.returncode != 0:
    raise RuntimeError(f"{python} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_one(python: Path, targets: list[str], samples: dict[str, Any]) -> dict[str, Any]:
  got = measure_reader(python, samples)
  # Targets tied to no platform (XLA's and jax's own: Sharding, shape_assertion, ...) are not
  # probed: a bare call of them aborts XLA's operand checks or needs shape refinement.
  wanted = sorted(t for t in set(targets) | set(got["stable_table"])
                  if target_platform(t) is not None or t == UNKNOWN_TARGET)
  got["probes"] = probe_targets(python, wanted)
  return got


def _write(doc: dict[str, Any], path: Path) -> None:
  _table.parse(doc, str(path))   # never write what the loader would refuse
  write_replacing(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())


def _release_modules(store: Path):
  """(entry folder, module) of the release cases' entries of the platform folder ``store``,
  oldest producer first; the folder named from the store's root."""
  blobs = sorted(store.rglob("release_*/*/exported.bin"),
                 key=lambda b: (parse_version(b.parent.name.rsplit("_jax-", 1)[-1]), str(b)))
  for blob in blobs:
    exp, _ = read_any_envelope(blob.read_bytes())
    yield (str(blob.parent.relative_to(store.parent.parent)),
           bytes(exp.mlir_module_serialized))


def reader_samples(tmp: Path, samples: dict[str, tuple[str, Path]], store: Path) -> dict[str, Any]:
  """What the measurement script reads: one blob per layout, one one-device blob per device-count
  field (only that field set) and the module of the newest release's own export of sin; the
  entries come from the cpu folder ``store`` of a golden store."""
  by_field: dict[str, str] = {}
  for blob in sorted(store.rglob("release_*/*/exported.bin")):
    t = _verify.decode(blob.read_bytes())
    long_, short = t[_read._X.nr_devices], t[_read._X.nr_devices_short]
    field = ("nr_devices" if long_ == 1 and not short else
             "nr_devices_short" if short == 1 and not long_ else None)
    if field is not None:
      by_field.setdefault(field, str(blob))
  written = tmp / f"jax-{LAST}.bin"     # sample_blobs wrote it with jax LAST
  module = bytes(read_any_envelope(written.read_bytes())[0].mlir_module_serialized)
  module_path = tmp / f"jax-{LAST}.mlirbc"
  module_path.write_bytes(module)
  sdy = next(m for m in (_release_modules(store)) if _mlir_dialects(m[1]) >= {"sdy"})
  sdy_path = tmp / "sdy.mlirbc"
  sdy_path.write_bytes(sdy[1])
  return {"blobs": {layout: str(path) for layout, (_, path) in samples.items()},
          "device_count_blobs": by_field,
          "sdy_module": {"version": _mlir.artifact_version(sdy[1]), "path": str(sdy_path),
                         "from": sdy[0]},
          "newer_module": {"version": _mlir.artifact_version(module), "path": str(module_path)}}


def _python_for(version: str, scratch: Path) -> tuple[Path | None, str | None, bool]:
  """(python, not-installable reason, whether it was built here) for ``version``'s venv."""
  if _envs.is_ready(version):
    return _envs.venv_python(version), None, False
  python, reason = build_venv(version, scratch)
  return python, reason, True


def _to_measure(doc: dict[str, Any], wanted: list[str], force: bool,
                reader_only: bool) -> dict[str, bool]:
  """The releases of ``wanted`` to measure, each with whether only its reader facts are measured
  again (``--reader-only`` on a release measured before); the others are in the table already."""
  todo = {}
  for version in wanted:
    known = doc.get("releases", {}).get(version)
    again = bool(reader_only and known is not None and known.get("installable"))
    if known is not None and not force and not again:
      logger.info("jax %s: already in the table", version)
    else:
      todo[version] = again
  return todo


def _nothing_measured(wanted: list[str]) -> str:
  """What the command says when every release it was asked for is in the table already."""
  if not wanted:
    return (f"nothing to measure: the table lists no release from {FIRST} to {LAST}; name one "
            "with --releases and --date")
  return (f"nothing to measure: {len(wanted)} releases already in the table (use --force to "
          "measure them again)")


def main(argv: list[str] | None, store: Path, method: str) -> int:
  """The command: measure the releases ``argv`` names into the table, with sample blobs from
  the golden store ``store`` (its release cases); ``method`` says how, in the table's words."""
  parser = argparse.ArgumentParser(description="Generate the release table: what each jax "
                                   "release reads, writes and registers.")
  parser.add_argument("--releases", nargs="+", help="only these releases")
  parser.add_argument("--date", help="with one release of --releases that the table does not "
                      "list yet: the day its wheels were first published (YYYY-MM-DD)")
  parser.add_argument("--keep-venvs", action="store_true", help="keep the venvs built here")
  parser.add_argument("--force", action="store_true",
                      help="measure releases already in the table; one whose venv no longer "
                           "builds keeps its record and the command exits 1")
  parser.add_argument("--reader-only", action="store_true",
                      help="for releases already measured, measure again only the reader facts "
                           "(layouts, device-count fields, newer StableHLO, calling convention "
                           "above the maximum), keeping the probed targets; one whose venv "
                           "no longer builds keeps its record and the command exits 1")
  parser.add_argument("--scratch", type=Path, default=DEFAULT_SCRATCH,
                      help="where venvs not under .jax-venvs are built (outside the repository)")
  parser.add_argument("--out", type=Path, default=_table.TABLE_FILE,
                      help="the table to update (default: the package's own)")
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.INFO, format="%(message)s")
  doc = json.loads(args.out.read_text()) if args.out.exists() else {}
  wanted = args.releases or candidate_releases(doc)
  if args.date is not None and len(wanted) != 1:
    parser.error("--date dates one release: give it with exactly one of --releases")
  days = {version: release_day(doc, version, args.date) for version in wanted}
  doc.setdefault("format_version", _table.FORMAT_VERSION)
  doc.setdefault("releases", {})
  doc["method"] = method
  todo = _to_measure(doc, wanted, args.force, args.reader_only)
  if not todo:
    print(_nothing_measured(wanted))
    return 0
  today = datetime.date.today().isoformat()
  written: list[str] = []
  with tempfile.TemporaryDirectory() as tmp:
    samples = sample_blobs(Path(tmp), LAST, store)
    doc["layouts_written_by"] = {layout: producer for layout, (producer, _) in samples.items()}
    header = {layout: read_serialization_version(path.read_bytes())
              for layout, (_, path) in samples.items()}
    doc["layouts_serialization_version"] = header
    inputs = reader_samples(Path(tmp), samples, store / "cpu")
    not_again: dict[str, str] = {}    # measured release: why its venv no longer builds
    for version, again in todo.items():
      targets = probed_targets(doc)
      doc["probed_targets"] = sorted(set(doc.get("probed_targets", [])) | set(targets[:-1]))
      known = doc["releases"].get(version)
      python, reason, built = _python_for(version, args.scratch)
      if python is None and known is not None and known.get("installable"):
        logger.warning("jax %s: not measured again, its record is kept: %s", version, reason)
        not_again[version] = reason
        continue
      if python is None:
        logger.info("jax %s: not installable: %s", version, reason)
        doc["releases"][version] = {"installable": False, "not_installable_reason": reason,
                                    "measured_on": today, "date": days[version]}
      else:
        try:
          if again:
            got = measure_reader(python, inputs)
            known.update(_layout_facts(got, header), **reader_facts(got))
            logger.info("jax %s: reader facts measured again", version)
          else:
            doc["releases"][version] = {
                **facts_from(measure_one(python, targets, inputs), today, header),
                "date": days[version]}
            logger.info("jax %s: measured (%d cpu targets)", version,
                        len(doc["releases"][version]["cpu_targets"]))
        finally:
          if built and not args.keep_venvs:
            shutil.rmtree(_envs.venv_dir(version, args.scratch), ignore_errors=True)
      doc["measured_on"] = today
      _write(doc, args.out)
      written.append(version)
  if written:
    print(f"wrote {args.out}: {len(written)} releases measured, {len(wanted) - len(todo)} "
          f"already in the table ({len(doc['releases'])} releases in it)")
  else:
    print(f"nothing written: {args.out} is as it was")
  if not_again:
    print("not measured again (their records are kept): "
          + "; ".join(f"{v} ({why})" for v, why in not_again.items()), file=sys.stderr)
    return 1
  return 0

