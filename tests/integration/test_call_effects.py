"""Effects of the callee become effects of the call; ordered ones thread tokens."""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core, effects
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import hlo

import jaxport


class OrderedForCallTest(effects.Effect):
  __str__ = lambda self: "OrderedForCallTest"
  __eq__ = lambda self, other: type(self) is type(other)
  __hash__ = lambda self: hash(type(self))


class UnorderedForCallTest(effects.Effect):
  __str__ = lambda self: "UnorderedForCallTest"
  __eq__ = lambda self, other: type(self) is type(other)
  __hash__ = lambda self: hash(type(self))


for _eff in (OrderedForCallTest, UnorderedForCallTest):
  effects.lowerable_effects.add_type(_eff)
  effects.control_flow_allowed_effects.add_type(_eff)
  effects.custom_derivatives_allowed_effects.add_type(_eff)
effects.ordered_effects.add_type(OrderedForCallTest)

_doubling_p = core.Primitive("doubling_with_effect_for_call_test")
_doubling_p.def_effectful_abstract_eval(lambda x, *, effect: (x, {effect}))
_doubling_p.def_impl(lambda x, *, effect: x * 2)


def _doubling_lowering(ctx, x, *, effect):
  if effect in ctx.tokens_in.effects():
    ctx.set_tokens_out(ctx.tokens_in)
  return [hlo.add(x, x)]


mlir.register_lowering(_doubling_p, _doubling_lowering)

X = np.arange(4, dtype=np.float32)


def _with(*effs):
  def f(x):
    for eff in effs:
      x = _doubling_p.bind(x, effect=eff)
    return jnp.sin(x)
  return f


EXPORTERS = {"jax": jax.export.export, "jaxport": jaxport.export}


@pytest.fixture(scope="module", params=sorted(EXPORTERS))
def export(request):
  return EXPORTERS[request.param]


@pytest.fixture(scope="module")
def both_exp(export):
  return export(jax.jit(_with(OrderedForCallTest(), UnorderedForCallTest())))(X)


def test_effects_of_the_callee_are_effects_of_the_call(both_exp):
  assert both_exp.ordered_effects == (OrderedForCallTest(),)
  assert both_exp.unordered_effects == (UnorderedForCallTest(),)
  jaxpr = jax.make_jaxpr(jaxport.call(both_exp))(X)
  assert jaxpr.effects == {OrderedForCallTest(), UnorderedForCallTest()}


def test_ordered_effect_threads_a_token_through_the_callee(both_exp):
  text = jax.jit(jaxport.call(both_exp)).lower(X).as_text()
  callee_sig = [line for line in text.splitlines()
                if "func.func private @call_exported_f(" in line]
  assert len(callee_sig) == 1 and "!stablehlo.token" in callee_sig[0]
  np.testing.assert_allclose(jax.jit(jaxport.call(both_exp))(X), np.sin(4 * X), rtol=1e-6)
  np.testing.assert_allclose(jaxport.call(both_exp)(X), np.sin(4 * X), rtol=1e-6)


def test_unordered_effect_alone_passes_no_token(export):
  e = export(jax.jit(_with(UnorderedForCallTest())))(X)
  assert e.ordered_effects == ()
  text = jax.jit(jaxport.call(e)).lower(X).as_text()
  assert "!stablehlo.token" not in text
  assert jax.make_jaxpr(jaxport.call(e))(X).effects == {UnorderedForCallTest()}
  np.testing.assert_allclose(jaxport.call(e)(X), np.sin(2 * X), rtol=1e-6)


def test_nested_export_keeps_the_callee_effects(both_exp, export):
  outer = export(jax.jit(lambda x: jaxport.call(both_exp)(x) + 1.0))(X)
  assert outer.ordered_effects == (OrderedForCallTest(),)
  assert outer.unordered_effects == (UnorderedForCallTest(),)
  np.testing.assert_allclose(outer.call(X), np.sin(4 * X) + 1.0, rtol=1e-6)
