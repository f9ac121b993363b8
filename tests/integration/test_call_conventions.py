"""Calling records of every calling convention version jax 0.10.2 calls (4 to 10), by jaxport and by jax.

Real modules only, never a newer module relabelled:
- versions 6, 7, 8: blobs serialized by jax 0.4.25 (``tests/data/calling_conventions``),
  exported for cpu and tpu with a symbolic dimension, so ``main`` takes a platform index;
- versions 6 and 7 on cpu, 4 and 5 (and 6) on tpu: datasets of jax's own back-compat
  corpus in the installed wheel, read without executing them and wrapped in a record the
  way jax's back-compat replay wraps them; the tpu ones are lowered here with the platform
  check disabled, as jax allows;
- versions 9 and 10: exported today.
"""

import dataclasses
import re
from pathlib import Path

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.corpus import _import, _jax_testdata
from jaxport.upgrades import upgrade_envelope

DATA = Path(__file__).parents[1] / "data" / "calling_conventions"
JAX_DATA = Path(jax.__file__).parent / "_src" / "internal_test_util" / "export_back_compat_test_data"
X = np.arange(12, dtype=np.float32).reshape(4, 3)


def _sin_sum(x):
  return jnp.sin(x) * 2, jnp.sum(x, axis=0)


def _assert_results(got, want):
  assert len(got) == len(want)
  for g, w in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


@pytest.mark.parametrize("version", [6, 7, 8])
def test_blobs_of_jax_0_4_25_run_alike_under_jaxport_and_jax(version):
  # jax 0.11.1 and newer refuse these envelopes as expired; the rewritten envelope keeps
  # the module and its calling convention (a no-op under older jax).
  blob = upgrade_envelope((DATA / f"sin_sum_v{version}.bin").read_bytes())
  ours, theirs = jaxport.deserialize(blob), jax.export.deserialize(blob)
  assert ours.calling_convention_version == theirs.calling_convention_version == version
  assert ours.platforms == ("cpu", "tpu")
  want = _sin_sum(X)
  _assert_results(jaxport.call(ours)(X), want)
  _assert_results(jax.jit(jaxport.call(ours))(X), want)
  _assert_results(theirs.call(X), want)


def test_a_version_6_record_called_inside_an_export_makes_a_version_10_record():
  old = jaxport.deserialize(upgrade_envelope((DATA / "sin_sum_v6.bin").read_bytes()))
  spec = jax.ShapeDtypeStruct(jaxport.symbolic_shape("n, 3"), np.float32)
  outer = jaxport.export(jax.jit(lambda x: jaxport.call(old)(x + 1)))(spec)
  assert outer.calling_convention_version == jaxport.maximum_supported_calling_convention_version
  _assert_results(jaxport.deserialize(outer.serialize()).call(X), _sin_sum(X + 1))


def _dataset(file: str, variable: str) -> _jax_testdata.Dataset:
  datasets, _ = _jax_testdata.read_file(JAX_DATA / file)
  (ds,) = [d for d in datasets if d.variable == variable]
  return ds


def _records(ds: _jax_testdata.Dataset, specs: tuple[str, ...] | None, *,
             platform_check: bool = True):
  """A jaxport record and a jax record around the dataset's module, as jax's replay builds them."""
  ours = _import.build_exported(ds, fun_name="f")
  fields = {f.name: getattr(ours, f.name) for f in dataclasses.fields(jax.export.Exported)}
  theirs_in = ours.in_avals
  if specs is not None:
    scope, jax_scope = jaxport.SymbolicScope(), jax.export.SymbolicScope()
    ours = dataclasses.replace(ours, uses_global_constants=True, in_avals=tuple(
        a.update(shape=jaxport.symbolic_shape(s, scope=scope))
        for a, s in zip(ours.in_avals, specs)))
    theirs_in = tuple(a.update(shape=jax.export.symbolic_shape(s, scope=jax_scope))
                      for a, s in zip(ours.in_avals, specs))
  fields.update(in_avals=theirs_in, uses_global_constants=ours.uses_global_constants)
  if not platform_check:
    ours = dataclasses.replace(ours, disabled_safety_checks=(jaxport.DisabledSafetyCheck.platform(),))
    fields["disabled_safety_checks"] = (jax.export.DisabledSafetyCheck.platform(),)
  return ours, jax.export.Exported(**fields)


