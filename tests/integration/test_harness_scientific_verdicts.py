"""A scientific library's golden tests, judged right: gradient rules compared, each output with
the tolerance of its own dtype or path, symbolic constraints part of the calling contract.

The project is written on the fly: a ``custom_vjp`` and a ``custom_jvp`` function recorded with
their VJP (``vjp_order=1``), a function taking its typed PRNG key first, a bfloat16 function, a
function with a tolerance set on one output path and a shape-polymorphic function with a
symbolic constraint. Its recorded outputs are moved by one ulp where a default tolerance must
let them pass; its gradient rules and constraint change where a verdict must catch them. An
entry of another jax release (simulated by rewriting its producer) differs from today's
lowering by the user's own change: that is not passed as jax's."""

import dataclasses
import datetime
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jaxport.cli._main import main
from jaxport.golden import EntryId
from jaxport.golden._entry import entry_sort_key, sha256_hex
from jaxport.golden._manifest import EXPECTED_FILE, MANIFEST_FILE
from jaxport.golden._npz import encode_arrays
from jaxport.golden._store import GoldenStore

from _downstream_project import as_another_release, write_project

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

TODAY = datetime.date(2026, 11, 30)

CASES = """
import jax
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

VJP_SCALE = 1.0
JVP_SCALE = 1.0


@jax.custom_vjp
def soft(x):
  return jnp.sin(x)


def soft_fwd(x):
  return jnp.sin(x), x


def soft_bwd(x, g):
  return (g * jnp.cos(x) * VJP_SCALE,)


soft.defvjp(soft_fwd, soft_bwd)


@jax.custom_jvp
def smooth(x):
  return jnp.tanh(x)


@smooth.defjvp
def smooth_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return jnp.tanh(x), t * (1 - jnp.tanh(x) ** 2) * JVP_SCALE


def vector():
  return (random_matrix(0, (4,), np.float32),), {}


def langevin(key, x0):
  return x0 + 0.1 * jax.random.normal(key, x0.shape, x0.dtype)


def key_first():
  return (jax.random.key(0), random_matrix(1, (4,), np.float32)), {}


def brain(x):
  return jnp.exp(x)


def bf16():
  return (random_matrix(2, (4,), np.float32).astype(jnp.bfloat16),), {}


def stats(x):
  return {"mean": jnp.mean(x), "twice": 2 * x}


def halves(x):
  return x[:, ::2] * 2


def batch():
  return (random_matrix(3, (2, 4), np.float32),), {}


def cases():
  return [Case("grad_vjp", "sci", soft, vector, vjp_order=1),
          Case("grad_jvp", "sci", smooth, vector, vjp_order=1),
          Case("langevin", "sci", langevin, key_first),
          Case("brain", "sci", brain, bf16),
          Case("stats", "sci", stats, vector, tolerances={"output['mean']": (1e-3, 1e-4)}),
          Case("halves", "sci", halves, batch, polymorphic_shapes=("b, 2*n",),
               constraints=("b >= 2",))]
"""


def _cases(**change: str) -> str:
  text = textwrap.dedent(CASES)
  for old, new in change.items():
    text = text.replace(old, new)
  return text


def _pytest(pytester, *args):
  return pytester.runpytest("-p", "no:cacheprovider", f"--compat-today={TODAY}", *args)


def _replay(pytester, tmp_path, *args) -> tuple[int, dict, list[dict]]:
  """The run's exit code, its report's entries by id and its skip ledger."""
  report_file = tmp_path / "report.json"
  done = _pytest(pytester, f"--compat-report={report_file}", *args)
  report = json.loads(report_file.read_text())
  return done.ret, {e["entry_id"]: e for e in report["entries"]}, report["skips"]


def _by_case(report: dict, case_id: str) -> list[dict]:
  return sorted((e for e in report.values() if e["case_id"] == case_id),
                key=lambda e: entry_sort_key(EntryId.parse(e["entry_id"])))


