"""A multi-device function's shardings and donations are part of its calling contract, judged
the same on every jax release. Six cases of eight simulated devices are recorded once; each
then changes one thing a caller depends on: an input's PartitionSpec, a mesh axis's name, an
output newly sharded, the device count, a donation added (each a ``signature_change`` in mesh
and PartitionSpec terms that fails) and a donation removed (a ``donation_removed`` warning that
fails under ``--compat-strict``). ``--compat-update`` records all six anew. Entries that name
another jax release as their producer (as one recorded under jax 0.10.2 and replayed under
0.12.0.1 does) are judged the same."""

import importlib.metadata as md
import shutil
import textwrap

import pytest

from _downstream_project import STORE, as_another_release, recorded_project, session_with_report
from jaxport.golden._store import GoldenStore

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

CASES = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from jaxport.harness import Case, random_matrix

CHANGED = {changed!r}


def _mesh(n=8, names=("data", "model")):
  return jax.make_mesh((n // 2, 2), names, devices=jax.devices()[:n])


def _ns(mesh, *spec):
  return NamedSharding(mesh, P(*spec))


def matrices():
  return (random_matrix(0, (8, 4), np.float32), random_matrix(1, (8, 4), np.float32)), {{}}


def step(x, y):
  return jnp.tanh(x) * 2, y + 1


def spec():
  m = _mesh()
  first = _ns(m, None, "data") if "spec" in CHANGED else _ns(m, "data", None)
  return {{"in_shardings": (first, _ns(m))}}


def axis():
  names = ("data", "tensor") if "axis" in CHANGED else ("data", "model")
  m = _mesh(names=names)
  return {{"in_shardings": (_ns(m, "data", names[1]), _ns(m))}}


def output():
  m = _mesh()
  out = (_ns(m, "data"), _ns(m)) if "output" in CHANGED else (_ns(m), _ns(m))
  return {{"in_shardings": (_ns(m, "data"), _ns(m)), "out_shardings": out}}


def devices():
  m = _mesh(4 if "devices" in CHANGED else 8)
  return {{"in_shardings": (_ns(m, "data"), _ns(m))}}


def donated(starts):
  def make():
    m = _mesh()
    donates = starts != ("donation_" + ("removed" if starts else "added") in CHANGED)
    return {{"in_shardings": (_ns(m, "data"), _ns(m)), "donate_argnums": (0,) if donates else ()}}
  return make


def cases():
  return [Case(name, "sharded", step, matrices, num_devices=8, jit_kwargs=kwargs)
          for name, kwargs in (("spec", spec), ("axis", axis), ("output", output),
                               ("devices", devices), ("donation_added", donated(False)),
                               ("donation_removed", donated(True)))]
"""

ALL = ("spec", "axis", "output", "devices", "donation_added", "donation_removed")


def _cases(changed=()) -> str:
  return textwrap.dedent(CASES.format(changed=tuple(changed)))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
  """The project with its six cases recorded, once for the module (``record_once``: a
  module-scoped fixture has no pytester); the tests' sessions run on a copy."""
  return recorded_project(tmp_path_factory.mktemp("sharded"), _cases(), TODAY)


def _changed(pytester, recorded, changed):
  """A copy of the recorded project in ``pytester.path``, its ``changed`` cases changed."""
  for name in ("pyproject.toml", "test_golden.py"):
    shutil.copy(recorded / name, pytester.path / name)
  shutil.copytree(recorded / "golden", pytester.path / "golden")
  (pytester.path / "mycases.py").write_text(_cases(changed))


def _run(pytester, tmp_path, name, *args):
  return session_with_report(pytester, tmp_path / f"{name}.json", TODAY, *args)


def _by_case(report):
  return {e["case_id"]: e for e in report["entries"]}


def _text(entry):
  return "\n".join(entry["messages"])


def test_sharding_and_donation_changes_are_judged_in_a_callers_terms(
    pytester, tmp_path, recorded):
  _changed(pytester, recorded, ALL)
  result, report = _run(pytester, tmp_path, "replay")
  entries = _by_case(report)
  for case in ("spec", "axis", "output", "devices", "donation_added"):
    assert entries[case]["status"] == "fail", entries[case]
    assert entries[case]["kinds"] == ["signature_change"], entries[case]
  lead = "calling contract of case"
  assert (f"{lead} spec: input args[0]: PartitionSpec('data', None) became "
          "PartitionSpec(None, 'data')") in _text(entries["spec"])
  assert f"{lead} axis: mesh axis 'model' became 'tensor'" in _text(entries["axis"])
  assert "PartitionSpec" not in _text(entries["axis"])  # the rename alone, once
  assert (f"{lead} output: output[0]: PartitionSpec() became PartitionSpec('data')"
          in _text(entries["output"]))
  devices = _text(entries["devices"])
  assert f"{lead} devices: device count 8 became 4" in devices
  assert "mesh axis 'data': size 4 became 2" in devices
  assert f"{lead} donation_added: input args[0]: donated anew" in _text(
      entries["donation_added"])
  removed = entries["donation_removed"]
  assert removed["status"] == "warn" and removed["kinds"] == ["donation_removed"], removed
  assert f"{lead} donation_removed: input args[0]: no longer donated" in _text(removed)
  result.assert_outcomes(passed=1, failed=5)

  result, report = _run(pytester, tmp_path, "strict", "--compat-strict")
  assert _by_case(report)["donation_removed"]["status"] == "fail", report["entries"]
  result.assert_outcomes(failed=6)

  result, report = _run(pytester, tmp_path, "update", "--compat-update")
  assert sorted(u["case_id"] for u in report["updated"]) == sorted(ALL), report["updated"]


def test_entries_another_release_recorded_are_judged_the_same(pytester, tmp_path, recorded):
  # The blob is read by this release either way; the entry names another producer, as an
  # entry recorded under jax 0.10.2 and replayed under 0.12.0.1 does.
  _changed(pytester, recorded, ALL)
  store = GoldenStore(pytester.path / STORE)
  other = "0.12.0.1" if md.version("jax") == "0.10.2" else "0.10.2"
  for case in ALL:
    as_another_release(store, case, other)
  result, report = _run(pytester, tmp_path, "other")
  entries = _by_case(report)
  assert {c: (e["status"], e["kinds"]) for c, e in entries.items()} == {
      **{c: ("fail", ["signature_change"]) for c in ALL if c != "donation_removed"},
      "donation_removed": ("warn", ["donation_removed"])}, report["entries"]
  assert "mesh axis 'model' became 'tensor'" in _text(entries["axis"])
