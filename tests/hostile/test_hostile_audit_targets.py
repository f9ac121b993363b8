"""Audit of a store entry judges custom-call stability from the module in exported.bin, not from
the manifest's list of targets: a manifest that hides a target is a golden data error."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest

import jaxport
from _build import REAL_ENTRIES, copy_entry, without_fields
from jaxport.cli import main
from jaxport.golden._manifest import MANIFEST_FILE, Manifest
from jaxport.golden._entry import sha256_hex

EVIL = "evil_unregistered_target"


def _evil_blob(allowed: bool) -> bytes:
  """A serialized export whose module calls ``EVIL``, a target no jaxlib registers; unless
  ``allowed``, without the disabled_safety_checks that let it be exported."""
  def fun(x):
    return jax.ffi.ffi_call(EVIL, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
  exp = jaxport.export(jax.jit(fun), platforms=("cpu",),
                       disabled_checks=[jaxport.DisabledSafetyCheck.custom_call(EVIL)])(
      jax.ShapeDtypeStruct((4,), np.float32))
  blob = bytes(exp.serialize())
  return blob if allowed else without_fields(blob, "disabled_checks")


def _forge(entry_path, blob: bytes) -> None:
  """Writes ``blob`` as the entry's exported.bin under a manifest that lists no targets, with
  the files' hashes and the digest made right (a careful forger)."""
  (entry_path / "exported.bin").write_bytes(blob)
  m = Manifest.from_json((entry_path / MANIFEST_FILE).read_text(), "test")
  files = {n: sha256_hex((entry_path / n).read_bytes()) for n in m.files}
  m = dataclasses.replace(m, files=files, custom_call_targets=())
  (entry_path / MANIFEST_FILE).write_text(m.to_json())


def _audit(capsys, *argv) -> tuple[int, list[dict]]:
  rc = main(["audit", *map(str, argv), "--json", "--no-drift"])
  out, _ = capsys.readouterr()
  return rc, json.loads(out)["artifacts"]


@pytest.mark.parametrize("allowed", [False, True], ids=["unallowed", "allowed"])
def test_a_manifest_hiding_a_target_is_a_golden_data_error(tmp_path, capsys, allowed):
  root = tmp_path / "store"
  entry = copy_entry(root, REAL_ENTRIES[0])
  blob = _evil_blob(allowed)
  _forge(entry.path, blob)
  entry.verify()  # the forgery passes the integrity check: only the targets lie

  rc, (art,) = _audit(capsys, root, "--compat-strict")
  assert rc == 1 and not art["ok"] and art["kind"] == "entry"
  (target,) = art["custom_call_targets"]
  assert target["target"] == EVIL and target["ok"] is allowed
  (err,) = art["golden_data_errors"]
  assert err["kind"] == "golden_data_error"
  assert err["manifest_targets"] == [] and err["module_targets"] == [EVIL]
  assert err["message"].startswith("manifest.json's custom_call_targets disagree with the "
                                   "module in exported.bin")
  assert EVIL in err["message"]
  unstable = [p for p in art["problems"] if p.startswith(f"target {EVIL} is not in the stable")]
  assert sorted(art["problems"]) == sorted(unstable + [err["message"]])
  assert len(unstable) == (not allowed)

  # The same bytes audited as a bare blob: unallowed, a problem of the target itself.
  bare = tmp_path / "evil.bin"
  bare.write_bytes(blob)
  rc, (art,) = _audit(capsys, bare, "--compat-strict")
  assert art["kind"] == "blob" and art["golden_data_errors"] == []
  assert [t["target"] for t in art["custom_call_targets"]] == [EVIL]
  assert (rc, art["ok"]) == ((0, True) if allowed else (1, False))
  assert any(EVIL in p for p in art["problems"]) is not allowed


def test_a_manifest_naming_a_target_the_module_lacks_is_a_golden_data_error(tmp_path, capsys):
  root = tmp_path / "store"
  entry = copy_entry(root, REAL_ENTRIES[0])
  m = entry.manifest
  (sig,) = {s.target: s for s in m.custom_call_targets}.values()
  forged = dataclasses.replace(sig, target="lapack_sgeqrf_ffi")
  (entry.path / MANIFEST_FILE).write_text(
      dataclasses.replace(m, custom_call_targets=(forged,)).to_json())
  rc, (art,) = _audit(capsys, root)
  assert rc == 1
  (err,) = art["golden_data_errors"]
  assert err["manifest_targets"] == ["lapack_sgeqrf_ffi"] and err["module_targets"] == [sig.target]
  assert [t["target"] for t in art["custom_call_targets"]] == [sig.target]


def test_real_entries_agree_with_their_modules(tmp_path, capsys):
  root = tmp_path / "store"
  for entry_id in REAL_ENTRIES:
    copy_entry(root, entry_id)
  rc, arts = _audit(capsys, root, "--today", "2026-12-01")
  assert all(a["golden_data_errors"] == [] for a in arts), arts
