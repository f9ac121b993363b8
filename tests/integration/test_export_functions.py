"""jaxport.export on a suite of functions, compared with jax.export and with jax.jit.

For every function the public ``main`` of both modules must declare the same
signature and call the same custom-call targets; the exported function, called
through ``jaxport.call``, must compute what ``jax.jit`` computes.
"""

import functools
import re

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import core, effects
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import hlo

import jaxport
from jaxport.export import _checks
from jaxport._jaxcompat import _envelope as jax_envelope


# Test-only effects that lower to plain arithmetic and thread their token: jax's
# own ordered effects (debug printing, io_callback) lower to host callbacks,
# which export refuses.
class _TestEffect(effects.Effect):
  """Effects compare by type so exports and deserialized records agree."""

  def __eq__(self, other):
    return type(self) is type(other)

  def __hash__(self):
    return hash(type(self).__name__)

  def __repr__(self):
    return f"{type(self).__name__}()"


class OrderedEffect(_TestEffect):
  pass


class UnorderedEffect(_TestEffect):
  pass


for _t in (OrderedEffect, UnorderedEffect):
  effects.lowerable_effects.add_type(_t)
  effects.control_flow_allowed_effects.add_type(_t)
  effects.custom_derivatives_allowed_effects.add_type(_t)
effects.ordered_effects.add_type(OrderedEffect)


def _primitive(name, effect):
  prim = core.Primitive(name)
  prim.def_effectful_abstract_eval(lambda x: (x, {effect}))

  def lower(ctx, x):
    if effects.ordered_effects.contains(effect):
      ctx.set_tokens_out(mlir.TokenSet({effect: ctx.tokens_in.get(effect)}))
    return [hlo.add(x, x)]

  mlir.register_lowering(prim, lower)
  return prim


ordered_p = _primitive("jaxport_test_ordered", OrderedEffect())
unordered_p = _primitive("jaxport_test_unordered", UnorderedEffect())


F32 = np.float32
RNG = np.random.default_rng(0)


def _spd(n):
  a = RNG.standard_normal((n, n)).astype(F32)
  return a @ a.T + n * np.eye(n, dtype=F32)


def elementwise(x):
  return jnp.sin(x) * 2.0 + jnp.cos(x)


def mlp(params, x):
  for layer in params["layers"]:
    x = jnp.tanh(x @ layer["w"] + layer["b"])
  return {"out": x @ params["head"], "norm": jnp.sum(x * x)}


MLP_PARAMS = {
    "layers": [{"w": RNG.standard_normal((4, 8)).astype(F32), "b": np.zeros(8, F32)},
               {"w": RNG.standard_normal((8, 8)).astype(F32), "b": np.ones(8, F32)}],
    "head": RNG.standard_normal((8, 2)).astype(F32),
}


def with_kwargs(x, *, scale, shift):
  return x * scale + shift


def with_static(x, power, mode="sum"):
  y = x ** power
  return y.sum() if mode == "sum" else y.max()


def unused_middle(x, unused, z):
  return x + z


def cholesky(a):
  return jnp.linalg.cholesky(a)


def qr(a):
  return jnp.linalg.qr(a)


def eigh(a):
  return jnp.linalg.eigh(a)


def ffi_target(x):
  return jax.ffi.ffi_call("jaxport_test_unstable_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def platform_dependent(x):
  return lax.platform_dependent(x, cpu=jnp.sin, cuda=jnp.cos, tpu=jnp.tanh)


def ordered_effect(x):
  return ordered_p.bind(x) * 3.0


def nested(x):
  inner = jaxport.export(jax.jit(elementwise))(jax.ShapeDtypeStruct(x.shape, x.dtype))
  return jaxport.call(inner)(x) + 1.0


X4 = np.linspace(-1, 1, 4, dtype=F32)
SPD = _spd(3)

# name -> (function, jit options, export options, args, kwargs, runnable on cpu)
CASES = {
    "elementwise": (elementwise, {}, {}, (X4,), {}, True),
    "mlp": (mlp, {}, {}, (MLP_PARAMS, RNG.standard_normal((3, 4)).astype(F32)), {}, True),
    "kwargs": (with_kwargs, {}, {}, (X4,), {"scale": X4 + 2, "shift": np.float32(0.5)}, True),
    "static_argnums": (with_static, {"static_argnums": (1,)}, {}, (X4, 3), {}, True),
    "static_argnames": (with_static, {"static_argnames": ("mode",)}, {}, (X4, np.int32(2)),
                        {"mode": "max"}, True),
    "unused_arg": (unused_middle, {}, {}, (X4, np.ones(7, F32), X4), {}, True),
    "donation": (elementwise, {"donate_argnums": (0,)}, {}, (X4,), {}, True),
    "cholesky": (cholesky, {}, {}, (SPD,), {}, True),
    "qr": (qr, {}, {}, (RNG.standard_normal((4, 3)).astype(F32),), {}, True),
    "eigh": (eigh, {}, {}, (SPD,), {}, True),
    "ffi_allowed": (ffi_target, {},
                    {"disabled_checks": (jaxport.DisabledSafetyCheck.custom_call("jaxport_test_unstable_target"),)},
                    (X4,), {}, False),
    "multi_platform": (platform_dependent, {}, {"platforms": ("cpu", "cuda", "tpu")}, (X4,), {}, True),
    "ordered_effect": (ordered_effect, {}, {}, (X4,), {}, True),
    "ordered_effect_multi_platform": (ordered_effect, {}, {"platforms": ("cpu", "cuda")}, (X4,), {}, True),
    "ordered_effect_donation": (ordered_effect, {"donate_argnums": (0,)}, {}, (X4,), {}, True),
    "nested": (nested, {}, {}, (X4,), {}, True),
}


def _specs(tree):
  return jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), tree)


