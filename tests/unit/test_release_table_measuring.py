"""Measuring one jax release for the release table (``_table_measure``) without its venv: what
is probed, the release's record, the scripts its interpreter runs (stood in for by small scripts
the running interpreter runs) and building its venv (with stand-ins saying what pip would)."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from _release_measurements import measured, script
from jaxport.custom_calls import _registry
from jaxport.multirelease import _envs
from jaxport.multirelease import _table_measure as tm
from jaxport.releases import _table
from jaxport.releases._dates import BACKWARD_WINDOW_DAYS
from jaxport.upgrades import _table as upgrade_table

UNKNOWN = tm.UNKNOWN_TARGET

# Stand-in for probe_targets.py: a started line then a result line per target, as the real one
# prints them; ABORTS end the process as XLA's failed checks do, REGISTERED compile.
PROBE = """
import json, sys
targets = json.loads(sys.argv[1])
with open(sys.argv[0] + ".calls", "a") as log:
  log.write(json.dumps(targets) + "\\n")
print("a line of jaxlib's own, not a result")
for t in targets:
  print(json.dumps({"target": t, "started": True}), flush=True)
  if t in ABORTS:
    sys.stderr.write("noise\\nF0000 probe.cc:1] Check failed: operands.size() == 1 (0 vs. 1)\\n")
    sys.exit(134)
  if t in REGISTERED:
    row = {"registered": True, "error": None}
    if t.endswith("_ffi"):
      row["operands"] = 2
  else:
    row = {"registered": False, "error": "No registered implementation for " + t}
  print(json.dumps({"target": t, **row}), flush=True)
