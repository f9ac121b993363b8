"""``jaxport replay --with-tf``: the ``tf`` reader in a TensorFlow environment, end to end, with
a stand-in for TensorFlow (``tests/data/tf_stand_in``: CI never installs TensorFlow) that
answers in TensorFlow's own words as measured. One project of real entries is built per module
and each release is read once: an entry served, one computed differently, one of each refusal
reason, one with a VJP, one the reader cannot call."""

import collections
import hashlib
import json
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxport._vocabulary import Status
from jaxport.cli import main
from jaxport.harness._judge._tf_runs import TfRefusal, judge_tf_row
from jaxport.golden import EntryId
from jaxport.multirelease._tf_replay import TfReplayError, replay_with_tf
from jaxport.releases import read_measured
from jaxport.releases._tf_table import tf_release
from jaxport_in_release import tf_envelope

REPOSITORY = Path(__file__).resolve().parents[2]
STAND_IN = REPOSITORY / "tests" / "data" / "tf_stand_in"
ENTRIES = {
    "served": "cpu/feature_shape_poly/release_poly_gram_f32/2026-12-06_jax-0.10.2",
    "differs": "cpu/feature_multi_platform/release_multi_platform_f32/2026-12-06_jax-0.10.2",
    "newer": "cpu/feature_shape_poly/release_poly_gram_f32/2026-12-01_jax-0.12.0.1",
    "lapack": "cpu/lapack_syevd/eigh_f32/2026-11-29_jax-0.10.2",
    "cuda": "cpu/lowering_cuda/cuda_eigh_f32/2026-11-30_jax-0.10.2",
    "vjp": "cpu/feature_vjp/release_vjp_tanh_f32/2026-12-06_jax-0.10.2",
    "devices": "cpu/sharding_shardy/shard_map_shardy/2026-11-29_jax-0.10.2",
}
# Entries made lowering-only here from the one named: called on zeros, nothing compared; one
# with symbolic shapes not called (no inputs would meet its constraints).
LOWERED = {"lowered": ("cpu/lowered/static/2026-12-06_jax-0.10.2", "differs"),
           "lowered_symbolic": ("cpu/lowered/symbolic/2026-12-06_jax-0.10.2", "served")}


def _modules_computing(entry: Path, where: Path) -> dict[str, str]:
  """The sha256 of each module of ``entry`` (the function's, its VJP's) -> an npz of what it
  computes, split from the entry's recorded outputs."""
  env = tf_envelope.read((entry / "exported.bin").read_bytes())
  with np.load(entry / "expected.npz") as npz:
    expected = [npz[f"arr_{i}"] for i in range(len(npz.files))]
  out, start = {}, 0
  while env is not None:
    count = len(env.out_avals)
    path = where / f"{hashlib.sha256(env.module).hexdigest()}.npz"
    np.savez(path, *expected[start:start + count])
    out[path.stem] = str(path)
    env, start = env.vjp, start + count
  return out


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
  """A project whose store holds the entries of :data:`ENTRIES`, copied from this repository's."""
  root = tmp_path_factory.mktemp("tf_project")
  (root / "pyproject.toml").write_text('[project]\nname = "downstream"\n\n'
                                       '[tool.pytest.ini_options]\njaxport_cases = ["cases"]\n'
                                       'jaxport_store = "golden"\n')
  for entry_id in ENTRIES.values():
    shutil.copytree(REPOSITORY / "compat_data" / entry_id, root / "golden" / entry_id)
  for entry_id, source in LOWERED.values():
    shutil.copytree(REPOSITORY / "compat_data" / ENTRIES[source], root / "golden" / entry_id)
    manifest = root / "golden" / entry_id / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "lowering_only": True}))
  return root


