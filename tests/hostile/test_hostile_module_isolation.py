"""Module bytes that crash or hang jaxlib's bytecode reader: each command that reads them does so
in its module parser child, so a crash (SIGSEGV) or a hang is a named verdict of that artifact,
the other artifacts are still reported, and the next one is read by a fresh child.

Faults are planted in the child through ``JAXPORT_TEST_PARSER_FAULT`` (read by nothing but the
child); real crash-like bytes are built at test time by flipping bits of a real entry's module
with a fixed seed (kept: the candidates that crashed or hung the reader of jax 0.10.2 or
0.12.0.1; another jaxlib may refuse them instead, which is accepted too)."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import sys
from pathlib import Path

import jax
import pytest

import jaxport
from _build import GOLDEN, REAL_ENTRIES, copy_entry, replace_files
from _sandbox import CHILD_TIME_LIMIT_S, ROOT, limited
from jaxport.cli import main
from jaxport._environment import PARSER_FAULT_ENV
from jaxport.cli import _parser
from jaxport.corpus import _jax_testdata
from jaxport.errors import (DeserializationError, ModuleCrashError, ModuleMemoryError,
                            ModuleParserError, ModuleTimeoutError)
from jaxport.golden._manifest import BLOB_FILE

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from _harness_paths import HARNESS_TESTS  # noqa: E402

pytest_plugins = ["pytester"]

JAX_DATA = Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_data"
GOOD_ENTRY, OTHER_ENTRY = REAL_ENTRIES[0], REAL_ENTRIES[1]
TODAY = "2026-12-01"  # within the window of the entries copied
STARTED = re.compile(r"started (?:the|a fresh) module parser process (\d+)")
RESTARTED = re.compile(r"started a fresh module parser process (\d+)")

# The real entry whose module is mutated, the seed, and the candidates kept: 73 and 137
# crashed jaxlib 0.10.2 and 0.12.0.1 with SIGSEGV, 299 crashed 0.10.2, 217 made both loop.
MUTATED_ENTRY = "cpu/lapack_potrf/cholesky_f32/2026-11-29_jax-0.10.2"
SEED = 0
KEPT = (73, 137, 217, 299)
# Seconds a mutant's module may take to read: the looping mutant is given up after it, while
# a real module reads in milliseconds, well within it on a loaded machine.
MUTANT_PARSE_TIMEOUT_S = 1


def run(capsys, *argv):
  rc = main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return rc, out, err


def module_of(blob: bytes) -> bytes:
  return bytes(jaxport.deserialize(bytearray(blob)).mlir_module_serialized)


def plant(monkeypatch, *faults: tuple[str, bytes]) -> None:
  """Plants a fault in the module parser child for each (kind, module or blob bytes)."""
  monkeypatch.setenv(PARSER_FAULT_ENV, ",".join(
      f"{kind}:{hashlib.sha256(data).hexdigest()}" for kind, data in faults))


def blob_of(entry_id: str) -> bytes:
  return (GOLDEN / entry_id / BLOB_FILE).read_bytes()


def assert_clean(err: str) -> None:
  assert "Traceback" not in err and "Fatal Python error" not in err, err


# --- planted faults, through each command ---------------------------------------------------

def test_inspect_names_the_crash_signal_and_the_artifact(tmp_path, monkeypatch, capsys):
  blob = tmp_path / "model.bin"
  blob.write_bytes(blob_of(GOOD_ENTRY))
  plant(monkeypatch, ("crash", module_of(blob.read_bytes())))
  rc, out, err = run(capsys, "inspect", blob)
  assert rc == 2 and out == ""
  assert err.startswith(f"jaxport inspect: error: {blob}: reading its StableHLO module"), err
  assert "crashed the module parser process: it was killed by SIGSEGV (signal 11)" in err, err
  assert_clean(err)


def test_inspect_of_a_hanging_module_names_the_time_limit(tmp_path, monkeypatch, capsys):
  entry = copy_entry(tmp_path / "store", GOOD_ENTRY)
  plant(monkeypatch, ("hang", module_of(entry.blob())))
  rc, out, err = run(capsys, "inspect", entry.path, "--parse-timeout", "1.5", "--json")
  assert rc == 2 and out == ""
  assert "did not finish within the time limit --parse-timeout=1.5 s (without the option " \
         "jaxport._limits.MODULE_PARSE_TIMEOUT_S = 60.0)" in err, err
  assert_clean(err)


def test_audit_of_a_folder_reports_the_crash_and_the_good_blob_after_it(tmp_path, monkeypatch,
                                                                       capsys):
  folder = tmp_path / "bundle"
  folder.mkdir()
  bad, good = folder / "a_crashes.bin", folder / "b_good.bin"
  bad.write_bytes(blob_of(GOOD_ENTRY))
  good.write_bytes(blob_of(OTHER_ENTRY))
  plant(monkeypatch, ("crash", module_of(bad.read_bytes())))
  rc, out, err = run(capsys, "audit", folder, "--json")
  assert rc == 1
  records = {Path(r["path"]).name: r for r in json.loads(out)["artifacts"]}
  crashed = records["a_crashes.bin"]
  assert not crashed["ok"] and crashed["parser_failure"]["kind"] == "crash"
  assert crashed["parser_failure"]["error"] == "ModuleCrashError"
  assert "killed by SIGSEGV (signal 11)" in crashed["problems"][0]
  assert str(bad) in crashed["problems"][0]
  assert records["b_good.bin"]["ok"] and "parser_failure" not in records["b_good.bin"]
  # The good blob was read by a second child: the first one died.
  assert len(RESTARTED.findall(err)) == 1, err
  assert_clean(err)


def test_audit_of_a_store_reports_a_hanging_entry_and_audits_the_others(tmp_path, monkeypatch,
                                                                        capsys):
  hanging = copy_entry(tmp_path, GOOD_ENTRY)
  other = copy_entry(tmp_path, OTHER_ENTRY)
  plant(monkeypatch, ("hang", module_of(hanging.blob())))
  rc, out, err = run(capsys, "audit", tmp_path, "--json", "--today", TODAY, "--no-drift",
                     "--parse-timeout", "1.5")
  assert rc == 1
  records = {r["artifact"]: r for r in json.loads(out)["artifacts"]}
  stuck = records[str(hanging.entry_id)]
  assert stuck["parser_failure"]["kind"] == "timeout"
  assert "--parse-timeout=1.5 s" in stuck["problems"][0]
  assert records[str(other.entry_id)]["ok"], records[str(other.entry_id)]["problems"]
  assert_clean(err)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(),
                    reason="resident memory is read from /proc, which only Linux has")
def test_audit_names_the_memory_limit_of_a_module_that_grows_the_parser(tmp_path, monkeypatch,
                                                                        capsys):
  blob = tmp_path / "grows.bin"
  blob.write_bytes(blob_of(GOOD_ENTRY))
  plant(monkeypatch, ("grow", module_of(blob.read_bytes())))
  rc, out, err = run(capsys, "audit", blob, "--json", "--parse-memory-mb", "1024")
  assert rc == 1
  record = json.loads(out)["artifacts"][0]
  assert record["parser_failure"]["kind"] == "memory"
  assert "past the memory limit --parse-memory-mb=1024 (1073741824 bytes; without the option " \
         "jaxport._limits.MAX_PARSER_RSS_BYTES" in record["problems"][0]
  assert_clean(err)


def test_upgrade_of_a_crashing_blob_names_it_and_writes_nothing(tmp_path, monkeypatch, capsys):
  source, output = tmp_path / "old.bin", tmp_path / "new.bin"
  source.write_bytes(blob_of(GOOD_ENTRY))
  plant(monkeypatch, ("crash", source.read_bytes()))
  rc, out, err = run(capsys, "upgrade", source, "-o", output)
  assert rc == 2 and out == "" and not output.exists()
  assert err.startswith(f"jaxport upgrade: error: {source}: reading the module in its blob"), err
  assert "killed by SIGSEGV (signal 11)" in err
  assert_clean(err)


def test_upgrade_of_a_hanging_blob_names_the_time_limit(tmp_path, monkeypatch, capsys):
  source, output = tmp_path / "old.bin", tmp_path / "new.bin"
  source.write_bytes(blob_of(GOOD_ENTRY))
  plant(monkeypatch, ("hang", module_of(source.read_bytes())))
  rc, out, err = run(capsys, "upgrade", source, "-o", output, "--parse-timeout", "1.5")
  assert rc == 2 and not output.exists()
  assert "did not finish within the time limit --parse-timeout=1.5 s" in err, err
  assert_clean(err)


def test_import_fails_the_crashing_dataset_and_imports_the_next_one(tmp_path, monkeypatch,
                                                                    capsys):
  src = tmp_path / "src"
  src.mkdir()
  crashing, good = src / "a_crashes.py", src / "b_good.py"
  shutil.copy(JAX_DATA / "cuda_threefry2x32.py", crashing)
  shutil.copy(JAX_DATA / "cuda_lu_pivots_to_permutation.py", good)
  datasets, _ = _jax_testdata.read_file(crashing)
  plant(monkeypatch, *(("crash", bytes(d.fields["mlir_module_serialized"])) for d in datasets))
  rc, out, err = run(capsys, "import-jax-testdata", src, "--out", tmp_path / "store", "--json")
  assert rc == 1
  result = json.loads(out)
  assert len(result["failed"]) == 1 and "a_crashes.py" in result["failed"][0]
  assert "ModuleCrashError" in result["failed"][0]
  assert "killed by SIGSEGV (signal 11)" in result["failed"][0]
  assert len(result["imported"]) == 1 and "b_good.py" in result["imported"][0]
  assert_clean(err)


def test_a_command_that_reads_no_module_starts_no_parser(tmp_path, capsys):
  (tmp_path / "cpu" / "stray").mkdir(parents=True)
  (tmp_path / "cpu" / "stray" / "notes.txt").write_text("not an entry")
  rc, out, err = run(capsys, "audit", tmp_path, "-v")
  assert rc == 1 and "PROBLEM" in out
  assert not STARTED.search(err), err
  rc, out, err = run(capsys, "inspect", tmp_path / "missing.bin", "-v")
  assert rc == 2 and not STARTED.search(err), err


@pytest.mark.parametrize("option, value", [("--parse-timeout", "0"), ("--parse-timeout", "nan"),
                                           ("--parse-timeout", "-1"), ("--parse-memory-mb", "8"),
                                           ("--parse-memory-mb", "1.5"), ("--parse-memory-mb", "x")])
def test_a_parser_limit_out_of_range_is_a_usage_error(tmp_path, capsys, option, value):
  with pytest.raises(SystemExit) as stop:
    main(["audit", str(tmp_path), f"{option}={value}"])
  assert stop.value.code == 2
  assert option in capsys.readouterr().err


# --- the child itself -----------------------------------------------------------------------

def test_one_child_serves_every_artifact_and_a_fresh_one_follows_a_crash(monkeypatch):
  good, bad = module_of(blob_of(GOOD_ENTRY)), module_of(blob_of(OTHER_ENTRY))
  plant(monkeypatch, ("crash", bad))
  with _parser.ModuleParser() as parser:
    first = parser.signatures(good, "first")
    pid = parser.pid
    for i in range(5):
      assert parser.signatures(good, f"again {i}") == first
    donated = parser.donations(good, "donations")
    assert donated == _parser.InProcess().donations(good, "donations") and len(donated) >= 1
    assert parser.pid == pid and parser.starts == 1
    with pytest.raises(ModuleCrashError, match=r"^crashing: reading its StableHLO module"):
      parser.signatures(bad, "crashing")
    assert parser.signatures(good, "after") == first
    assert parser.starts == 2 and parser.pid != pid
  assert [s.target for s in first] == ["lapack_spotrf_ffi"]


def test_the_child_answers_a_corrupt_module_with_the_in_process_refusal():
  with _parser.ModuleParser() as parser:
    with pytest.raises(DeserializationError, match="cannot be parsed") as isolated:
      parser.signatures(b"ML\xefR" + bytes(64), "corrupt")
  with pytest.raises(DeserializationError) as here:
    _parser.InProcess().signatures(b"ML\xefR" + bytes(64), "corrupt")
  assert str(isolated.value) == str(here.value)


def test_the_limits_are_errors_of_one_family():
  for cls in (ModuleCrashError, ModuleTimeoutError, ModuleMemoryError):
    assert issubclass(cls, ModuleParserError) and issubclass(cls, jaxport.JaxportError)


# --- real crash-like bytes ------------------------------------------------------------------

def mutants(module: bytes) -> dict[int, bytes]:
  """The kept candidates of the seeded loop: one bit flipped past the magic per candidate."""
  rng = random.Random(SEED)
  kept = {}
  for i in range(max(KEPT) + 1):
    m = bytearray(module)
    m[rng.randrange(8, len(m))] ^= 1 << rng.randrange(8)
    if i in KEPT:
      kept[i] = bytes(m)
  return kept


def mutant_blobs() -> dict[int, bytes]:
  """Blobs of the real entry whose module is replaced by each kept mutant (same length)."""
  blob = blob_of(MUTATED_ENTRY)
  module = module_of(blob)
  at = blob.index(module)
  return {i: blob[:at] + m + blob[at + len(m):] for i, m in mutants(module).items()}


def test_the_mutants_are_refused_or_are_named_crashes_and_time_outs():
  module = module_of(blob_of(MUTATED_ENTRY))
  seen = []
  with _parser.ModuleParser(timeout_s=MUTANT_PARSE_TIMEOUT_S) as parser:
    for i, m in mutants(module).items():
      assert m != module and len(m) == len(module)
      try:
        parser.signatures(m, f"mutant {i}")
        parser.module_text(m, None, f"mutant {i}")
        seen.append("read")
      except (ModuleCrashError, ModuleTimeoutError, DeserializationError) as e:
        assert f"mutant {i}" in str(e) or isinstance(e, DeserializationError), e
        seen.append(type(e).__name__)
    # Whatever happened to the mutants, the parser still reads the real module.
    assert [s.target for s in parser.signatures(module, "real")] == ["lapack_spotrf_ffi"]
  assert len(seen) == len(KEPT)


def test_audit_of_real_crash_like_blobs_gives_each_a_verdict_and_reports_the_good_one(tmp_path):
  folder = tmp_path / "bundle"
  folder.mkdir()
  for i, blob in mutant_blobs().items():
    (folder / f"mutant_{i:03d}.bin").write_bytes(blob)
  (folder / "zz_good.bin").write_bytes(blob_of(OTHER_ENTRY))
  # A child process runs the commands: were the isolation broken, a crash would end it, not
  # the test. Audit reads each module's custom calls; inspect --mlir prints it too.
  child = limited(f"""
      import json, sys
      from pathlib import Path
      from jaxport.cli import main
      timeout = ["--parse-timeout", "{MUTANT_PARSE_TIMEOUT_S}"]
      audited = main(["audit", {str(folder)!r}, "--json", *timeout])
      sys.stdout.write("\\n=====\\n")
      sys.stdout.flush()
      inspected = [main(["inspect", str(p), "--mlir", *timeout, "-q"])
                   for p in sorted(Path({str(folder)!r}).glob("mutant_*"))]
      sys.stdout.write("\\n=====\\n" + json.dumps([audited, inspected]) + "\\n")
      """)
  assert child.returncode == 0, child.stderr[-3000:]
  assert_clean(child.stderr)
  audit_out, _, statuses = child.stdout.split("\n=====\n")
  audited, inspected = json.loads(statuses)
  records = {Path(r["path"]).name: r for r in json.loads(audit_out)["artifacts"]}
  assert audited == (0 if all(r["ok"] for r in records.values()) else 1)
  assert records["zz_good.bin"]["ok"], records["zz_good.bin"]
  named = ("ModuleCrashError", "ModuleTimeoutError", "DeserializationError")
  for i in KEPT:
    record = records[f"mutant_{i:03d}.bin"]
    assert record["ok"] or any(n in p for p in record["problems"] for n in named), record
  # inspect says what went wrong as an error (status 2), or describes the module (status 0).
  assert len(inspected) == len(KEPT) and set(inspected) <= {0, 2}, inspected
  errors = [line for line in child.stderr.splitlines() if line.startswith("jaxport inspect: error:")]
  assert len(errors) == inspected.count(2), child.stderr[-3000:]
  for line in errors:
    assert any(k in line for k in ("crashed the module parser process", "did not finish within",
                                   "cannot be parsed")), line


def test_the_harness_fails_a_crash_like_entry_by_name_and_replays_the_others(tmp_path,
                                                                              pytester):
  crashing = copy_entry(tmp_path / "golden", MUTATED_ENTRY)
  replace_files(crashing, {BLOB_FILE: mutant_blobs()[73]})
  other = copy_entry(tmp_path / "golden", OTHER_ENTRY)
  result = pytester.runpytest(
      str(HARNESS_TESTS), f"--compat-store={tmp_path / 'golden'}", "-p", "no:cacheprovider",
      "-p", "no:randomly", "-W", "ignore::DeprecationWarning", f"--compat-today={TODAY}",
      f"--compat-report={tmp_path / 'report.json'}", f"--compat-worker-timeout={CHILD_TIME_LIMIT_S}",
      "-k", "cholesky_f32 or kwargs_pytree")
  report = json.loads((tmp_path / "report.json").read_text())
  by_id = {e["entry_id"]: e for e in report["entries"]}
  assert by_id[str(other.entry_id)]["status"] == "pass", by_id[str(other.entry_id)]
  failed = by_id[str(crashing.entry_id)]
  assert failed["status"] == "fail" and failed["messages"], failed
  # A crash names its signal; a jaxlib that refuses the bytes says they cannot be parsed.
  assert any("killed by SIGSEGV (signal 11)" in m or "cannot be parsed" in m
             for m in failed["messages"]), failed["messages"]
  text = result.stdout.str()
  assert "INTERNALERROR" not in text, text