"""

# Stand-in for measure_release.py: prints what ANSWER holds, after a line that
# is not the answer, keeping the samples it was given beside itself.
ANSWER = """
import json, sys
open(sys.argv[0] + ".args", "w").write(sys.argv[1])
print("a warning the release prints first")
print(json.dumps(ANSWER))
"""


# ---- what is probed and how a release's record is made -------------------------------------

def test_candidates_are_the_tables_releases_in_the_measured_range_oldest_first():
  listed = ["0.4.25", "0.10.0", "0.4.26", "0.9.2", "0.12.0.1", "0.12.1"]
  doc = {"releases": dict.fromkeys(listed, {})}
  assert tm.candidate_releases(doc) == ["0.4.26", "0.9.2", "0.10.0", "0.12.0.1"]
  assert tm.candidate_releases({}) == []


def test_a_releases_day_is_the_tables_or_the_one_given_for_a_new_release():
  doc = {"releases": {"0.4.37": {"date": "2024-12-10"}}}
  assert tm.release_day(doc, "0.4.37", None) == "2024-12-10"
  assert tm.release_day(doc, "0.4.37", "2024-12-10") == "2024-12-10"
  assert tm.release_day(doc, "0.13.0", "2026-12-01") == "2026-12-01"
  with pytest.raises(SystemExit, match="jax 0.4.37: the table dates it 2024-12-10, not 2024-12-11"):
    tm.release_day(doc, "0.4.37", "2024-12-11")
  with pytest.raises(SystemExit, match="jax 0.13.0 is not in the table yet: .* --date YYYY-MM-DD"):
    tm.release_day(doc, "0.13.0", None)
  with pytest.raises(SystemExit, match="--date '2026/12/01' is not a day: give it as YYYY-MM-DD"):
    tm.release_day(doc, "0.13.0", "2026/12/01")


def test_the_probed_targets_are_every_known_cpu_target_then_the_made_up_one():
  doc = {"releases": {"0.4.37": {"stable_targets": {"cpu": ["lapack_newer_ffi"],
                                                    "cuda": ["cusolver_newer_ffi"]}},
                      "0.4.20": {"installable": False}}}
  got = tm.probed_targets(doc)
  assert got[-1] == UNKNOWN and UNKNOWN not in got[:-1]
  assert got[:-1] == sorted(set(got[:-1]))
  assert _registry.stable_targets("cpu") <= set(got)
  assert "lapack_newer_ffi" in got and "cusolver_newer_ffi" not in got
  rule = upgrade_table.rules()[0]
  letter = rule.letters[0]
  assert {rule.legacy_target(letter), rule.successor_target(letter)} <= set(got)


def test_a_flat_stable_table_is_split_by_the_platform_table_then_by_name():
  split = tm._platform_split(["lapack_spotrf_ffi", "cusolver_getrf_ffi", "hipsolver_getrf_ffi",
                              "Eigh", "Sharding", "lapack_not_yet_known_ffi"])
  assert set(split) == {"cpu", "cuda", "rocm", "tpu"}
  assert split["cpu"] == ["Sharding", "lapack_not_yet_known_ffi", "lapack_spotrf_ffi"]
  assert split["cuda"] == ["Sharding", "cusolver_getrf_ffi"]
  assert split["rocm"] == ["Sharding", "hipsolver_getrf_ffi"]
  assert split["tpu"] == ["Eigh", "Sharding"]          # jaxport's table places it, not its name


def test_a_releases_record_is_what_the_table_loader_reads_back():
  header = {"short-device-count": 2, "unique-tables": 3, "version-12": 12, "hlo-shardings": 3}
  statuses = {"short-device-count": "refuses_expired", "unique-tables": "reads",
              "version-12": "reads", "hlo-shardings": "refuses"}
  facts = tm.facts_from(measured("0.4.37", statuses), "2026-12-07", header)
  assert facts["serialization_versions_read"] == [3, 12]
  assert facts["expiry_days"] == BACKWARD_WINDOW_DAYS
  assert facts["cpu_target_errors"] == {"Sharding": "aborted", "lapack_spotrf": "not registered"}
  doc = {"format_version": _table.FORMAT_VERSION,
         "releases": {"0.4.37": {**facts, "date": "2024-12-10"}}}
  f = _table.parse(doc, "the new table").get("0.4.37")
  assert f.measured and f.installable and f.measured_on == datetime.date(2026, 12, 7)
  assert f.cpu_targets == {"lapack_spotrf_ffi"} and f.cpu_xla_builtin_targets == {"Sharding"}
  assert f.cpu_target_operands == {"lapack_spotrf_ffi": 1}
  assert f.envelope_layouts["short-device-count"] == "refuses_expired"
  assert f.stable_targets["cuda"] == {"cusolver_getrf_ffi", "Sharding"}
  assert f.reads_newer_stablehlo is False and f.reads_sdy_dialect is True
  assert f.refuses_calling_convention_above_max is True and f.reads_32_bit_device_count
  no_expiry = tm._layout_facts(measured("0.4.37", {"unique-tables": "reads"}), header)
  assert no_expiry["expiry_days"] is None and no_expiry["serialization_versions_read"] == [3]


@pytest.mark.parametrize("unknown", [{"registered": True, "error": None}, None],
                         ids=["compiled", "not-probed"])
def test_a_release_whose_made_up_target_is_not_refused_is_not_measured(unknown):
  got = measured("0.4.37", {"unique-tables": "reads"})
  if unknown is None:
    del got["probes"][UNKNOWN]
  else:
    got["probes"][UNKNOWN] = unknown
  with pytest.raises(RuntimeError, match=f"jax 0.4.37: the made-up target {UNKNOWN} compiled"):
    tm.facts_from(got, "2026-12-07", {"unique-tables": 3})


# ---- running a release's scripts --------------------------------------------------------------

def test_a_probe_aborted_by_a_target_goes_on_with_the_next_in_a_new_process(tmp_path, monkeypatch):
  probe = script(tmp_path / "probe.py", PROBE, ABORTS=["Sharding"],
                 REGISTERED=["lapack_spotrf_ffi"])
  monkeypatch.setattr(tm, "PROBE_TARGETS", probe)
  targets = ["lapack_spotrf_ffi", "Sharding", "lapack_spotrf", UNKNOWN]
  found = tm.probe_targets(Path(sys.executable), targets)
  runs = [json.loads(line) for line in (tmp_path / "probe.py.calls").read_text().splitlines()]
  assert runs == [targets, ["lapack_spotrf", UNKNOWN]]
  assert found["lapack_spotrf_ffi"] == {"registered": True, "error": None, "operands": 2}
  assert found["Sharding"]["xla_builtin"] is True and found["Sharding"]["registered"] is False
  assert found["Sharding"]["error"] == ("the compile aborted the process: F0000 probe.cc:1] "
                                        "Check failed: operands.size() == 1 (0 vs. 1)")
  assert found[UNKNOWN]["registered"] is False and set(found) == set(targets)


def test_a_probe_that_fails_before_any_target_is_an_error(tmp_path, monkeypatch):
  monkeypatch.setattr(tm, "PROBE_TARGETS",
                      script(tmp_path / "p.py", "raise SystemExit('no jaxlib')\n"))
  with pytest.raises(RuntimeError, match=r"the probe failed \(exit 1\):\nno jaxlib"):
    tm.probe_targets(Path(sys.executable), ["lapack_spotrf_ffi"])


def test_measuring_a_release_probes_its_platform_targets_and_the_made_up_one(tmp_path, monkeypatch):
  answer = measured("0.4.37", {"unique-tables": "reads"})
  del answer["probes"]
  answer["stable_table"] = ["lapack_sgetrf_ffi", "cusolver_getrf_ffi", "Sharding"]
  measure = script(tmp_path / "measure.py", ANSWER, ANSWER=answer)
  probe = script(tmp_path / "probe.py", PROBE, ABORTS=[], REGISTERED=["lapack_spotrf_ffi"])
  monkeypatch.setattr(tm, "MEASURE_RELEASE", measure)
  monkeypatch.setattr(tm, "PROBE_TARGETS", probe)
  inputs = {"blobs": {"unique-tables": "x.bin"}}
  targets = ["lapack_spotrf_ffi", "shape_assertion", UNKNOWN]   # shape_assertion: no platform
  got = tm.measure_one(Path(sys.executable), targets, inputs)
  assert json.loads((tmp_path / "measure.py.args").read_text()) == inputs
  probed = ["cusolver_getrf_ffi", UNKNOWN, "lapack_sgetrf_ffi", "lapack_spotrf_ffi"]
  assert json.loads((tmp_path / "probe.py.calls").read_text()) == sorted(probed)
  assert set(got["probes"]) == set(probed) and got["stablehlo"] == answer["stablehlo"]
  monkeypatch.setattr(tm, "MEASURE_RELEASE",
                      script(tmp_path / "m.py", "raise SystemExit('old numpy')\n"))
  with pytest.raises(RuntimeError, match=r"failed \(exit 1\):\nold numpy"):
    tm.measure_reader(Path(sys.executable), inputs)


# ---- building a release's venv ------------------------------------------------------------

PIP_UNSERVED = ("installing jax 0.4.37 failed (exit 1): pip install ...\n"
                "ERROR: Could not find a version that satisfies the requirement jaxlib==0.4.37\n"
                "ERROR: No matching distribution found for jaxlib==0.4.37\n"
                "The installer's last words above name what did not resolve: ...")
UV_UNSERVED = ("installing jax 0.4.37 failed (exit 1): uv pip install ...\n"
               "  x No solution found when resolving dependencies:\n"
               "  +-> Because there is no version of jaxlib==0.4.37 and you require "
               "jaxlib==0.4.37, we can conclude that your requirements are unsatisfiable.\n"
               "The installer's last words above name what did not resolve: ...")


@pytest.fixture
def pythons(tmp_path, monkeypatch):
  """A pyenv with three 3.11s (3.11.10 the newest, though not last as text), a 3.12 and only a
  free-threaded 3.13t; ensure_venv leaving a half-built venv and failing with ``error`` unless it
  is None; jax[cpu]'s venv is ``extra_python``."""
  root = tmp_path / "pyenv"
  for v in ("3.11.4", "3.11.9", "3.11.10", "3.12.1", "3.13t"):
    (root / "versions" / v / "bin").mkdir(parents=True)
    (root / "versions" / v / "bin" / "python3").touch()
  monkeypatch.setattr(_envs, "pyenv_root", lambda: root)
  builds = types.SimpleNamespace(error=None, bases=[], extra=[], extra_python=Path("/extra/python"))

  def ensure_venv(version, scratch, base=None):
    builds.bases.append(base)
    _envs.venv_dir(version, scratch).mkdir(parents=True, exist_ok=True)
    if builds.error is not None:
      raise _envs.VenvError(builds.error)
    return _envs.venv_python(version, scratch)
  monkeypatch.setattr(_envs, "ensure_venv", ensure_venv)
  monkeypatch.setattr(tm, "_build_with_own_extra",
                      lambda version, scratch: builds.extra.append(version) or builds.extra_python)
  return builds