CPU_DATASETS = [
    ("stablehlo_dynamic_top_k.py", "data_2023_07_16", 6, ("4, b",)),
    ("stablehlo_dynamic_top_k.py", "data_2023_08_11", 7, ("4, b",)),
    ("stablehlo_dynamic_rng_bit_generator.py", "data_2023_06_17", 6, ("4", "b0, b1")),
]


@pytest.mark.parametrize("file, variable, version, specs", CPU_DATASETS,
                         ids=[f"v{c[2]}-{c[0][:-3]}" for c in CPU_DATASETS])
def test_cpu_datasets_of_jaxs_corpus_run_alike_under_jaxport_and_jax(file, variable, version, specs):
  ds = _dataset(file, variable)
  assert ds.fields["xla_call_module_version"] == version
  ours, theirs = _records(ds, specs)
  inputs, want = ds.fields["inputs"], ds.fields["expected_outputs"]
  got_ours = jax.jit(jaxport.call(ours))(*inputs)
  got_theirs = jax.jit(theirs.call)(*inputs)
  for a, b in zip(got_ours, got_theirs):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  _assert_results(got_ours, want)


TPU_DATASETS = [
    ("tpu_ApproxTopK.py", "data_2023_04_17", 4, None),
    ("tpu_Eigh.py", "data", 4, None),
    ("tpu_Lu.py", "data_2023_03_21", 4, None),
    ("tpu_Qr.py", "data_2023_03_17", 4, None),
    ("tpu_ApproxTopK.py", "data_2023_05_16", 5, None),
    ("tpu_stablehlo_dynamic_reduce_window.py", "data_unary_2023_06_17", 6, ("b, 4",)),
]
_TARGET_RE = re.compile(r"stablehlo\.custom_call @([\w.]+)")


@pytest.mark.parametrize("file, variable, version, specs", TPU_DATASETS,
                         ids=[f"v{c[2]}-{c[0][:-3]}-{c[1]}" for c in TPU_DATASETS])
def test_tpu_datasets_of_jaxs_corpus_lower_alike_with_the_platform_check_disabled(
    file, variable, version, specs):
  ds = _dataset(file, variable)
  assert ds.fields["xla_call_module_version"] == version
  inputs = ds.fields["inputs"]
  ours, theirs = _records(ds, specs)
  with pytest.raises(jaxport.CallError, match=r"^Function 'f' was exported for platforms "
                     r"'\('tpu',\)' but it is used on '\('cpu',\)'"):
    jax.jit(jaxport.call(ours)).lower(*inputs)
  with pytest.raises(ValueError, match="was exported for platforms"):
    jax.jit(theirs.call).lower(*inputs)
  ours, theirs = _records(ds, specs, platform_check=False)
  text_ours = jax.jit(jaxport.call(ours)).lower(*inputs).as_text()
  text_theirs = jax.jit(theirs.call).lower(*inputs).as_text()
  assert sorted(_TARGET_RE.findall(text_ours)) == sorted(_TARGET_RE.findall(text_theirs))
  assert set(ds.fields["custom_call_targets"]) <= set(_TARGET_RE.findall(text_ours))


@pytest.mark.parametrize("version", [9, 10])
def test_records_exported_today_at_versions_9_and_10_run(version):
  old = jax.config.jax_export_calling_convention_version
  jax.config.update("jax_export_calling_convention_version", version)
  try:
    exp = jaxport.export(jax.jit(_sin_sum), platforms=("cpu", "tpu"))(
        jax.ShapeDtypeStruct(jaxport.symbolic_shape("b, 3"), np.float32))
  finally:
    jax.config.update("jax_export_calling_convention_version", old)
  assert exp.calling_convention_version == version
  _assert_results(jaxport.deserialize(exp.serialize()).call(X), _sin_sum(X))
  _assert_results(jax.export.deserialize(exp.serialize()).call(X), _sin_sum(X))