def stand_in(project: Path, version: str, **change) -> Path:
  """The python of a stand-in environment of TensorFlow ``version`` (its facts as the table
  measured them, less ``change``): an executable that runs this interpreter with the stand-in
  package first on the path."""
  release = tf_release(version)
  store = project / "golden"
  served = {}
  for key in ("served", "differs", "vjp"):
    served.update(_modules_computing(store / ENTRIES[key], project))
  differs = tf_envelope.read((store / ENTRIES["differs"] / "exported.bin").read_bytes()).module
  config = {"version": release.version, "stablehlo": release.stablehlo,
            "calling_convention": list(release.calling_convention),
            "shardy": release.shardy_argument, "outputs": served,
            "perturbed": [hashlib.sha256(differs).hexdigest()], **change}
  where = project / f"stand-in-{version}-{len(change)}"
  where.mkdir(exist_ok=True)
  (where / "config.json").write_text(json.dumps(config))
  python = where / "python"
  python.write_text(f"#!/bin/sh\nJAXPORT_TF_STAND_IN='{where / 'config.json'}' "
                    f"PYTHONPATH='{STAND_IN}' exec '{sys.executable}' \"$@\"\n")
  python.chmod(python.stat().st_mode | stat.S_IXUSR)
  return python


def _runs(project: Path, version: str, tmp: Path) -> dict:
  release = tf_release(version)
  keys = [*ENTRIES, *LOWERED]
  ids = [EntryId.parse(t) for t in [*ENTRIES.values(), *(e for e, _ in LOWERED.values())]]
  work = tmp / version
  work.mkdir()
  rows = replay_with_tf(str(stand_in(project, version)), project / "golden", ids, work, release)
  assert [r.entry_id for r in rows] == ids
  return {k: judge_tf_row(row, release) for k, row in zip(keys, rows)}


