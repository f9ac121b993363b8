"""Export with symbolic shapes: the wrapped main, dimension arguments, and calls at concrete shapes."""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.export import _checks

# The test-only lowerable ordered effect, registered once by its defining module.
from test_export_functions import ordered_effect

F32 = np.float32


def f(x, y):
  return jnp.sin(x) * jnp.sum(y)


def _export(module, spec, fun=f, platforms=None, extra=()):
  x = jax.ShapeDtypeStruct(module.symbolic_shape(spec), F32)
  return module.export(jax.jit(fun), platforms=platforms)(x, jax.ShapeDtypeStruct((3,), F32), *extra)


def _both(spec, **kw):
  return [_export(m, spec, **kw) for m in (jaxport, jax.export)]


def _func_lines(text):
  return [ln.strip() for ln in text.splitlines()
          if "func.func public @main(" in ln or "func.func private @_wrapped_jax_export_main(" in ln]


def _strip_locs(line):
  out, depth = [], 0
  i = 0
  while i < len(line):
    if depth == 0 and line.startswith(" loc(", i):
      depth, i = 1, i + 5
      continue
    if depth:
      depth += {"(": 1, ")": -1}.get(line[i], 0)
    else:
      out.append(line[i])
    i += 1
  return "".join(out)


def test_wrapped_main_takes_platform_index_then_dims_sorted_by_name():
  ours, theirs = _both("w, 2*h", platforms=("cpu", "cuda"))
  public, private = [_strip_locs(ln) for ln in _func_lines(ours.mlir_module())]
  assert public.startswith('func.func public @main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}, '
                           "%arg1: tensor<?x?xf32>, %arg2: tensor<3xf32>)")
  assert private.startswith("func.func private @_wrapped_jax_export_main("
                            '%arg0: tensor<i32> {jax.global_constant = "_platform_index"}, '
                            '%arg1: tensor<i32> {jax.global_constant = "h"}, '
                            '%arg2: tensor<i32> {jax.global_constant = "w"}, %arg3: tensor<?x?xf32>')
  assert [_strip_locs(ln) for ln in _func_lines(theirs.mlir_module())] == [public, private]


def test_record_matches_jax_and_needs_refinement():
  ours, theirs = _both("b, 4")
  assert [str(a) for a in ours.in_avals] == [str(a) for a in theirs.in_avals] == ["float32[b,4]", "float32[3]"]
  assert [str(a) for a in ours.out_avals] == ["float32[b,4]"]
  assert ours.uses_global_constants and theirs.uses_global_constants
  assert ours.module_kept_var_idx == theirs.module_kept_var_idx
  text = ours.mlir_module()
  assert "jax.uses_shape_polymorphism = true" in text
  assert "stablehlo.get_dimension_size %arg0, dim = 0" in text
  assert {s.target for s in _checks.list_custom_calls(ours.mlir_module_serialized)} == {"shape_assertion"}


def test_symbolic_export_keeps_unused_arguments():
  ours, theirs = [m.export(jax.jit(lambda x, unused: x * 2))(
      jax.ShapeDtypeStruct(m.symbolic_shape("n"), F32), jax.ShapeDtypeStruct((5,), F32))
      for m in (jaxport, jax.export)]
  assert ours.module_kept_var_idx == theirs.module_kept_var_idx == (0, 1)


@pytest.mark.parametrize("shape", [(2, 4), (7, 4)])
def test_calling_at_concrete_shapes_matches_jit(shape):
  exp = _export(jaxport, "b, 4")
  x = np.arange(np.prod(shape), dtype=F32).reshape(shape)
  y = np.array([0.5, 1.0, 1.5], F32)
  np.testing.assert_allclose(jaxport.call(exp)(x, y), jax.jit(f)(x, y), rtol=1e-6)


def test_ordered_effects_and_symbolic_shapes_together():
  exp = jaxport.export(jax.jit(ordered_effect))(jax.ShapeDtypeStruct(jaxport.symbolic_shape("n"), F32))
  public, private = [_strip_locs(ln) for ln in _func_lines(exp.mlir_module())]
  assert public.startswith("func.func public @main(%arg0: !stablehlo.token {jax.token = true}, "
                           "%arg1: tensor<?xf32>)")
  assert private.startswith("func.func private @_wrapped_jax_export_main("
                            '%arg0: tensor<i32> {jax.global_constant = "n"}, '
                            "%arg1: !stablehlo.token {jax.token = true}, %arg2: tensor<?xf32>")
  x = np.arange(5, dtype=F32)
  np.testing.assert_allclose(jaxport.call(exp)(x), jax.jit(ordered_effect)(x))


def test_vjp_of_a_symbolic_export():
  exp = _export(jaxport, "b, 4")
  vjp = exp.vjp()
  assert [str(a) for a in vjp.in_avals] == ["float32[b,4]", "float32[3]", "float32[b,4]"]
  assert vjp.uses_global_constants
  x = np.ones((3, 4), F32)
  y = np.arange(3, dtype=F32)
  grad = jax.grad(lambda x: jaxport.call(exp)(x, y).sum())(x)
  np.testing.assert_allclose(grad, np.cos(x) * y.sum(), rtol=1e-6)


def test_mixed_scopes_are_refused_before_tracing():
  a = jaxport.symbolic_shape("a")
  b = jaxport.symbolic_shape("a")  # a second, separate scope
  with pytest.raises(jaxport.ShapeError,
                     match=r"^Invalid mixing of symbolic scopes when exporting <lambda>.\n"
                           r"Expected current \(from args\[0\]\) scope .*\n"
                           r"and found for 'a' \(kwargs\['z'\]\) scope .*\n"
                           r"See https://docs.jax.dev/.*\n"
                           r"'a' in args\[0\].shape\[0\] and 'a' in kwargs\['z'\].shape\[0\] come "
                           r"from different jaxport.symbolic_shape calls.*symbolic_args_specs"):
    jaxport.export(jax.jit(lambda x, z: x + z))(
        jax.ShapeDtypeStruct(a, F32), z=jax.ShapeDtypeStruct(b, F32))
