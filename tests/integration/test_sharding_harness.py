"""Golden entries of multi-device cases: the shardings sidecar and its check on replay.

In the ordinary process: the store writes, verifies and reads ``shardings.json``,
refuses a tampered one, and the harness describes and compares shardings. In
an eight-device child process (``_sharding_child``): a recorded sharding entry
replays with both readers, and the same replay with a changed sharding record
is a failure that names the output and the difference.
"""

import datetime
import json
import sys
from pathlib import Path

import _sharding_child
import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
  sys.path.insert(0, str(REPO_ROOT))

from jaxport.harness import _devices
from jaxport.harness._worker import _shardings
from jaxport.errors import GoldenDataError  # noqa: E402
from jaxport.golden._manifest import Comparison, Manifest, Producer  # noqa: E402
from jaxport.golden._store import GoldenStore  # noqa: E402
from _judging import reproduced  # noqa: E402

if not _sharding_child.in_child():
  import jax
  from jax.sharding import NamedSharding, PartitionSpec as P

  def _manifest() -> Manifest:
    return Manifest(
        case_id="sidecar_case", family="sharding_test", platform="cpu",
        record_date=datetime.date(2026, 1, 2), producer=Producer.current(),
        calling_convention_version=10, serialization_version=11, custom_call_targets=(),
        polymorphic_shapes=None, constraints=None, lowering_only=False,
        comparison=Comparison("allclose", 1e-5, 1e-6))

  SIDECAR = {"num_devices": 8, "outputs": [
      {"kind": "named", "memory_kind": "pinned_host", "axis_names": ["x"], "axis_sizes": [8],
       "axis_types": ["Auto"], "spec": [["x"]]}]}

  def _write(tmp_path, shardings):
    store = GoldenStore(tmp_path)
    arrays = [np.ones(3, np.float32)]
    return store.write_entry(_manifest(), b"blob", arrays, arrays, "module", shardings)

  def test_the_sidecar_is_written_listed_and_read_back(tmp_path):
    entry = _write(tmp_path, SIDECAR)
    entry.verify()
    assert "shardings.json" in entry.manifest.files
    assert entry.shardings() == SIDECAR
    assert _devices.devices_needed(entry.shardings()) == 8

  def test_an_entry_without_sidecar_needs_one_device(tmp_path):
    entry = _write(tmp_path, None)
    assert "shardings.json" not in entry.manifest.files
    assert entry.shardings() is None
    assert _devices.devices_needed(None) == 1

  def test_a_tampered_sidecar_is_refused(tmp_path):
    entry = _write(tmp_path, SIDECAR)
    path = entry.path / "shardings.json"
    path.chmod(0o644)
    path.write_text(json.dumps({**SIDECAR, "num_devices": 1}))
    with pytest.raises(GoldenDataError, match="shardings.json: sha256 mismatch"):
      entry.shardings()

  @pytest.mark.parametrize("bad", [0, -2, "8", True, None])
  def test_a_bad_device_count_is_a_golden_data_error(bad):
    with pytest.raises(GoldenDataError, match="num_devices must be a positive integer"):
      _devices.devices_needed({"num_devices": bad, "outputs": []})

  def test_describe_and_compare_name_the_difference():
    mesh = jax.make_mesh((1,), ("x",))
    a = jax.device_put(np.ones((4, 2), np.float32), NamedSharding(mesh, P("x", None)))
    d = _shardings.describe(a)
    assert d == {"kind": "named", "memory_kind": "device", "axis_names": ["x"], "axis_sizes": [1],
                 "axis_types": [str(mesh.axis_types[0].name)], "spec": [["x"]]}
    assert _shardings.compare({"outputs": [d]}, [a]) == []
    other = {**d, "memory_kind": "pinned_host", "spec": [None, ["x"]]}
    (problem,) = _shardings.compare({"outputs": [other]}, [a])
    assert problem.startswith("output 0 sharding differs from the recording")
    assert "memory_kind: recorded 'pinned_host', replayed 'device'" in problem
    assert "spec: recorded [None, ['x']], replayed [['x']]" in problem
    assert _shardings.compare({"outputs": []}, [a]) == [
        "1 outputs replayed but shardings.json records 0"]

  def test_single_device_outputs_are_described_without_the_device():
    a = jax.device_put(np.ones(2, np.float32), jax.devices()[0])
    assert _shardings.describe(a) == {"kind": "single_device", "memory_kind": "device"}

  @pytest.mark.slow
  def test_sharding_harness_in_eight_device_process():
    _sharding_child.run_module_in_child(__file__)

