"""The ``tf`` reader's pieces that run without TensorFlow: the table of measured TensorFlow
releases, the judge's named refusals (from the table, and from TensorFlow's own error texts as
measured), the envelope read without jax, the environment's contents, and the command line's
usage errors."""

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from jaxport._vocabulary import Status
from jaxport.cli import main
from jaxport.golden import EntryId
from jaxport.harness._judge._tf_runs import TfRefusal, judge_tf_row, precheck, refusal_of
from jaxport.harness._protocol._tf_rows import TfAbout, TfRow, TfRowError, read_tf_row
from jaxport.releases._tf_table import TfReleaseError, read_tf_table, tf_release, tf_releases

REPOSITORY = Path(__file__).resolve().parents[2]
STORE = REPOSITORY / "compat_data"
TF_221 = tf_release("2.21.0")
TF_219 = tf_release("2.19.1")
_WHERE = ("{{function_node __wrapped__XlaCallModule_Tin_1_Tout_1_device_/job:localhost/replica:0/"
          "task:0/device:CPU:0}} ")


def _row(error=None, **more):
  fields = dict(entry_id=EntryId.parse("cpu/f/c/2026-01-01_jax-0.10.2"), stage="call", error=error,
                calling_convention=10, stablehlo="1.15.0", platforms=("cpu",))
  return TfRow(**{**fields, **more})


# The table.

def test_the_table_holds_each_measured_release_and_a_minor_picks_its_newest():
  versions = [r.version for r in tf_releases()]
  assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
  assert tf_release("2.21") == TF_221 and tf_release("2.19") == TF_219
  assert TF_221.calling_convention[0] <= 9 < 10 <= TF_221.calling_convention[1]
  assert not TF_219.takes(10)


def test_a_release_the_table_does_not_hold_is_refused_naming_the_served_ones():
  with pytest.raises(TfReleaseError) as e:
    tf_release("2.17")
  assert all(r.version in str(e.value) for r in tf_releases())


def test_a_malformed_table_fails_naming_the_field(tmp_path):
  good = json.loads((REPOSITORY / "jaxport" / "releases" / "tf_releases.json").read_text())
  good["releases"][0]["calling_convention"] = [10, 4]
  path = tmp_path / "t.json"
  path.write_text(json.dumps(good))
  with pytest.raises(TfReleaseError, match=r"releases\[0\]\.calling_convention"):
    read_tf_table(path)
  del good["releases"][0]["stablehlo"]
  path.write_text(json.dumps(good))
  with pytest.raises(TfReleaseError, match="missing stablehlo"):
    read_tf_table(path)


# Refusals from the table, before TensorFlow is asked.

@pytest.mark.parametrize("cc, side", [(3, "below its lowest"), (11, "above its highest")])
def test_a_calling_convention_outside_the_range_is_refused_at_either_bound(cc, side):
  refusal = precheck(cc, ("cpu",), TF_221)
  assert refusal.reason is TfRefusal.CALLING_CONVENTION
  assert side in refusal.message and str(cc) in refusal.message


def test_an_artifact_without_the_cpu_is_refused_for_its_platform():
  refusal = precheck(10, ("cuda", "rocm"), TF_221)
  assert refusal.reason is TfRefusal.PLATFORM and "cuda, rocm" in refusal.message
  assert precheck(10, ("cuda", "cpu"), TF_221) is None


# Refusals read from TensorFlow's own words.

def test_tensorflows_calling_convention_refusal_is_named_with_its_bound():
  high = refusal_of(_row(_WHERE + "XlaCallModuleOp with version 10 is not supported by this "
                         "build. Must be <= 9"), TF_219)
  low = refusal_of(_row(_WHERE + "XlaCallModuleOp with version 3 is not supported anymore. "
                        "Must be >= 4"), TF_221)
  assert high.reason is low.reason is TfRefusal.CALLING_CONVENTION
  assert "above its highest, 9" in high.message and "below its lowest, 4" in low.message


_NEWER_221 = (_WHERE + "Cannot deserialize computation: UNKNOWN: <unknown>:0: error: "
              "loc(\"shape_assertion\"): unregistered operation 'vhlo.custom_call_v2' found in "
              "dialect ('vhlo') that does not allow unknown operations\n<unknown>:0: note: "
              "loc(\"shape_assertion\"): in bytecode version 6 produced by: StableHLO_v1.18.0\n"
              "<unknown>:0: error: failed to deserialize portable artifact using "
              "StableHLO_v1.13.7")
# TensorFlow 2.18 and 2.19 raise only the first line; the reader adds what they printed.
_NEWER_219 = (_WHERE + "Cannot deserialize computation\nloc(\"sin\"): error: unregistered "
              "operation 'vhlo.sine_v2' found in dialect ('vhlo') that does not allow unknown "
              "operations\nerror: failed to deserialize portable artifact using StableHLO_v1.9.1")
