"""The shardings of an export are part of its calling contract in a caller's terms (mesh axes,
PartitionSpecs, memory kinds, the device count), read from the named shardings every record
keeps, so they compare the same on every jax release; and so are the inputs its ``main``
donates: a donation added is a ``signature_change``, one removed a ``donation_removed``
warning that fails only under ``--compat-strict``. The functions are exported over an abstract
mesh of eight devices, which the ordinary test process needs none of."""

import dataclasses
import importlib.metadata as md

import jax
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P

import _judging as judging
import jaxport
from jaxport.export import _mlir
from jaxport.golden import EntryId
from jaxport.harness._controller import _update
from jaxport.harness._judge._artifact import ArtifactFindings, audit_policy
from jaxport.harness._protocol._answers import TodayResult
from jaxport.harness._worker import _calling, _sharding_contract
from jaxport.report import FindingKind as K, Status

X = jax.ShapeDtypeStruct((8, 4), np.float32)
ENTRY = EntryId.parse("cpu/training/step/2026-11-30_jax-0.10.2")


def _mesh(names=("data", "model"), sizes=(4, 2)):
  return AbstractMesh(sizes, names, axis_types=(AxisType.Auto,) * len(names))


def _step(x, y):
  return x * 2, y + 1


def _contract(mesh=None, spec=P("data", None), out=None, donate=(), reader="jaxport"):
  mesh = mesh or _mesh()
  jitted = jax.jit(_step, in_shardings=(NamedSharding(mesh, spec), NamedSharding(mesh, P())),
                   out_shardings=out, donate_argnums=donate)
  blob = jaxport.export(jitted)(X, X).serialize()
  read = jaxport.deserialize(blob) if reader == "jaxport" else jax.export.deserialize(blob)
  return _calling.contract_of(read)


@pytest.fixture(scope="module")
def base():
  return _contract()


def test_the_contract_holds_meshes_specs_and_the_device_count(base):
  assert base.nr_devices == 8 and base.donated == ()
  first, second = base.in_named
  assert first.mesh.axis_names == ("data", "model") and first.mesh.axis_sizes == (4, 2)
  assert first.spec_text() == "PartitionSpec('data', None)"
  assert second.spec_text() == "PartitionSpec()"
  assert base.out_named == (None, None)


def test_both_readers_read_the_same_sharding_contract(base):
  assert _contract(reader="jax") == base


def test_a_changed_input_spec_is_named_in_partition_spec_terms(base):
  got = _calling.diff(base, _contract(spec=P(None, "data")))
  assert got.by_function == (
      "input args[0]: PartitionSpec('data', None) became PartitionSpec(None, 'data')",)


def test_the_same_spec_written_without_trailing_nones_is_the_same_contract(base):
  assert _calling.diff(base, _contract(spec=P("data"))) == _calling.ContractDiff()


def test_a_renamed_mesh_axis_is_one_line_naming_both_names(base):
  got = _calling.diff(base, _contract(mesh=_mesh(("data", "tensor"))))
  assert got.by_function == ("mesh axis 'model' became 'tensor' (the mesh of args[0], args[1])",)


def test_a_renamed_axis_a_spec_uses_names_the_rename_and_no_spec_change():
  old = _contract(spec=P("data", "model"))
  got = _calling.diff(old, _contract(mesh=_mesh(("data", "tensor")), spec=P("data", "tensor")))
  assert got.by_function == ("mesh axis 'model' became 'tensor' (the mesh of args[0], args[1])",)


def test_an_output_newly_sharded_names_its_spec_and_mesh(base):
  mesh = _mesh()
  got = _calling.diff(base, _contract(out=(NamedSharding(mesh, P("data")), None)))
  assert got.by_function == ("output[0]: unspecified became PartitionSpec('data') on mesh "
                             "('data': 4, 'model': 2)",)


def test_another_device_count_names_the_axis_size_and_the_count(base):
  got = _calling.diff(base, _contract(mesh=_mesh(sizes=(2, 2))))
  assert got.by_function == ("mesh axis 'data': size 4 became 2 (the mesh of args[0], args[1])",
                             "device count 8 became 4")


def test_a_donation_added_is_the_functions_change_and_one_removed_is_apart(base):
  donating = _contract(donate=(0,))
  assert donating.donated == ("args[0]",)
  added = _calling.diff(base, donating)
  (line,) = added.by_function
  assert line.startswith("input args[0]: donated anew") and added.donation_removed == ()
  removed = _calling.diff(donating, base)
  assert removed.by_function == ()
  (line,) = removed.donation_removed
  assert line.startswith("input args[0]: no longer donated")