def test_the_base_pythons_are_the_usual_one_then_the_newest_of_each_pyenv_minor(pythons, tmp_path,
                                                                                 monkeypatch):
  root = tmp_path / "pyenv" / "versions"
  assert tm._pythons_for("0.4.37") == [None, str(root / "3.11.10/bin/python3"),
                                       str(root / "3.12.1/bin/python3")]
  monkeypatch.setattr(_envs, "pyenv_root", lambda: None)
  assert tm._pythons_for("0.4.37") == [None]


def test_a_release_is_built_with_the_first_python_that_installs_it(pythons, tmp_path):
  built = tm.build_venv("0.4.36", tmp_path / "s")
  assert built == (_envs.venv_python("0.4.36", tmp_path / "s"), None)
  assert pythons.bases == [None] and pythons.extra == []


@pytest.mark.parametrize("error", [PIP_UNSERVED, UV_UNSERVED], ids=["pip", "uv"])
def test_a_release_without_its_own_jaxlib_is_built_with_its_cpu_extras(pythons, tmp_path, error):
  pythons.error = error
  assert tm.build_venv("0.4.37", tmp_path / "s") == (Path("/extra/python"), None)
  assert len(pythons.bases) == 3 and pythons.extra == ["0.4.37"]
  assert not _envs.venv_dir("0.4.37", tmp_path / "s").exists()   # no half-built venv is left