_NEWER_218 = _WHERE + "Cannot deserialize computation\nloc(\"-\":0:0): error: unknown attribute code: 22"


@pytest.mark.parametrize("error, artifact, release, reads, first", [
    (_NEWER_221, "1.18.0", TF_221, "1.13.7", "vhlo.custom_call_v2"),
    (_NEWER_219, "1.10.6", TF_219, "1.9.1", "vhlo.sine_v2"),
    (_NEWER_218, "1.15.0", tf_release("2.18.1"), "1.7.3", "attribute code 22"),
])
def test_a_newer_stablehlo_is_named_with_both_versions_and_what_the_release_does_not_know(
    error, artifact, release, reads, first):
  refusal = refusal_of(_row(error, stablehlo=artifact, calling_convention=9), release)
  assert refusal.reason is TfRefusal.STABLEHLO_VERSION
  assert artifact in refusal.message and reads in refusal.message and first in refusal.message


def test_a_module_that_does_not_load_but_is_no_newer_is_no_version_refusal():
  row = _row(_WHERE + "Cannot deserialize computation", stablehlo="1.9.0")
  assert refusal_of(row, TF_221) is None
  run = judge_tf_row(row, TF_221)
  assert run.status is Status.FAIL and run.refusal is None and "Cannot deserialize" in run.detail


@pytest.mark.parametrize("error, target", [
    ("No FFI handler registered for lapack_ssyevd_ffi on a platform Host (canonical host)",
     "lapack_ssyevd_ffi"),
    ("No registered implementation for untyped custom call to lapack_zgees for Host",
     "lapack_zgees"),
    ("No registered implementation for FFI custom call to lapack_sgees_ffi for Host",
     "lapack_sgees_ffi"),  # TensorFlow 2.19's words
    ("No FFI handler registered for tinyops_scale on a platform Host", "tinyops_scale"),
])
def test_a_custom_call_without_a_handler_is_refused_naming_the_target(error, target):
  refusal = refusal_of(_row(_WHERE + error), TF_221)
  assert refusal.reason is TfRefusal.CUSTOM_CALL and repr(target) in refusal.message
  assert ("jaxlib's own CPU kernel" in refusal.message) == target.startswith("lapack_")


def test_tensorflows_platform_refusal_is_named():
  refusal = refusal_of(_row(_WHERE + "The current platform CPU is not among the platforms "
                            "required by the module: [CUDA, ROCM]"), TF_221)
  assert refusal.reason is TfRefusal.PLATFORM and "cuda, rocm" in refusal.message


# The judge's statuses.

def test_a_row_is_judged_from_what_it_says():
  assert judge_tf_row(_row(stage="compare", matched=True), TF_221).status is Status.PASS
  differs = judge_tf_row(_row(stage="compare", matched=False, problems="max abs 1.0"), TF_221)
  assert differs.status is Status.FAIL and "max abs 1.0" in differs.detail
  ran = judge_tf_row(_row(stage="compare", not_compared="its own checker"), TF_221)
  assert ran.status is Status.PASS and "its own checker" in ran.detail
  assert judge_tf_row(_row(stage="read", not_replayable="a VJP"), TF_221).status is None
  refused = judge_tf_row(_row(stage="precheck"), TF_219)
  assert refused.status is Status.FAIL and refused.refusal.reason is TfRefusal.CALLING_CONVENTION


def test_a_row_that_claims_nothing_fails_closed():
  silent = judge_tf_row(_row(stage="compare"), TF_221)  # neither matched nor why not
  assert silent.status is Status.FAIL
  unfounded = judge_tf_row(_row(stage="precheck"), TF_221)  # refused, and the table refuses nothing
  assert unfounded.status is Status.FAIL and unfounded.refusal is None
  broken = read_tf_row({"entry_id": "cpu/f/c/2026-01-01_jax-0.10.2", "stage": "call",
                            "calling_convention": "ten"})
  assert broken.stage == "harness" and "calling_convention" in broken.error
  assert judge_tf_row(broken, TF_221).status is Status.FAIL
  with pytest.raises(TfRowError, match="entry_id: expected an entry id"):
    read_tf_row({"entry_id": "x", "stage": "call"})  # no entry is known to fail
  with pytest.raises(TfRowError, match="missing max_calling_convention"):
    TfAbout.from_json({"tf": "2.21.0", "stablehlo": "1.13.7"})


# The envelope, read without jax.