def test_a_buffer_donor_without_output_shardings_is_a_donation():
  # jax marks an input donated to no output in particular ``jax.buffer_donor``.
  contract = _contract(donate=(1,))
  assert contract.donated == ("args[1]",)


def test_donations_are_read_past_the_platform_index_argument():
  jitted = jax.jit(_step, donate_argnums=(1,))
  exp = jaxport.export(jitted, platforms=("cpu", "tpu"))(X, X)
  text, donations = _mlir.text_and_donations(exp.mlir_module_serialized)
  assert len(donations) == 3 and donations[2] and not donations[1]
  assert "tf.aliasing_output" in text
  assert _calling.contract_of(exp).donated == ("args[1]",)


def test_reduced_and_unreduced_axes_are_part_of_the_spec():
  mesh = AbstractMesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
  try:
    spec = P("data", unreduced={"model"})
  except TypeError:
    pytest.skip("this jax's PartitionSpec has no unreduced axes")
  terms = _sharding_contract.terms_of(NamedSharding(mesh, spec))
  assert terms.spec_text() == "PartitionSpec('data', unreduced={'model'})"
  plain = _sharding_contract.terms_of(NamedSharding(mesh, P("data")))
  paths = [("input ", "args[0]")]
  assert _sharding_contract.sharding_lines(paths, [plain], [terms]) == [
      "input args[0]: PartitionSpec('data') became PartitionSpec('data', unreduced={'model'})"]


def _manifest():
  return judging.manifest_of_consumer("step", "training")


def _judged(newest=True, **today):
  return judging.findings_of_today(ENTRY, _manifest(), ("cpu",), newest, **today)


def test_a_donation_removed_warns_fails_when_strict_and_is_updated(base):
  (line,) = _calling.diff(_contract(donate=(0,)), base).donation_removed
  out = _judged(donation_removed=(line,))
  assert out.kinds == (K.DONATION_REMOVED,)
  assert f"calling contract of case step: {line}" in out.messages[0]
  assert judging.status(out) is Status.WARN
  assert judging.status(out, strict=True) is Status.FAIL
  assert judging.status(out, strict=True, updating=True) is Status.WARN
  (change,) = _update.changed_cases({ENTRY: out}, [ENTRY], ["step"], include_new=False)
  assert change.signature_changes == (line,)
  assert _judged(newest=False, donation_removed=(line,)).kinds == ()


def test_the_donations_removed_travel_in_todays_answer():
  today = TodayResult(available=True, same_module=True, donation_removed=("input x: gone",))
  assert TodayResult.from_json(today.to_json(), "today") == today
  with pytest.raises(Exception, match="donation_removed"):
    TodayResult.from_json({k: v for k, v in today.to_json().items()
                           if k != "donation_removed"}, "today")


def test_audit_judges_a_donation_removed_as_the_replay_does(base):
  diff = _calling.diff(_contract(donate=(0,)), base)
  found = ArtifactFindings()
  found.contract(_manifest(), md.version("jax"), diff.by_function, diff.by_jax, True,
                 diff.platforms_added, diff.donation_removed)
  default = found.judged(audit_policy(strict=False, changes_fail=True, newest=True))
  assert [f.kind for f in default.findings] == [K.DONATION_REMOVED]
  assert default.status is Status.WARN
  assert found.judged(audit_policy(strict=True, changes_fail=True, newest=True)).status is (
      Status.FAIL)


def test_a_one_device_output_in_default_memory_reads_as_unspecified():
  one = _sharding_contract.ShardingTerms(
      _sharding_contract.MeshTerms(("kernel",), (1,), ("Explicit",)), (None, None), (), (),
      "device")
  paths = [("", "output[0]")]
  assert _sharding_contract.sharding_lines(paths, [None], [one]) == []
  assert _sharding_contract.sharding_lines(paths, [one], [None]) == []
  two = dataclasses.replace(one, mesh=_sharding_contract.MeshTerms(("data",), (2,),
                                                                     ("Explicit",)))
  assert _sharding_contract.sharding_lines(paths, [None], [two]) == [
      "output[0]: unspecified became PartitionSpec(None, None) on mesh ('data': 2)"]
  pinned = dataclasses.replace(one, memory_kind="pinned_host")
  assert len(_sharding_contract.sharding_lines(paths, [None], [pinned])) == 1