@pytest.fixture(scope="module")
def runs_221(project, tmp_path_factory):
  return _runs(project, "2.21", tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def runs_219(project, tmp_path_factory):
  return _runs(project, "2.19", tmp_path_factory.mktemp("runs"))


def test_a_served_entry_passes_and_one_computed_differently_fails(runs_221):
  assert runs_221["served"].status is Status.PASS
  assert runs_221["vjp"].status is Status.PASS  # its VJP's module called too, and compared
  assert runs_221["differs"].status is Status.FAIL and runs_221["differs"].refusal is None
  assert "outputs differ" in runs_221["differs"].detail


def test_each_refusal_is_named_with_what_tensorflow_lacks(runs_221):
  newer, lapack, cuda = runs_221["newer"], runs_221["lapack"], runs_221["cuda"]
  assert newer.refusal.reason is TfRefusal.STABLEHLO_VERSION
  assert all(s in newer.refusal.message for s in ("1.18.0", "1.13.7", "vhlo.custom_call_v2"))
  assert lapack.refusal.reason is TfRefusal.CUSTOM_CALL
  assert "'lapack_ssyevd_ffi'" in lapack.refusal.message
  assert cuda.refusal.reason is TfRefusal.PLATFORM and cuda.stage == "precheck"
  assert all(r.status is Status.FAIL for r in (newer, lapack, cuda))


def test_an_entry_the_reader_cannot_call_has_no_status(runs_221):
  assert runs_221["devices"].status is None and "8 devices" in runs_221["devices"].detail
  assert runs_221["lowered_symbolic"].status is None
  assert "symbolic shapes" in runs_221["lowered_symbolic"].detail


def test_a_lowering_only_entry_is_called_and_not_compared(runs_221):
  assert runs_221["lowered"].status is Status.PASS
  assert "nothing recorded to compare" in runs_221["lowered"].detail


def test_an_older_release_refuses_the_calling_convention_before_tensorflow_is_asked(runs_219):
  for key in ("served", "differs", "lapack"):
    run = runs_219[key]
    assert run.stage == "precheck" and run.refusal.reason is TfRefusal.CALLING_CONVENTION
    assert "above its highest, 9" in run.refusal.message


def test_an_environment_whose_tensorflow_is_not_the_tables_is_refused(project, tmp_path):
  python = stand_in(project, "2.21", stablehlo="1.12.1")
  with pytest.raises(TfReplayError, match=r"StableHLO 1\.12\.1 \(the table: 1\.13\.7\)"):
    replay_with_tf(str(python), project / "golden", [EntryId.parse(ENTRIES["served"])], tmp_path,
                   tf_release("2.21"))


def test_an_environment_where_tensorflow_does_not_import_is_refused_with_its_words(project,
                                                                                   tmp_path):
  python = tmp_path / "python"
  python.write_text("#!/bin/sh\necho 'ImportError: libtensorflow_framework.so.2' >&2\nexit 1\n")
  python.chmod(python.stat().st_mode | stat.S_IXUSR)
  with pytest.raises(TfReplayError, match="(?s)did not report its TensorFlow.*libtensorflow"):
    replay_with_tf(str(python), project / "golden", [EntryId.parse(ENTRIES["served"])], tmp_path,
                   tf_release("2.21"))


def test_an_entry_that_crashes_tensorflow_fails_alone_and_the_rest_are_called(project, tmp_path):
  store = project / "golden"
  crashing = tf_envelope.read((store / ENTRIES["differs"] / "exported.bin").read_bytes()).module
  python = stand_in(project, "2.21", crashes=[hashlib.sha256(crashing).hexdigest()])
  ids = [EntryId.parse(ENTRIES["differs"]), EntryId.parse(ENTRIES["served"])]
  rows = replay_with_tf(str(python), store, ids, tmp_path, tf_release("2.21"))
  crashed, served = (judge_tf_row(row, tf_release("2.21")) for row in rows)
  assert crashed.status is Status.FAIL and crashed.stage == "process"
  assert served.status is Status.PASS


def test_replay_with_tf_reports_each_entry_and_fails_the_run(project, monkeypatch, tmp_path,
                                                              capsys):
  from jaxport.multirelease import _tf_replay
  python = stand_in(project, "2.21")
  monkeypatch.setattr(_tf_replay, "ensure_tf_env", lambda release: python)
  report = tmp_path / "tf.json"
  assert main(["replay", "--with-tf", "2.21", "--project", str(project),
               "--compat-report", str(report)]) == 1
  out = capsys.readouterr().out
  assert f"tf 2.21.0: pass  {ENTRIES['served']}\n" in out
  assert out.splitlines()[-1] == ("tf 2.21.0: 9 entries: 4 fail, 2 not called, 3 pass; refused "
                                  "for custom_call 1, platform 1, stablehlo_version 1")
  kept = {e["entry_id"]: e for e in json.loads(report.read_text())["entries"]}
  assert kept[ENTRIES["lapack"]]["reason"] == "custom_call"
  assert kept[ENTRIES["served"]]["status"] == "pass"
  # Each entry's measurement is kept in the project, keyed by its blob; one not called is not.
  measured = read_measured(project)
  def served(key):
    entry = project / "golden" / ENTRIES[key]
    sha = hashlib.sha256((entry / "exported.bin").read_bytes()).hexdigest()
    return {r.release: r for r in measured.served_by(EntryId.parse(ENTRIES[key]), sha)}
  assert served("served")["2.21.0"].served and served("served")["2.21.0"].reason is None
  lapack = served("lapack")["2.21.0"]
  assert (lapack.served, lapack.reason) == (False, "custom_call")
  assert "lapack_ssyevd_ffi" in lapack.detail
  assert served("cuda")["2.21.0"].reason == "platform"
  assert served("differs")["2.21.0"].reason is None and not served("differs")["2.21.0"].served
  assert served("devices") == {}


def test_matrix_takes_a_tensorflow_release_as_a_consumer_judged_by_the_tf_judge(
    project, monkeypatch, tmp_path, capsys):
  from jaxport.multirelease import _tf_replay
  python = stand_in(project, "2.21")
  monkeypatch.setattr(_tf_replay, "ensure_tf_env", lambda release: python)
  out = tmp_path / "reports"
  # No cell jax's window covers: TensorFlow's failures warn, the matrix does not fail.
  assert main(["matrix", "--producers", "--tf-releases", "2.21", "--project", str(project),
               "--out", str(out)]) == 0
  matrix = json.loads((out / "matrix.json").read_text())
  assert matrix["consumers"] == ["tf-2.21.0"]
  cells = [matrix["cells"][p]["tf-2.21.0"] for p in matrix["producers"]]
  assert [sum(c[k] for c in cells) for k in ("pass", "fail", "not_replayed", "total")] == [3, 4, 2, 9]
  refused = collections.Counter()
  for c in cells:
    refused.update(c["refused_for"])
  assert refused == {"custom_call": 1, "platform": 1, "stablehlo_version": 1}
  assert all(not c["must_pass"] and c["status"] == ("warn" if c["fail"] else "pass")
             for c in cells)
  text = capsys.readouterr().out
  assert "| producer | TensorFlow 2.21.0 |" in text
  assert "on TensorFlow 2.21.0: 1 x refused (custom_call): custom call 'lapack_ssyevd_ffi'" in text
