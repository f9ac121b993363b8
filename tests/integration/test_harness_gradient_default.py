"""Gradients recorded by default where a function holds a custom derivative rule.

A project written on the fly, recorded once: functions with a ``custom_vjp`` and a
``custom_jvp`` rule in cases that leave ``vjp_order`` unset (their VJP is recorded and
compared) and in cases that opt out (``vjp_order=0``), a case with integer and bool inputs and
a VJP (they have no cotangent: none is stored, and the manifest names them), and a case recorded
without gradients, as every entry before the default was. The rules then change, or the last
case leaves its order unset."""

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jaxport.cli._main import main
from jaxport.golden._store import GoldenStore

from _downstream_project import STORE, recorded_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = "2026-12-01"

CASES = textwrap.dedent("""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jaxport.harness import Case, random_matrix

    SCALE = 1.0
    EARLIER_ORDER = 0


    @jax.custom_vjp
    def soft(x):
      return jnp.sin(x)


    soft.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x) * SCALE,))


    @jax.custom_jvp
    def smooth(x):
      return jnp.tanh(x)


    @smooth.defjvp
    def smooth_jvp(primals, tangents):
      (x,), (t,) = primals, tangents
      return jnp.tanh(x), t * (1 - jnp.tanh(x) ** 2) * SCALE


    def vector():
      return (random_matrix(0, (4,), np.float32),), {}


    def counted(x, n, mask):
      return jnp.sin(x) * n, n + 1, mask


    def with_counts():
      return (random_matrix(1, (4,), np.float32), np.arange(4, dtype=np.int32),
              np.array([True, False, True, False])), {}


    def cases():
      return [Case("vjp_rule", "grads", soft, vector),
              Case("vjp_rule_off", "grads", soft, vector, vjp_order=0),
              Case("jvp_rule", "grads", smooth, vector),
              Case("jvp_rule_off", "grads", smooth, vector, vjp_order=0),
              Case("int_inputs", "grads", counted, with_counts, vjp_order=1),
              Case("earlier", "grads", soft, vector, vjp_order=EARLIER_ORDER)]
    """)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
  """The project, recorded once (in a session of its own: a module-scoped fixture has no
  pytester); each test works on a copy."""
  return recorded_project(tmp_path_factory.mktemp("gradients"), CASES, TODAY)


@pytest.fixture
def copy(project, pytester):
  """The recorded project in pytester's folder, its case module rewritten by ``change``."""
  shutil.copytree(project, pytester.path, dirs_exist_ok=True)

  def change(**edits: str) -> GoldenStore:
    text = CASES
    for old, new in edits.items():
      text = text.replace(old, new)
    (Path(pytester.path) / "mycases.py").write_text(text)
    return GoldenStore(Path(pytester.path) / STORE)
  return change


def _session(pytester, tmp_path, *args, today=TODAY):
  report_file = tmp_path / "report.json"
  done = pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={today}",
                            f"--compat-report={report_file}", *args)
  return done, json.loads(report_file.read_text())


def test_changed_custom_rules_fail_unless_the_case_opts_out_and_int_inputs_store_no_cotangent(
    copy, pytester, tmp_path, capsys):
  store = copy(**{"SCALE = 1.0": "SCALE = 1.5"})
  manifests = {e.manifest.case_id: e.manifest for e in store.entries()}
  assert [t.path for t in manifests["vjp_rule"].tolerances] == ["output", "vjp1:args[0]"]
  assert manifests["vjp_rule"].no_cotangent == ()
  assert [t.path for t in manifests["jvp_rule"].tolerances] == ["output", "vjp1:args[0]"]
  for case_id in ("vjp_rule_off", "jvp_rule_off", "earlier"):
    assert manifests[case_id].no_cotangent is None
    assert [t.path for t in manifests[case_id].tolerances] == ["output"]

  # Integer and bool inputs have no cotangent: the entry stores the float input's only.
  ints = manifests["int_inputs"]
  assert ints.no_cotangent == ("args[1]", "args[2]")
  assert [t.path for t in ints.tolerances] == [
      "output[0]", "output[1]", "output[2]", "vjp1:args[0]"]
  (entry,) = [e for e in store.entries() if e.manifest.case_id == "int_inputs"]
  stored = entry.expected_outputs()
  assert [a.dtype for a in stored] == [np.float32, np.int32, np.bool_, np.float32]
  entry.verify()
  capsys.readouterr()
  assert main(["inspect", str(entry.path)]) == 0
  shown = capsys.readouterr().out
  assert "inputs without a cotangent (no VJP output stored): args[1], args[2]" in shown, shown

  done, report = _session(pytester, tmp_path)
  status = {e["case_id"]: e["status"] for e in report["entries"]}
  assert status == {"vjp_rule": "fail", "jvp_rule": "fail", "vjp_rule_off": "pass",
                    "jvp_rule_off": "pass", "int_inputs": "pass", "earlier": "pass"}, status
  assert done.ret == 1
  for e in report["entries"]:
    if e["case_id"] in ("vjp_rule", "jvp_rule"):
      assert any(m.startswith("[numerics_change]") and "VJP output args[0] (order 1)" in m
                 for m in e["messages"]), e


def test_an_entry_recorded_without_gradients_is_judged_as_recorded_and_the_next_record_adds_them(
    copy, pytester, tmp_path):
  # The earlier case now leaves its order unset: its function holds a custom_vjp rule.
  store = copy(**{"EARLIER_ORDER = 0": "EARLIER_ORDER = None"})
  done, report = _session(pytester, tmp_path, "-k", "earlier")
  assert done.ret == 0, done.stdout.str()
  assert [e["status"] for e in report["entries"]] == ["pass"], report["entries"]

  (before,) = [e for e in store.entries() if e.manifest.case_id == "earlier"]
  done, _ = _session(pytester, tmp_path, "-k", "earlier", "--compat-record",
                     today="2026-12-02")
  assert done.ret == 0, done.stdout.str()
  out = done.stdout.str()
  assert (f"{before.entry_id} holds none and is judged as recorded, without them; this "
          "recording adds them") in out, out
  assert "holds a custom_vjp rule" in out and "vjp_order=0 opts out" in out
  after = [e for e in store.entries() if e.manifest.case_id == "earlier"]
  assert [t.path for t in after[-1].manifest.tolerances] == ["output", "vjp1:args[0]"]