def _jax_disabled_checks(checks):
  return tuple(jax.export.DisabledSafetyCheck.custom_call(c.is_custom_call()) for c in checks)


def _export_both(name):
  fun, jit_opts, exp_opts, args, kwargs, _ = CASES[name]
  jitted = jax.jit(fun, **jit_opts)
  static = set(jit_opts.get("static_argnums", ()))
  arg_specs = tuple(a if i in static else _specs(a) for i, a in enumerate(args))
  kw_specs = {k: v if k in jit_opts.get("static_argnames", ()) else _specs(v) for k, v in kwargs.items()}
  jax_opts = dict(exp_opts)
  if "disabled_checks" in jax_opts:
    jax_opts["disabled_checks"] = _jax_disabled_checks(jax_opts["disabled_checks"])
  ours = jaxport.export(jitted, **exp_opts)(*arg_specs, **kw_specs)
  theirs = jax.export.export(jitted, **jax_opts)(*arg_specs, **kw_specs)
  return ours, theirs


@functools.cache
def exported_pair(name):
  return _export_both(name)


def _strip_locs(text):
  """Drop every ``loc(...)`` annotation, with balanced parentheses."""
  out, i = [], 0
  while True:
    j = text.find(" loc(", i)
    if j < 0:
      return "".join(out) + text[i:]
    out.append(text[i:j])
    depth, k = 0, j + 1
    while True:
      if text[k] == "(":
        depth += 1
      elif text[k] == ")":
        depth -= 1
        if depth == 0:
          break
      k += 1
    i = k + 1


def public_main_signature(module_text):
  (line,) = [ln for ln in module_text.splitlines() if "func.func public @main(" in ln]
  return _strip_locs(line.strip())


def module_attributes(module_text):
  (line,) = [ln for ln in module_text.splitlines() if ln.startswith("module @")]
  return line


def custom_call_targets(module_text):
  return set(re.findall(r"stablehlo\.custom_call @([\w.$]+)\(", module_text))


@pytest.mark.parametrize("name", sorted(CASES))
def test_public_main_and_custom_calls_match_jax(name):
  ours, theirs = exported_pair(name)
  ours_text, theirs_text = ours.mlir_module(), theirs.mlir_module()
  assert public_main_signature(ours_text) == public_main_signature(theirs_text)
  assert module_attributes(ours_text) == module_attributes(theirs_text)
  assert custom_call_targets(ours_text) == custom_call_targets(theirs_text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_record_fields_match_jax(name):
  ours, theirs = exported_pair(name)
  for field in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "nr_devices",
                "platforms", "ordered_effects", "unordered_effects", "module_kept_var_idx",
                "uses_global_constants", "calling_convention_version",
                "_in_named_shardings", "_out_named_shardings", "in_shardings_hlo", "out_shardings_hlo"):
    assert getattr(ours, field) == getattr(theirs, field), field
  # A field of jax's record up to jax 0.11.0, derived in jaxport's (and in jax's from 0.11.1).
  assert jax_envelope.has_named_shardings(ours) == jax_envelope.has_named_shardings(theirs)
  assert [str(c) for c in ours.disabled_safety_checks] == [str(c) for c in theirs.disabled_safety_checks]
  assert ours.mlir_module_serialized[:4] == b"ML\xefR"


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case[-1]))
def test_calling_the_export_matches_jit(name):
  fun, jit_opts, _, args, kwargs, _ = CASES[name]
  ours, _ = exported_pair(name)
  static = set(jit_opts.get("static_argnums", ()))
  dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
  dyn_kwargs = {k: v for k, v in kwargs.items() if k not in jit_opts.get("static_argnames", ())}
  expected = jax.jit(fun, **jit_opts)(*args, **kwargs)
  got = jaxport.call(ours)(*dyn_args, **dyn_kwargs)
  jax.tree.map(functools.partial(np.testing.assert_allclose, rtol=2e-5, atol=2e-5), got, expected)