@pytest.mark.parametrize("entry", [
    "cpu/feature_shape_poly/release_poly_gram_f32/2026-12-01_jax-0.12.0.1",
    "cpu/feature_multi_platform/release_multi_platform_f32/2026-11-29_jax-0.10.0",
    "cpu/lapack_syevd/eigh_f32/2026-11-29_jax-0.10.2",
])
def test_the_envelope_read_without_jax_agrees_with_jaxports_reader(entry):
  import jaxport
  from jaxport_in_release import tf_envelope
  blob = (STORE / entry / "exported.bin").read_bytes()
  env, exp = tf_envelope.read(blob), jaxport.deserialize(blob)
  assert env.module == exp.mlir_module_serialized
  assert env.calling_convention == exp.calling_convention_version
  assert env.platforms == tuple(exp.platforms)
  assert env.kept_var_idx == tuple(sorted(exp.module_kept_var_idx))
  for mine, theirs in zip((*env.in_avals, *env.out_avals), (*exp.in_avals, *exp.out_avals)):
    assert [str(d) for d in mine.shape] == [str(d) for d in theirs.shape]
    assert mine.dtype == str(theirs.dtype)
  assert env.stablehlo_version.count(".") == 2
  assert b"StableHLO_v" + env.stablehlo_version.encode() + b"\0" in exp.mlir_module_serialized[:64]


def test_a_blob_that_is_no_envelope_is_refused_by_name():
  from jaxport_in_release import tf_envelope
  with pytest.raises(tf_envelope.EnvelopeError, match="does not read as a jax.export envelope"):
    tf_envelope.read(b"\x07" * 12)


def test_the_reader_collects_what_native_code_prints_on_stderr():
  from jaxport_in_release import tf_reader
  lines = []
  with tf_reader.captured_stderr(lines):
    os.write(2, b"loc(\"-\"): error: unknown attribute code: 22\nnoise\n")
  assert lines == ["loc(\"-\"): error: unknown attribute code: 22"]


def test_a_vjp_is_called_unless_a_value_it_differentiates_is_not_inexact():
  from jaxport_in_release import tf_envelope, tf_reader
  f32, i32 = tf_envelope.Aval((2,), "float32"), tf_envelope.Aval((2,), "int32")

  def env(ins, outs, vjp=None):
    return tf_envelope.Envelope(b"", 10, ("cpu",), (), ins, outs, (0,), 1, 0, vjp)

  floats = env((f32,), (f32,), vjp=env((f32, f32), (f32,)))
  assert tf_reader.not_replayable(floats) is None
  ints = env((f32, i32), (f32,), vjp=env((f32, i32, f32), (f32,)))
  assert "float0" in tf_reader.not_replayable(ints)
  assert "8 devices" in tf_reader.not_replayable(dataclasses.replace(floats, nr_devices=8))


def test_the_precheck_leaves_a_blob_it_cannot_read_to_the_reader(tmp_path):
  from jaxport.golden import EntryId
  from jaxport.multirelease._tf_replay import prechecked
  cc9 = STORE / "cpu/feature_multi_platform/release_multi_platform_f32/2026-11-30_jax-0.4.26"
  ids = {name: EntryId.parse(f"cpu/f/{name}/2026-01-01_jax-0.4.26")
         for name in ("damaged", "cc9", "linked")}
  for entry_id in ids.values():
    (tmp_path / str(entry_id)).mkdir(parents=True)
  (tmp_path / str(ids["damaged"]) / "exported.bin").write_bytes(b"\x07" * 12)
  (tmp_path / str(ids["cc9"]) / "exported.bin").write_bytes((cc9 / "exported.bin").read_bytes())
  # never followed
  (tmp_path / str(ids["linked"]) / "exported.bin").symlink_to(cc9 / "exported.bin")
  only_10 = dataclasses.replace(TF_221, calling_convention=(10, 10))
  refused, left = prechecked(tmp_path, list(ids.values()), only_10)
  assert left == [ids["damaged"], ids["linked"]] and list(refused) == [ids["cc9"]]
  assert refused[ids["cc9"]].stage == "precheck" and refused[ids["cc9"]].calling_convention == 9
  assert prechecked(tmp_path, [ids["cc9"]], TF_221) == ({}, [ids["cc9"]])


# The environment.

def test_the_environment_holds_the_pinned_tensorflow_and_no_jax():
  from jaxport.multirelease._tf_envs import tf_requirements
  reqs = tf_requirements(TF_221)
  assert "tensorflow-cpu==2.21.0" in reqs
  assert not any(r.startswith(("jax", "jaxlib")) for r in reqs)


