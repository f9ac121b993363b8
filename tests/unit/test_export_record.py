"""export() refusals, configuration and the record it builds, against jax.export."""

import dataclasses

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

X = np.arange(4, dtype=np.float32)


def f(x, y, *, z):
  return {"a": jnp.sin(x) * z, "b": (y.astype(jnp.int32) + 1,)}


ARGS = (X, np.ones((2, 3), np.float32))
KWARGS = {"z": X}


def _export_with(module, fun, **opts):
  return module.export(jax.jit(fun), **opts)(*ARGS, **KWARGS)


def _export_both(fun, **opts):
  # One source line for both, so the source locations in the modules agree.
  return [_export_with(module, fun, **opts) for module in (jaxport, jax.export)]


@pytest.fixture
def calling_convention():
  old = jax.config.jax_export_calling_convention_version
  yield lambda v: jax.config.update("jax_export_calling_convention_version", v)
  jax.config.update("jax_export_calling_convention_version", old)


def test_record_equals_jaxs_field_by_field_and_byte_for_byte():
  ours, theirs = _export_both(f)
  for field in dataclasses.fields(jax.export.Exported):
    if field.name in ("_get_vjp", "disabled_safety_checks"):
      continue
    assert getattr(ours, field.name) == getattr(theirs, field.name), field.name
  assert ours.mlir_module_serialized.startswith(b"ML\xefR\rStableHLO_v")
  # jax 0.11.1 dropped the field _has_named_shardings, as jaxport's record does;
  # on older jax the first loop compared it with jaxport's derived property.
  assert [f.name for f in dataclasses.fields(ours)] == [
      f.name for f in dataclasses.fields(theirs) if f.name != "_has_named_shardings"]


def test_record_is_built_with_every_keyword_jax_exported_takes():
  # jax 0.11.0's Exported takes _has_named_shardings (its back-compat util passes it); the
  # record takes what the installed jax's takes, and that keyword on every release.
  theirs = _export_with(jax.export, f)
  fields = {f.name: getattr(theirs, f.name) for f in dataclasses.fields(jax.export.Exported)}
  fields.pop("_has_named_shardings", None)
  built = jaxport.Exported(**fields)
  assert built._has_named_shardings
  declared = jaxport.Exported(**fields, _has_named_shardings=False)
  assert not declared._has_named_shardings and declared.fun_name == "f"
  assert dataclasses.replace(declared, fun_name="g").fun_name == "g"


def test_record_basics():
  exp = _export_with(jaxport, f)
  assert exp.fun_name == "f"
  assert exp.in_tree == jax.tree.structure((ARGS, KWARGS))
  assert exp.out_tree == jax.tree.structure({"a": 0, "b": (0,)})
  assert [str(a) for a in exp.out_avals] == ["float32[4]", "int32[2,3]"]
  assert exp.platforms == ("cpu",)
  assert exp.nr_devices == 1
  assert exp.calling_convention_version == 10
  assert exp.in_shardings_hlo == (None, None, None)
  assert exp.out_shardings_hlo == (None, None)
  assert exp._has_named_shardings
  assert exp.has_vjp()
  assert str(exp) == "Exported(fun_name=f, ...)"


def test_non_jit_functions_are_refused_with_jaxs_message():
  with pytest.raises(jaxport.ExportError,
                     match=r"^Function to be exported must be the result of `jit` but is: <function f at .*jax\.jit\(f\)"):
    jaxport.export(f)


def test_platforms_must_be_a_sequence_of_names():
  with pytest.raises(jaxport.ExportError, match=r"got the string 'cpu'; write platforms=\('cpu',\)"):
    jaxport.export(jax.jit(jnp.sin), platforms="cpu")
  with pytest.raises(jaxport.ExportError, match=r"at least one platform, got \(\)"):
    jaxport.export(jax.jit(jnp.sin), platforms=[])


def test_platforms_are_stored_as_given():
  exp = jaxport.export(jax.jit(jnp.sin), platforms=["tpu"])(X)
  assert exp.platforms == ("tpu",)
  assert not exp.uses_global_constants


def test_default_export_platform_matches_jax():
  assert jaxport.default_export_platform() == jax.export.default_export_platform() == "cpu"


def test_calling_convention_9_is_recorded(calling_convention):
  calling_convention(9)
  ours, theirs = _export_both(f)
  assert ours.calling_convention_version == theirs.calling_convention_version == 9
  assert ours.mlir_module_serialized == theirs.mlir_module_serialized


@pytest.mark.parametrize("version", [8, 11])
def test_calling_convention_out_of_range_is_refused(calling_convention, version):
  calling_convention(version)
  with pytest.raises(jaxport.ExportError,
                     match=rf"^The requested export calling convention version {version} is outside "
                           r"the range of supported versions \[9\.\.10\]"):
    _export_with(jaxport, f)


def test_export_is_deferred_until_specs_are_given():
  calls = []

  def g(x):
    calls.append(x)
    return x

  do_export = jaxport.export(jax.jit(g))
  assert calls == []
  do_export(jax.ShapeDtypeStruct((2,), jnp.float32))
  assert len(calls) == 1


def test_module_keeps_only_used_arguments():
  exp = jaxport.export(jax.jit(lambda a, b, c: c * 2))(X, X, X)
  assert exp.module_kept_var_idx == (2,)
  assert exp._in_named_shardings == (None, None, None)
