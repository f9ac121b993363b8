"""``jaxport.upgrade`` on the golden entries of old releases, and ``jaxport upgrade`` on the command line."""

import json
import sys
from pathlib import Path

import jax
import jax.export
import numpy as np
import pytest

import jaxport
from jaxport.cli import main
from jaxport.custom_calls._registry import stable_targets
from jaxport.golden._store import GoldenStore
from jaxport.upgrades import upgrade_with_report

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from jaxport.harness import checkers# noqa: E402
from jaxport.upgrades import upgrade_envelope

STORE = GoldenStore(ROOT / "compat_data")

# The entries that could only be expected failures before upgrades existed: legacy
# untyped targets of jax 0.4.30 and the 3-operand trsm of jax 0.5.3, with the rules they need.
FORMERLY_FAILING = {
    ("release_cholesky_f32", "0.4.30"): ("potrf",),
    ("release_cholesky_poly_f32", "0.4.30"): ("potrf",),
    ("release_qr_f32", "0.4.30"): ("geqrf", "orgqr"),
    ("release_eigh_f32", "0.4.30"): ("syevd",),
    ("release_eigh_c64", "0.4.30"): ("heevd",),
    ("release_eig_f32", "0.4.30"): ("geev",),
    ("release_svd_f32", "0.4.30"): ("gesdd",),
    ("release_lu_f32", "0.4.30"): ("getrf",),
    ("release_schur_f32", "0.4.30"): ("gees",),
    ("release_triangular_solve_f32", "0.4.30"): ("blas_trsm",),
    ("release_triangular_solve_f32", "0.5.3"): ("trsm_alpha",),
}


def _entry(case_id: str, producer: str):
  [entry] = [e for e in STORE.entries(platform="cpu")
             if e.manifest.case_id == case_id and e.manifest.producer.jax == producer]
  return entry


def _check(entry, exp) -> None:
  """Run ``exp`` on the entry's inputs and judge against what the old release computed."""
  m = entry.manifest
  inputs = entry.inputs()
  args, kwargs = exp.in_tree.unflatten(inputs)
  actual = [np.asarray(o) for o in jax.tree.leaves(exp.call(*args, **kwargs))]
  verdict = checkers.check(m.comparison.mode, inputs, entry.expected_outputs(), actual,
                           rtol=m.comparison.rtol, atol=m.comparison.atol)
  assert verdict.ok, verdict.problems


@pytest.mark.parametrize("case_id, producer", sorted(FORMERLY_FAILING))
def test_formerly_failing_entry_runs_after_upgrade_and_round_trips(case_id, producer):
  entry = _entry(case_id, producer)
  # jax 0.11.1 and newer also refuse these envelopes as expired: rewritten first (a no-op before).
  exp = jaxport.deserialize(upgrade_envelope(entry.blob()))
  with pytest.raises(Exception, match="No registered implementation|Wrong number of arguments"):
    _check(entry, exp)
  report = upgrade_with_report(exp)
  assert report.rules_applied == tuple(sorted(FORMERLY_FAILING[(case_id, producer)]))
  up = report.exported
  for field in ("fun_name", "in_tree", "out_tree", "in_avals", "out_avals", "platforms",
                "calling_convention_version", "module_kept_var_idx", "nr_devices"):
    assert getattr(up, field) == getattr(exp, field), field
  assert {r.target for r in report.rewrites} <= stable_targets("cpu")
  _check(entry, up)
  blob = bytes(up.serialize())
  _check(entry, jax.export.deserialize(bytearray(blob)))
  _check(entry, jaxport.deserialize(bytearray(blob)))


def test_an_exported_read_by_jax_export_upgrades_too():
  entry = _entry("release_lu_f32", "0.4.30")
  exp = jax.export.deserialize(upgrade_envelope(entry.blob()))
  _check(entry, jaxport.upgrade(exp))


def run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def test_cli_upgrades_an_entry_into_a_new_blob(tmp_path, capsys):
  entry = _entry("release_eig_f32", "0.4.30")
  out_path = tmp_path / "eig.bin"
  rc, out, _ = run(capsys, "upgrade", str(entry.path), "-o", str(out_path), "--json")
  assert rc == 0
  info = json.loads(out)
  assert info["rules_applied"] == ["geev"]
  [rewrite] = info["rewrites"]
  assert (rewrite["legacy_target"], rewrite["target"]) == ("lapack_sgeev", "lapack_sgeev_ffi")
  assert rewrite["attributes"] == {"compute_left": "N", "compute_right": "V"}
  assert rewrite["dropped_operands"] == ["batch", "n", "jobvl", "jobvr"]
  _check(entry, jaxport.deserialize(bytearray(out_path.read_bytes())))
  # An existing output is never replaced without --force; the input never.
  rc, _, err = run(capsys, "upgrade", str(entry.path), "-o", str(out_path))
  assert rc == 2 and "exists; choose another -o or pass --force" in err
  blob = tmp_path / "in.bin"
  blob.write_bytes(entry.blob())
  rc, _, err = run(capsys, "upgrade", str(blob), "-o", str(blob), "--force")
  assert rc == 2 and "would overwrite the input" in err and blob.read_bytes() == entry.blob()


def test_cli_text_names_each_rewrite(tmp_path, capsys):
  entry = _entry("release_triangular_solve_f32", "0.5.3")
  rc, out, _ = run(capsys, "upgrade", str(entry.path), "-o", str(tmp_path / "t.bin"))
  assert rc == 0
  assert "lapack_strsm_ffi -> lapack_strsm_ffi (rule trsm_alpha)" in out
  assert "dropped operands alpha" in out