def _move_by_one_ulp(store: GoldenStore, case_id: str) -> None:
  """Move each float output recorded for ``case_id`` up by one ulp (the entry stays valid)."""
  (entry,) = [e for e in store.entries() if e.manifest.case_id == case_id]
  moved = [np.nextafter(a, np.array(np.inf, a.dtype)).astype(a.dtype)
           if a.dtype.kind not in "iub" else a for a in entry.expected_outputs()]
  assert any(not np.array_equal(a, b) for a, b in zip(moved, entry.expected_outputs()))
  data, _ = encode_arrays(moved, case_id)
  (entry.path / EXPECTED_FILE).write_bytes(data)
  m = entry.manifest
  files = {**m.files, EXPECTED_FILE: sha256_hex(data)}
  (entry.path / MANIFEST_FILE).write_text(dataclasses.replace(m, files=files).to_json())


@pytest.fixture(autouse=True)
def _fresh_sources(monkeypatch):
  # The case module is rewritten within a second; stale bytecode must not hide the change.
  monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


def test_gradient_rules_tolerances_and_constraints_are_judged(pytester, tmp_path, capsys):
  store = write_project(pytester, _cases())
  assert _pytest(pytester, "--compat-record").ret == 0
  manifests = {e.manifest.case_id: e.manifest for e in store.entries()}

  # Each output's tolerance is its own dtype's, or its path's where the case sets one.
  langevin = manifests["langevin"].tolerances
  assert [(t.path, t.dtype) for t in langevin] == [("output", "float32")]
  assert (langevin[0].rtol, langevin[0].atol) == (1e-4, 1e-5)
  stats = {t.path: (t.rtol, t.atol) for t in manifests["stats"].tolerances}
  assert stats == {"output['mean']": (1e-3, 1e-4), "output['twice']": (1e-4, 1e-5)}
  assert manifests["brain"].tolerances[0].dtype == "bfloat16"
  assert manifests["brain"].tolerances[0].rtol > 0
  assert [t.path for t in manifests["grad_vjp"].tolerances] == ["output", "vjp1:args[0]"]
  stats_entry = next(e for e in store.entries() if e.manifest.case_id == "stats")
  capsys.readouterr()
  assert main(["inspect", str(stats_entry.path)]) == 0
  shown = capsys.readouterr().out
  assert "output['mean'] (float32): rtol 0.001, atol 0.0001" in shown, shown

  # Recorded outputs one ulp away pass with no tolerance set: a key-first function's float32
  # and a bfloat16 function's.
  _move_by_one_ulp(store, "langevin")
  _move_by_one_ulp(store, "brain")
  (Path(pytester.path) / "mycases.py").write_text(_cases(
      **{"VJP_SCALE = 1.0": "VJP_SCALE = 1.5", "JVP_SCALE = 1.0": "JVP_SCALE = 1.5",
         '"b >= 2"': '"b >= 3"'}))
  ret, report, _ = _replay(pytester, tmp_path)
  assert ret == 1
  status = {e["case_id"]: e["status"] for e in report.values()}
  # One ulp off the recorded outputs is within tolerance, not bitwise: drift, reported only.
  assert status == {"grad_vjp": "fail", "grad_jvp": "fail", "langevin": "drift",
                    "brain": "drift", "stats": "pass", "halves": "fail"}, report
  for case_id in ("langevin", "brain"):
    (entry,) = _by_case(report, case_id)
    assert set(entry["kinds"]) == {"numerics_drift"}, entry
  for case_id in ("grad_vjp", "grad_jvp"):
    (entry,) = _by_case(report, case_id)
    changes = [m for m in entry["messages"] if m.startswith("[numerics_change]")]
    assert changes and all("VJP output args[0] (order 1)" in m for m in changes), entry
  (halves,) = _by_case(report, "halves")
  assert "signature_change" in halves["kinds"]
  assert any("symbolic constraints ['b >= 2'] became ['b >= 3']" in m
             for m in halves["messages"]), halves

  # The changed vjp rule, recorded anew, passes.
  assert _pytest(pytester, "--compat-update", "-k", "grad_vjp").ret == 0
  ret, report, _ = _replay(pytester, tmp_path, "-k", "grad_vjp")
  old, new = _by_case(report, "grad_vjp")
  assert new["status"] == "pass", new
  assert "numerics_change" in old["kinds"], old


TOLERANCE_CASES = """
import jax.numpy as jnp
import numpy as np
from jaxport.harness import Case, random_matrix

SCALE = 1.0


def vector():
  return (random_matrix(0, (4,), np.float32),), {}


def scaled(x):
  return x * SCALE


def cases():
  return [Case("scaled", "sci", scaled, vector, rtol=0.0, atol=0.0)]
"""


