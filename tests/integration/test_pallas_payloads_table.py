"""``tools/pallas_payloads.py``: a Pallas kernel's payload changed in its code is named with the
operations that differ; the same kernel installed elsewhere is the same payload; the command
prints a row per case and release pair of a store."""

from __future__ import annotations

import shutil
import types

import json

import jax
import pytest
import numpy as np

from _harness_paths import ROOT

import jaxport  # noqa: E402
from jaxport.golden import _signatures  # noqa: E402
from tools import pallas_payloads  # noqa: E402

_KERNEL = '''
import jax
from jax.experimental import pallas as pl

def kernel(x_ref, o_ref):
  o_ref[...] = x_ref[...] * 2.0{extra}

def doubled(x):
  return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''


def _payload(file_name: str, extra: str = ""):
  """The payload of a small kernel whose module lies at ``file_name``."""
  module = types.ModuleType("planted_kernel")
  exec(compile(_KERNEL.format(extra=extra), file_name, "exec"), module.__dict__)  # noqa: S102
  x = np.ones((8, 128), np.float32)
  exp = jaxport.export(jax.jit(module.doubled), platforms=("tpu",))(x)
  [payload] = pallas_payloads.payloads_of(_signatures.signatures(exp.mlir_module_serialized))
  return payload


@pytest.mark.usefixtures("full_source_file_names")
def test_a_planted_change_is_named_and_another_install_path_is_not_a_change():
  here = _payload("/venv-a/lib/python3.11/site-packages/kernels/doubled.py")
  moved = _payload("/opt/venv-b/lib/python3.13/site-packages/kernels/doubled.py")
  planted = _payload("/venv-a/lib/python3.11/site-packages/kernels/doubled.py", " + 1.0")
  assert here.kernel == "kernel" and here.text and "site-packages" not in here.text
  # The bytecode holds the path (of another length here), its text without locations does not.
  assert here.bytecode_size != moved.bytecode_size
  same = pallas_payloads.compare(here, moved)
  assert not same.changed and same.how() == "same"
  changed = pallas_payloads.compare(here, planted)
  assert changed.changed
  assert "arith.addf 0→1" in changed.how() and "bytes" in changed.how()


def test_the_command_prints_a_row_per_case_and_release_pair(tmp_path, capsys):
  case = "tpu_lowering_kernel_threefry_bits"
  source = ROOT / "compat_data" / "cpu" / "lowering_tpu_kernels" / case
  entries = sorted(p.name for p in source.iterdir())
  assert len(entries) >= 2
  for name in entries:
    shutil.copytree(source / name, tmp_path / "cpu" / "lowering_tpu_kernels" / case / name)
  assert pallas_payloads.main(["--store", str(tmp_path), "--json"]) == 0
  rows = json.loads(capsys.readouterr().out)
  releases = sorted({r["releases"][0] for r in rows} | {r["releases"][1] for r in rows})
  assert len(rows) == len(entries) - 1 and len(releases) == len(entries)
  assert all(r["case"] == case and r["kernel"] == "kernel" for r in rows)
