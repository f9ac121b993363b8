"""Effects of the callee become effects of the call; ordered ones thread tokens."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _effect_helpers import OrderedTestEffect, UnorderedTestEffect, doubling_with

import jaxport

X = np.arange(4, dtype=np.float32)


def _with(*effs):
  doubled = doubling_with(*effs)

  def f(x):
    return jnp.sin(doubled(x))
  return f


@pytest.fixture(scope="module")
def both_exp(exporter):
  return exporter.export(jax.jit(_with(OrderedTestEffect(), UnorderedTestEffect())))(X)


def test_effects_of_the_callee_are_effects_of_the_call(both_exp):
  assert both_exp.ordered_effects == (OrderedTestEffect(),)
  assert both_exp.unordered_effects == (UnorderedTestEffect(),)
  jaxpr = jax.make_jaxpr(jaxport.call(both_exp))(X)
  assert jaxpr.effects == {OrderedTestEffect(), UnorderedTestEffect()}


def test_ordered_effect_threads_a_token_through_the_callee(both_exp):
  text = jax.jit(jaxport.call(both_exp)).lower(X).as_text()
  callee_sig = [line for line in text.splitlines()
                if "func.func private @call_exported_f(" in line]
  assert len(callee_sig) == 1 and "!stablehlo.token" in callee_sig[0]
  np.testing.assert_allclose(jax.jit(jaxport.call(both_exp))(X), np.sin(4 * X), rtol=1e-6)
  np.testing.assert_allclose(jaxport.call(both_exp)(X), np.sin(4 * X), rtol=1e-6)


def test_unordered_effect_alone_passes_no_token(exporter):
  e = exporter.export(jax.jit(_with(UnorderedTestEffect())))(X)
  assert e.ordered_effects == ()
  text = jax.jit(jaxport.call(e)).lower(X).as_text()
  assert "!stablehlo.token" not in text
  assert jax.make_jaxpr(jaxport.call(e))(X).effects == {UnorderedTestEffect()}
  np.testing.assert_allclose(jaxport.call(e)(X), np.sin(2 * X), rtol=1e-6)


def test_nested_export_keeps_the_callee_effects(both_exp, exporter):
  outer = exporter.export(jax.jit(lambda x: jaxport.call(both_exp)(x) + 1.0))(X)
  assert outer.ordered_effects == (OrderedTestEffect(),)
  assert outer.unordered_effects == (UnorderedTestEffect(),)
  np.testing.assert_allclose(outer.call(X), np.sin(4 * X) + 1.0, rtol=1e-6)