def test_a_release_no_python_installs_is_listed_with_each_pythons_reason(pythons, tmp_path):
  pythons.error, pythons.extra_python = PIP_UNSERVED, None      # jax[cpu] fails too
  python, reason = tm.build_venv("0.4.37", tmp_path / "s")
  assert python is None and pythons.extra == ["0.4.37"]
  assert reason.startswith("pip: no matching distribution on Python 3.11 to 3.13 (default Python: "
                           "ERROR: Could not find a version that satisfies the requirement "
                           "jaxlib==0.4.37; ")
  assert reason.count("jaxlib==0.4.37") == 3 and "3.12.1/bin/python3: ERROR" in reason
  pythons.error = "creating the environment failed\nno space left on device"
  python, reason = tm.build_venv("0.4.37", tmp_path / "s")
  assert python is None and pythons.extra == ["0.4.37"]          # not tried again
  assert "default Python: no space left on device" in reason


def test_the_cpu_extra_venv_pins_all_but_jax_and_jaxlib(tmp_path, monkeypatch):
  ran = []

  def run(cmd, **kwargs):
    ran.append(cmd)
    if cmd[1:3] == ["-m", "venv"]:
      (Path(cmd[3]) / "bin").mkdir(parents=True)
    elif fail:
      raise subprocess.CalledProcessError(1, cmd, stderr="ERROR: no jax[cpu]==0.4.37")
  monkeypatch.setattr(_envs, "find_python", lambda version: "/base/python3.11")
  monkeypatch.setattr(tm.subprocess, "run", run)
  fail = False
  d = _envs.venv_dir("0.4.37", tmp_path)
  assert tm._build_with_own_extra("0.4.37", tmp_path) == d / "bin" / "python"
  assert ran[0] == ["/base/python3.11", "-m", "venv", str(d)]
  assert ran[1][:5] == [str(d / "bin" / "python"), "-m", "pip", "install", "--quiet"]
  assert ran[1][5] == "jax[cpu]==0.4.37"
  assert set(ran[1][6:]) == {r for r in _envs.requirements("0.4.37") if not r.startswith("jax")}
  fail = True
  assert tm._build_with_own_extra("0.4.37", tmp_path) is None and not d.exists()

  def no_python(version):
    raise _envs.VenvError("no Python 3.11")
  monkeypatch.setattr(_envs, "find_python", no_python)
  assert tm._build_with_own_extra("0.4.37", tmp_path) is None and not d.exists()


def test_a_release_venv_in_the_cache_is_used_as_it_is(tmp_path, monkeypatch):
  monkeypatch.setenv("JAXPORT_RELEASE_ENVS", str(tmp_path / "envs"))
  ready = _envs.venv_dir("0.4.36")
  (ready / "bin").mkdir(parents=True)
  (ready / "bin" / "python").touch()
  (ready / ".jaxport-release-ready").touch()
  monkeypatch.setattr(tm, "build_venv", lambda version, scratch: (None, f"pip: no {version}"))
  assert tm._python_for("0.4.36", tmp_path / "s") == (ready / "bin" / "python", None, False)
  assert tm._python_for("0.4.37", tmp_path / "s") == (None, "pip: no 0.4.37", True)