else:
  from _jax_releases import skip_without_memory_kinds_on_cpu_mesh
  from jaxport.harness._worker import _case_runs, _engine, _jax_setup, _module_reads, _recording
  from harness.cases import case as lookup_case

  _jax_setup.configure_jax()
  ENGINE = _engine.ReplayEngine()
  STORE = GoldenStore(REPO_ROOT / "compat_data")
  SHARDED = sorted(e.entry_id for e in STORE.entries(platform="cpu")
                   if e.shardings() is not None)

  def test_every_sharding_target_has_a_multi_device_entry():
    targets = {s.target for eid in SHARDED for s in STORE.entry(eid).manifest.custom_call_targets}
    assert {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
            "annotate_device_placement"} <= targets

  @pytest.mark.parametrize("entry_id", SHARDED, ids=str)
  def test_replays_reproduce_the_recorded_shardings(entry_id):
    if "memory_kind" in str(entry_id):
      skip_without_memory_kinds_on_cpu_mesh()
    entry = STORE.entry(entry_id)
    recorded = entry.shardings()
    assert recorded["num_devices"] == 8
    for reader in ("jaxport", "jax"):
      out = ENGINE._read(reader, entry.blob(), entry.inputs(), entry.expected_outputs(),
                         entry.manifest, _module_reads.ModuleReads(), recorded)
      assert reproduced(out), (reader, out)

  def test_gspmd_entries_replay_with_both_readers_under_shardy():
    # The entry's manifest keeps use_shardy=False; readers call it with Shardy on (jax's
    # reader fails the verifier calling an explicit-axes GSPMD record with GSPMD on).
    configs = {e: STORE.entry(e).manifest.jax_config or {} for e in SHARDED}
    gspmd = [e for e in SHARDED if configs[e].get("jax_use_shardy_partitioner") is False]
    assert any("explicit_mesh" in str(e) for e in gspmd), gspmd
    for entry_id in gspmd:
      answer = ENGINE.replay(STORE.entry(entry_id), today=False)
      assert [r.reader for r in answer.readers] == ["jaxport", "jax"]
      assert all(reproduced(r) for r in answer.readers), (entry_id, answer.readers)

  def test_a_changed_sharding_record_fails_the_replay():
    skip_without_memory_kinds_on_cpu_mesh()
    entry = STORE.entry(next(e for e in SHARDED if "memory_kind" in str(e)))
    recorded = entry.shardings()
    changed = json.loads(json.dumps(recorded))
    changed["outputs"][0]["memory_kind"] = "device"
    changed["outputs"][1]["spec"] = [["x"]]
    for reader in ("jaxport", "jax"):
      out = ENGINE._read(reader, entry.blob(), entry.inputs(), entry.expected_outputs(),
                         entry.manifest, _module_reads.ModuleReads(), changed)
      assert not reproduced(out) and out.error is None and out.numerics.ok, out
      assert any("output 0 sharding differs" in p and "memory_kind: recorded 'device', "
                 "replayed 'pinned_host'" in p for p in out.problems), out
      assert any(p.startswith("output 1 sharding differs") for p in out.problems), out

  def test_recording_a_sharded_case_gives_the_stored_shardings():
    entry = STORE.entry(next(e for e in SHARDED if "sharding_constraint" in str(e)))
    case = lookup_case(entry.manifest.case_id)
    rec = _recording.record_case(case, entry.manifest.record_date)
    assert rec.shardings == entry.shardings()
    assert rec.manifest.custom_call_targets == entry.manifest.custom_call_targets

  def test_a_wrong_case_sharding_is_caught_at_record_time():
    entry = STORE.entry(next(e for e in SHARDED if "sharding_constraint" in str(e)))
    case = lookup_case(entry.manifest.case_id)
    exp = _case_runs.export_case(case)
    wrong = json.loads(json.dumps(entry.shardings()))
    wrong["outputs"][0]["spec"] = [None, ["b"]]
    with pytest.raises(ValueError, match="sharded differently from jax.jit of the case"):
      _recording._check_shardings_against_jit(case, exp, entry.inputs(), wrong)