def test_linalg_cases_call_their_lapack_targets():
  targets = {name: {s.target for s in _checks.list_custom_calls(exported_pair(name)[0].mlir_module_serialized)}
             for name in ("cholesky", "qr", "eigh")}
  assert targets == {"cholesky": {"lapack_spotrf_ffi"},
                     "qr": {"lapack_sgeqrf_ffi", "lapack_sorgqr_ffi"},
                     "eigh": {"lapack_ssyevd_ffi"}}


def test_static_args_are_not_in_the_tree():
  ours, _ = exported_pair("static_argnums")
  assert ours.in_tree == jax.tree.structure(((0,), {}))
  ours, _ = exported_pair("static_argnames")
  assert ours.in_tree == jax.tree.structure(((0, 0), {}))


def test_unused_argument_is_dropped_from_the_module():
  ours, _ = exported_pair("unused_arg")
  assert ours.module_kept_var_idx == (0, 2)
  assert len(ours.in_avals) == 3
  assert public_main_signature(ours.mlir_module()).count("%arg") == 2


def test_donation_becomes_an_aliasing_attribute():
  ours, _ = exported_pair("donation")
  assert "tf.aliasing_output = 0 : i32" in public_main_signature(ours.mlir_module())
  plain, _ = exported_pair("elementwise")
  assert "tf.aliasing_output" not in plain.mlir_module()


def test_multi_platform_adds_the_platform_index():
  ours, _ = exported_pair("multi_platform")
  sig = public_main_signature(ours.mlir_module())
  assert sig.startswith('func.func public @main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}, '
                        "%arg1: tensor<4xf32>)")
  assert ours.platforms == ("cpu", "cuda", "tpu")
  assert ours.uses_global_constants
  assert "jax.uses_shape_polymorphism = true" in module_attributes(ours.mlir_module())
  single, _ = exported_pair("elementwise")
  assert not single.uses_global_constants
  assert "jax.uses_shape_polymorphism = false" in module_attributes(single.mlir_module())


def test_platform_dependent_picks_the_cpu_branch():
  ours, _ = exported_pair("multi_platform")
  np.testing.assert_allclose(jaxport.call(ours)(X4), np.sin(X4), rtol=1e-6)


def test_ordered_effects_thread_tokens_through_a_wrapped_main():
  ours, _ = exported_pair("ordered_effect")
  text = ours.mlir_module()
  assert ours.ordered_effects == (OrderedEffect(),)
  assert ours.unordered_effects == ()
  assert public_main_signature(text) == (
      "func.func public @main(%arg0: !stablehlo.token {jax.token = true}, %arg1: tensor<4xf32>) -> "
      '(!stablehlo.token {jax.token = true}, tensor<4xf32> {jax.result_info = "result"}) {')
  assert "func.func private @_wrapped_jax_export_main(" in text
  assert not ours.uses_global_constants


def test_donation_survives_the_wrapper():
  ours, _ = exported_pair("ordered_effect_donation")
  assert public_main_signature(ours.mlir_module()).startswith(
      "func.func public @main(%arg0: !stablehlo.token {jax.token = true}, "
      "%arg1: tensor<4xf32> {tf.aliasing_output = 1 : i32})")


def test_ordered_effects_with_platforms_keep_the_index_first():
  ours, _ = exported_pair("ordered_effect_multi_platform")
  sig = public_main_signature(ours.mlir_module())
  assert sig.startswith('func.func public @main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}, '
                        "%arg1: !stablehlo.token {jax.token = true}, %arg2: tensor<4xf32>)")


def test_unordered_effects_are_recorded():
  ours = jaxport.export(jax.jit(lambda x: unordered_p.bind(x)))(X4)
  assert ours.unordered_effects == (UnorderedEffect(),)
  assert ours.ordered_effects == ()
  assert "_wrapped_jax_export_main" not in ours.mlir_module()


def test_nested_export_propagates_global_constants():
  inner = jaxport.export(jax.jit(platform_dependent), platforms=("cpu", "cuda"))(X4)
  outer = jaxport.export(jax.jit(lambda x: jaxport.call(inner)(x) * 2.0))(X4)
  assert outer.uses_global_constants
  np.testing.assert_allclose(jaxport.call(outer)(X4), 2 * np.sin(X4), rtol=1e-6)


def test_module_text_locations_do_not_point_into_jaxport():
  ours, _ = exported_pair("mlp")
  assert "jaxport/export" not in ours.mlir_module()