def test_the_environment_is_built_once_in_the_release_cache_and_reused(monkeypatch, tmp_path):
  from jaxport.multirelease import _envs, _tf_envs
  ran = []

  def run(cmd, what):
    ran.append(cmd)
    if "venv" in cmd:
      (Path(cmd[-1]) / "bin").mkdir(parents=True)
      (Path(cmd[-1]) / "bin" / "python").write_text("")

  monkeypatch.setattr(_tf_envs, "_run", run)
  monkeypatch.setattr(_envs, "installer", lambda: _envs.Installer("pip"))
  monkeypatch.setattr(_tf_envs, "find_python", lambda release: sys.executable)
  python = _tf_envs.ensure_tf_env(TF_221, tmp_path)
  assert python == tmp_path.resolve() / "tf-2.21.0" / "bin" / "python"
  assert "tensorflow-cpu==2.21.0" in ran[-1]
  assert _tf_envs.ensure_tf_env(TF_221, tmp_path) == python and len(ran) == 2


# The command line.

def test_with_tf_and_with_jax_together_is_a_usage_error(capsys):
  with pytest.raises(SystemExit) as e:
    main(["replay", "--with-tf", "2.21", "--with-jax", "0.10.2", "--project", str(REPOSITORY)])
  assert e.value.code == 2 and "two replays" in capsys.readouterr().err


def test_an_unserved_tensorflow_release_is_refused_before_anything_is_built(monkeypatch, capsys):
  from jaxport.multirelease import _tf_replay
  monkeypatch.setattr(_tf_replay, "ensure_tf_env", lambda *a: pytest.fail("built"))
  with pytest.raises(SystemExit) as e:
    main(["replay", "--with-tf", "2.12", "--project", str(REPOSITORY)])
  err = capsys.readouterr().err
  assert e.value.code == 2 and all(r.version in err for r in tf_releases())


def test_a_release_no_python_here_installs_is_refused_naming_those_served(monkeypatch, capsys):
  from jaxport.multirelease import _envs, _tf_envs, _tf_replay
  monkeypatch.setattr(_tf_replay, "ensure_tf_env", lambda *a: pytest.fail("built"))
  monkeypatch.setattr(_tf_envs, "is_ready", lambda release, root=None: False)

  def find(release):
    if release.version.startswith("2.19"):
      raise _envs.VenvError(f"No Python 3.11 found for the environment of TensorFlow "
                            f"{release.version}")
    return sys.executable
  monkeypatch.setattr(_tf_envs, "find_python", find)
  with pytest.raises(SystemExit) as e:
    main(["replay", "--with-tf", "2.19", "--project", str(REPOSITORY)])
  err = capsys.readouterr().err
  assert e.value.code == 2 and "No Python 3.11 found" in err
  others = [r.version for r in tf_releases() if not r.version.startswith("2.19")]
  assert f"can serve: {', '.join(others)}." in err


def test_only_replay_takes_with_tf(capsys):
  with pytest.raises(SystemExit) as e:
    main(["record", "--with-tf", "2.21", "--project", str(REPOSITORY)])
  assert e.value.code == 2 and "the tf reader replays" in capsys.readouterr().err


def test_the_summary_counts_statuses_and_refusal_reasons():
  from jaxport.cli._with_tf import summary
  runs = [judge_tf_row(_row(stage="compare", matched=True, calling_convention=9), TF_219),
          judge_tf_row(_row(stage="precheck",
                            entry_id=EntryId.parse("cpu/f/d/2026-01-01_jax-0.10.2")), TF_219),
          judge_tf_row(_row(stage="read", not_replayable="a VJP"), TF_219)]
  text = summary(runs, TF_219)
  assert "tf 2.19.1: fail  cpu/f/d/2026-01-01_jax-0.10.2: refused (calling_convention)" in text
  assert text.splitlines()[-1] == ("tf 2.19.1: 3 entries: 1 fail, 1 not called, 1 pass; "
                                   "refused for calling_convention 1")


# What a run keeps of each row.

def test_a_row_keeps_a_record_only_where_it_measured_the_release():
  from jaxport.multirelease._tf_measured import served_record
  day = __import__("datetime").date(2026, 12, 7)
  refused = _row("No FFI handler registered for lapack_ssyevd_ffi")
  record = served_record(refused, judge_tf_row(refused, TF_221), "2.21.0", "s", day)
  assert (record.served, record.reason) == (False, "custom_call")
  assert "lapack_ssyevd_ffi" in record.detail
  served = _row(stage="compare", matched=True)
  assert served_record(served, judge_tf_row(served, TF_221), "2.21.0", "s", day).served
  # The reader's own failure, and an entry it does not call, say nothing of the release.
  for row in (_row("checksum mismatch", stage="verify"), _row(not_replayable="8 devices")):
    run = judge_tf_row(row, TF_221)
    assert not run.measured and served_record(row, run, "2.21.0", "s", day) is None
