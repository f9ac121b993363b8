"""``jaxport upgrade BLOB --for-jax VERSION`` and ``upgrade_envelope(blob, for_jax=...)``: an
existing artifact retargeted for an older consumer, the same way ``export(..., for_jax=...)``
writes one; without ``--for-jax``, the rewrite for the installed jax as before.

The library calls run against a made-up release table (``jaxport.releases._table.load``);
the command reads modules in its child process, so its tests use the table jaxport ships.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.cli import main
from jaxport.errors import ExportError
from jaxport.export import _for_jax, _mlir
from jaxport.golden._store import GoldenStore
from jaxport.releases import _table
from jaxport.upgrades import LAYOUTS, envelope_layout, rewrite_envelope, upgrade_envelope

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

# The made-up release facts and the fixture that installs them, shared with the unit tests.
from tests.unit.test_export_for_jax import CPU, OTHER_LAYOUT, facts, table  # noqa: E402,F401


def _blob() -> bytes:
  """Today's artifact of a batched cholesky, with its VJP: StableHLO newer than 1.14.0."""
  b = jaxport.symbolic_shape("b")[0]
  f = jax.jit(lambda x: jnp.linalg.cholesky(x @ x.mT + 4 * jnp.eye(3, dtype=x.dtype)))
  exp = jaxport.export(f)(jax.ShapeDtypeStruct((b, 3, 3), np.float32))
  assert _mlir.version_key(_mlir.artifact_version(exp.mlir_module_serialized)) > (1, 14, 0)
  return bytes(exp.serialize(vjp_order=1))


def _run(capsys, *argv):
  rc = main(list(argv))
  out, err = capsys.readouterr()
  return rc, out, err


def _x() -> np.ndarray:
  return np.random.RandomState(0).rand(2, 3, 3).astype(np.float32)


def test_upgrade_envelope_for_an_older_jax_writes_the_module_for_its_stablehlo(table):
  blob = _blob()
  new = upgrade_envelope(blob, for_jax="0.9.2")
  exp = jaxport.deserialize(new)
  assert _mlir.artifact_version(exp.mlir_module_serialized) == "1.14.0"
  assert _mlir.artifact_version(exp.vjp().mlir_module_serialized) == "1.14.0"
  assert envelope_layout(new) == _for_jax.installed_layout()
  want = jaxport.deserialize(blob).call(_x())
  for read in (jaxport.deserialize, jax.export.deserialize):
    np.testing.assert_allclose(read(new).call(_x()), want, rtol=1e-6, atol=1e-6)


def test_upgrade_envelope_for_the_installed_jax_keeps_a_blob_it_reads(table):
  blob = _blob()
  assert upgrade_envelope(blob) == blob
  assert rewrite_envelope(blob) == (bytearray(blob), None)


def test_a_consumer_that_refuses_the_blob_layout_gets_the_envelope_rewritten(table):
  table(facts(envelope_layouts={_for_jax.installed_layout(): "refuses", OTHER_LAYOUT: "reads"}))
  blob = _blob()
  new, rewrite = rewrite_envelope(blob, for_jax="0.9.2")
  assert envelope_layout(new) == OTHER_LAYOUT
  assert rewrite.reason == f"jax 0.9.2 refuses the {_for_jax.installed_layout()} layout"
  assert rewrite.to_version == _for_jax.LAYOUT_HEADERS[OTHER_LAYOUT]


def test_cli_upgrade_for_jax_retargets_a_blob(tmp_path, capsys):
  want = _table.release_facts("0.9.2").stablehlo_writes
  src, out = tmp_path / "in.bin", tmp_path / "out.bin"
  src.write_bytes(_blob())
  rc, text, err = _run(capsys, "upgrade", str(src), "--for-jax", "0.9.2", "-o", str(out), "--json")
  assert rc == 0, err
  info = json.loads(text)
  assert info["for_jax"]["release"] == "0.9.2"
  assert info["for_jax"]["stablehlo_version"] == want
  assert info["for_jax"]["stablehlo_rewritten"][1] == want
  assert info["for_jax"]["layout"] == _for_jax.installed_layout()
  assert info["envelope"] is None
  exp = jax.export.deserialize(bytearray(out.read_bytes()))
  assert _mlir.artifact_version(exp.mlir_module_serialized) == want
  rc, text, err = _run(capsys, "upgrade", str(src), "--for-jax", "0.9.2", "-o",
                       str(tmp_path / "again.bin"))
  assert rc == 0, err
  assert "rewrote the module for jax 0.9.2" in text
  assert f"for jax 0.9.2: StableHLO {want}, calling convention 10, envelope layout" in text
  assert "module: StableHLO " in text and f" -> {want}" in text


def test_cli_upgrade_without_for_jax_is_the_installed_rewrite(tmp_path, capsys):
  src, out = tmp_path / "in.bin", tmp_path / "out.bin"
  src.write_bytes(_blob())
  rc, text, err = _run(capsys, "upgrade", str(src), "-o", str(out), "--json")
  assert rc == 0, err
  info = json.loads(text)
  assert info["for_jax"] is None and info["envelope"] is None and info["rewrites"] == []
  assert (_mlir.artifact_version(jaxport.deserialize(out.read_bytes()).mlir_module_serialized)
          == _mlir.artifact_version(jaxport.deserialize(src.read_bytes()).mlir_module_serialized))


def test_cli_upgrade_for_an_unknown_release_fails_naming_it(tmp_path, capsys):
  src = tmp_path / "in.bin"
  src.write_bytes(_blob())
  rc, _, err = _run(capsys, "upgrade", str(src), "--for-jax", "0.3.1", "-o", str(tmp_path / "a"))
  assert rc == 2 and "for_jax='0.3.1': jax '0.3.1' is not in the release table" in err
  assert not (tmp_path / "a").exists()


def test_upgrading_for_a_release_lacking_a_target_is_refused_naming_both(table):
  table(facts(cpu_targets=CPU - {"lapack_spotrf_ffi"}))
  with pytest.raises(ExportError) as e:
    upgrade_envelope(_blob(), for_jax="0.9.2")
  assert "for jax 0.9.2: it calls custom-call target(s) that release cannot run" in str(e.value)
  assert "'lapack_spotrf_ffi'" in str(e.value)


def test_cli_upgrade_for_jax_rewrites_legacy_targets_then_retargets(tmp_path, capsys):
  entry = next(e for e in GoldenStore(ROOT / "compat_data").entries()
               if str(e.entry_id).startswith("cpu/lapack_geev/release_eig_f32/")
               and str(e.entry_id).endswith("_jax-0.4.30"))
  out = tmp_path / "eig.bin"
  rc, text, err = _run(capsys, "upgrade", str(entry.path), "--for-jax", "0.9.2", "-o", str(out),
                       "--json")
  assert rc == 0, err
  info = json.loads(text)
  assert info["rules_applied"] == ["geev"]
  assert info["for_jax"]["release"] == "0.9.2"
  exp = jaxport.deserialize(out.read_bytes())
  assert (_mlir.artifact_version(exp.mlir_module_serialized)
          == _table.release_facts("0.9.2").stablehlo_writes)
