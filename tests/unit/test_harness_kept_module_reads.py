"""What a replay reads from recorded module bytes is kept beside the cross-run compile cache and
taken from there by a later run, unless the file is not one of its own for that module; a run
without a cross-run cache keeps nothing."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.harness._worker import _kept_reads, _module_reads


@pytest.fixture(scope="module")
def module() -> bytes:
  exp = jaxport.export(jax.jit(lambda x: jnp.linalg.qr(x)[0] + 1.0), platforms=("cpu",))(
      jax.ShapeDtypeStruct((3, 3), np.float32))
  return bytes(exp.mlir_module_serialized)


@pytest.fixture
def kept_in(tmp_path, monkeypatch):
  monkeypatch.setattr(_kept_reads, "_kept", None)
  _kept_reads.keep_across_runs_in(tmp_path)
  return tmp_path / _kept_reads.FOLDER_NAME


def _next_run(kept_in) -> _module_reads.ModuleReads:
  """The reads of a later run: a new process remembers none of this one's."""
  _kept_reads.keep_across_runs_in(kept_in.parent)
  return _module_reads.ModuleReads()


def _no_parse(monkeypatch):
  def refuse(module):
    raise AssertionError("the module was parsed again")
  monkeypatch.setitem(_kept_reads._READERS, _kept_reads.SIGNATURES, refuse)
  monkeypatch.setitem(_kept_reads._READERS, _kept_reads.VIEW, refuse)


def test_a_later_run_takes_the_reads_an_earlier_one_kept(module, kept_in, monkeypatch):
  first = _module_reads.ModuleReads()
  sigs, digest, donations = (first.signatures(module), first.text_digest(module),
                             first.donations(module))
  assert sigs and len(digest) == 64  # QR calls LAPACK on the CPU
  assert len(list(kept_in.iterdir())) == 2
  _no_parse(monkeypatch)
  later = _next_run(kept_in)
  assert (later.signatures(module), later.text_digest(module), later.donations(module)) == (
      sigs, digest, donations)


def test_a_kept_file_not_of_its_module_or_format_is_read_again_and_rewritten(module, kept_in,
                                                                             monkeypatch):
  expected = _module_reads.ModuleReads().signatures(module)
  (path,) = [p for p in kept_in.iterdir()]
  kept = json.loads(path.read_text())
  for tampered in ({**kept, "digest": "0" * 64}, {**kept, "format": 99},
                   {**kept, "value": [{"target": 1}]}, [kept]):
    path.write_text(json.dumps(tampered))
    assert _next_run(kept_in).signatures(module) == expected
    assert json.loads(path.read_text()) == kept
  # Another jaxlib (or another version of the reading code) does not take it at all.
  _kept_reads._reader_stamp.cache_clear()
  monkeypatch.setattr(_kept_reads, "installed_jaxlib_version", lambda: "0.0.1")
  try:
    _next_run(kept_in).signatures(module)
    assert len(list(kept_in.iterdir())) == 2
  finally:
    _kept_reads._reader_stamp.cache_clear()


def test_a_run_reads_each_kept_file_once(module, kept_in, monkeypatch):
  sigs = _module_reads.ModuleReads().signatures(module)
  later = _next_run(kept_in)
  opened: list[object] = []
  read_kept = _kept_reads.read_kept
  monkeypatch.setattr(_kept_reads, "read_kept",
                      lambda path, *args: opened.append(path) or read_kept(path, *args))
  _no_parse(monkeypatch)
  assert later.signatures(module) == sigs
  assert len(opened) == 1
  # Another entry of the run handing over the same bytes takes what the first one read.
  for path in kept_in.iterdir():
    path.unlink()
  assert _module_reads.ModuleReads().signatures(module) == sigs
  assert len(opened) == 1


def test_without_a_cross_run_cache_nothing_is_kept(module, tmp_path, monkeypatch):
  monkeypatch.setattr(_kept_reads, "_kept", None)
  _kept_reads.keep_across_runs_in(None)
  _module_reads.ModuleReads().signatures(module)
  assert not list(tmp_path.iterdir())
