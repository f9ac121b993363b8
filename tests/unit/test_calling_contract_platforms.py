"""The platforms of an export are part of its calling contract: a platform removed is a
``signature_change`` naming it (the fleet of that platform can no longer load the artifact), a
platform added is a ``platforms_added`` warning that fails only under ``--compat-strict``, and
``--compat-update`` records a case anew for either. Exports for ``tpu`` and ``cuda`` are lowered
on the CPU host (cross-platform lowering)."""

import importlib.metadata as md

import jax
import jax.numpy as jnp
import numpy as np

import _judging as judging
import jaxport
from jaxport.golden import EntryId
from jaxport.harness._controller import _update
from jaxport.harness._judge._artifact import ArtifactFindings, audit_policy
from jaxport.harness._protocol._answers import TodayResult
from jaxport.harness._worker import _calling
from jaxport.report import FindingKind as K, Status

X = np.ones((3,), np.float32)
ENTRY = EntryId.parse("cpu/serving/rank/2026-11-30_jax-0.10.2")


def _contract(platforms):
  exp = jaxport.export(jax.jit(lambda x: jnp.sin(x) * 2), platforms=platforms)(
      jax.ShapeDtypeStruct(X.shape, X.dtype))
  return _calling.contract_of(jaxport.deserialize(exp.serialize()))


def test_the_contract_holds_the_platforms_the_blob_was_lowered_for():
  assert _contract(("cpu", "tpu")).platforms == ("cpu", "tpu")
  assert _contract(("cpu",)).platforms == ("cpu",)


def test_a_platform_removed_is_the_functions_change_naming_it():
  got = _calling.diff(_contract(("cpu", "tpu")), _contract(("cpu",)))
  (line,) = got.by_function
  assert line.startswith("platforms: ['tpu'] removed") and "no longer loads on tpu" in line
  assert got.platforms_added == () and got.by_jax == ()


def test_a_platform_added_is_apart_from_the_functions_changes():
  got = _calling.diff(_contract(("cpu", "tpu")), _contract(("cpu", "tpu", "cuda")))
  assert got.by_function == () and got.by_jax == ()
  assert got.platforms_added == ("platforms: ['cuda'] added (['cpu', 'tpu'] became "
                                 "['cpu', 'tpu', 'cuda'])",)


def test_platforms_in_another_order_are_the_same_contract():
  assert _calling.diff(_contract(("cpu", "tpu")), _contract(("tpu", "cpu"))) == (
      _calling.ContractDiff())


def test_one_platform_swapped_for_another_is_both_a_removal_and_an_addition():
  got = _calling.diff(_contract(("cpu", "tpu")), _contract(("cpu", "cuda")))
  assert len(got.by_function) == 1 and "['tpu'] removed" in got.by_function[0]
  assert len(got.platforms_added) == 1 and "['cuda'] added" in got.platforms_added[0]


def _manifest():
  return judging.manifest_of_consumer("rank", "serving")


def _judged(newest=True, **today):
  return judging.findings_of_today(ENTRY, _manifest(), ("cpu", "tpu"), newest, **today)


def test_a_removed_platform_fails_as_a_changed_function_and_is_updated():
  line = _calling.diff(_contract(("cpu", "tpu")), _contract(("cpu",))).by_function[0]
  out = _judged(contract_diff=(line,))
  assert out.kinds == (K.SIGNATURE_CHANGE,)
  assert f"calling contract of case rank: {line}" in out.messages[0]
  assert judging.status(out, changes_fail=True) is Status.FAIL
  (change,) = _update.changed_cases({ENTRY: out}, [ENTRY], ["rank"], include_new=False)
  assert change.signature_changes == (line,)


def test_an_added_platform_warns_fails_when_strict_and_is_updated():
  line = _calling.diff(_contract(("cpu", "tpu")), _contract(("cpu", "tpu", "cuda"))
                       ).platforms_added[0]
  out = _judged(platforms_added=(line,))
  assert out.kinds == (K.PLATFORMS_ADDED,)
  assert f"calling contract of case rank: {line}" in out.messages[0]
  assert judging.status(out, changes_fail=True) is Status.WARN
  assert judging.status(out, strict=True) is Status.FAIL
  # The run that records it anew does not fail on it, strict or not.
  assert judging.status(out, strict=True, updating=True) is Status.WARN
  (change,) = _update.changed_cases({ENTRY: out}, [ENTRY], ["rank"], include_new=False)
  assert change.signature_changes == (line,)
  assert "--compat-update" in _update.change_hint(out, updating=False, newest=True)


def test_an_older_entry_with_fewer_platforms_than_today_is_no_finding():
  out = _judged(newest=False, platforms_added=("platforms: ['cuda'] added",))
  assert out.kinds == ()


def test_the_platforms_added_travel_in_todays_answer():
  today = TodayResult(available=True, same_module=True, platforms_added=("platforms: x",))
  assert TodayResult.from_json(today.to_json(), "today") == today


def test_audit_judges_a_platforms_change_as_the_replay_does():
  found = ArtifactFindings()
  found.contract(_manifest(), md.version("jax"), ("platforms: ['tpu'] removed",), (), True,
                 ("platforms: ['cuda'] added",))
  default = found.judged(audit_policy(strict=False, changes_fail=True, newest=True))
  assert sorted(f.kind for f in default.findings) == [K.PLATFORMS_ADDED, K.SIGNATURE_CHANGE]
  assert default.status is Status.FAIL and len(default.problems) == 1
  assert any("['cuda'] added" in w for w in default.warnings)
  added = ArtifactFindings()
  added.contract(_manifest(), md.version("jax"), (), (), True, ("platforms: ['cuda'] added",))
  assert added.judged(audit_policy(strict=False, changes_fail=True, newest=True)).status is (
      Status.WARN)
  assert added.judged(audit_policy(strict=True, changes_fail=True, newest=True)).status is (
      Status.FAIL)