def test_after_a_tolerance_only_update_the_superseded_entry_agrees_with_its_skip_line(
    pytester, tmp_path):
  store = write_project(pytester, textwrap.dedent(TOLERANCE_CASES))
  assert _pytest(pytester, "--compat-record").ret == 0
  # Today's function moves by a few ulps; the case's tolerance is loosened to accept that.
  (Path(pytester.path) / "mycases.py").write_text(textwrap.dedent(TOLERANCE_CASES).replace(
      "SCALE = 1.0", "SCALE = 1.000001").replace("rtol=0.0, atol=0.0", "rtol=1e-4, atol=1e-5"))
  assert _pytest(pytester, "--compat-update").ret == 0
  assert len(store.entries()) == 2
  ret, report, skips = _replay(pytester, tmp_path)
  old, new = _by_case(report, "scaled")
  assert new["status"] == "pass", new
  (skip,) = [s["why"] for s in skips if old["entry_id"] == s["what"]
             and s["why"].startswith("earlier contract")]
  assert "comparison: rtol 0 became 0.0001" in skip
  assert "with the comparison it was recorded with" in skip
  # Judged by its readers and recorded outputs only: no verdict against today's function.
  assert "numerics_change" not in old["kinds"], old
  assert old["status"] == "pass" and ret == 0, old


ATTRIBUTION_CASES = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular
from jaxport.harness import Case, random_matrix


def lower_and_rhs():
  a = np.tril(random_matrix(0, (4, 4), np.float32)) + 4 * np.eye(4, dtype=np.float32)
  return (a, random_matrix(1, (4, 2), np.float32)), {}


def solve(a, b):
  return SOLVE


def halves(x):
  return x[:, ::2] * 2


def batch():
  return (random_matrix(3, (2, 4), np.float32),), {}


def cases():
  return [Case("solve", "sci", solve, lower_and_rhs),
          Case("halves", "sci", halves, batch, polymorphic_shapes=("b, 2*n",),
               constraints=("b >= 2",))]
"""
# The same solution, asked of the kernel another way: other custom-call attributes.
SOLVE_BEFORE = "solve_triangular(a, b, lower=True)"
SOLVE_AFTER = "solve_triangular(a.T, b, lower=False, trans=1)"


def _attribution_cases(solve: str, constraint: str = "b >= 2") -> str:
  return textwrap.dedent(ATTRIBUTION_CASES).replace("SOLVE", solve).replace(
      '"b >= 2"', f'"{constraint}"')


def test_another_releases_lowering_difference_is_jaxs_only_with_evidence(pytester, tmp_path):
  import jax
  other = "0.10.1" if jax.__version__ != "0.10.1" else "0.10.2"
  store = write_project(pytester, _attribution_cases(SOLVE_BEFORE))
  assert _pytest(pytester, "--compat-record").ret == 0
  solve_id = as_another_release(store, "solve", other)
  halves_id = as_another_release(store, "halves", other)

  # The user's own change of the kernel's attributes, and a tightened constraint, replayed
  # against entries another release recorded: neither is passed as jax's.
  (Path(pytester.path) / "mycases.py").write_text(_attribution_cases(SOLVE_AFTER, "b >= 3"))
  ret, report, _ = _replay(pytester, tmp_path)
  solve = report[str(solve_id)]
  assert "producer_drift" not in solve["kinds"], solve
  assert "drift_unattributed" in solve["kinds"] and solve["status"] == "warn", solve
  assert any("whose change this is is unknown" in m for m in solve["messages"]), solve
  halves = report[str(halves_id)]
  assert halves["status"] == "fail" and "signature_change" in halves["kinds"], halves
  assert any("symbolic constraints ['b >= 2'] became ['b >= 3']" in m
             for m in halves["messages"]), halves
  assert ret == 1

  # With the case recorded by the installed jax as it lowers today, the older release's
  # difference is jax's: today's lowering is that entry's.
  assert _pytest(pytester, "--compat-record", "-k", "solve").ret == 0
  ret, report, _ = _replay(pytester, tmp_path, "-k", "solve")
  old, new = _by_case(report, "solve")
  assert old["entry_id"] == str(solve_id) and new["status"] == "pass", (old, new)
  assert "producer_drift" in old["kinds"] and "drift_unattributed" not in old["kinds"], old
  assert old["status"] == "pass", old
