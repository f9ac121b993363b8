"""Custom derivative rules are found anywhere in a function's jaxpr: at its top, inside a
nested ``jit``, a ``cond`` branch or a ``scan`` body; a function without one has none."""

import jax
import jax.numpy as jnp
import pytest

from jaxport._jaxcompat._custom_rules import custom_rule_kinds


@jax.custom_vjp
def soft(x):
  return jnp.sin(x)


soft.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))


@jax.custom_jvp
def smooth(x):
  return jnp.tanh(x)


smooth.defjvp(lambda p, t: (jnp.tanh(p[0]), t[0] * (1 - jnp.tanh(p[0]) ** 2)))


def _in_scan(x):
  return jax.lax.scan(lambda c, v: (c + smooth(v), None), 0.0, x)[0]


FUNCTIONS = {
    "plain": (lambda x: jnp.sin(x) * 2, frozenset()),
    "custom_vjp at the top": (soft, {"custom_vjp"}),
    "custom_jvp at the top": (smooth, {"custom_jvp"}),
    "custom_vjp in a nested jit": (lambda x: jax.jit(lambda y: soft(y) + 1)(x), {"custom_vjp"}),
    "custom_vjp in a cond branch": (
        lambda x: jax.lax.cond(x[0] > 0, soft, lambda y: y, x), {"custom_vjp"}),
    "custom_jvp in a scan body": (_in_scan, {"custom_jvp"}),
    "both": (lambda x: soft(x) + smooth(x), {"custom_vjp", "custom_jvp"}),
    "jax.nn.relu (a custom_jvp of jax's own)": (jax.nn.relu, {"custom_jvp"}),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_custom_rules_are_found_wherever_the_jaxpr_holds_them(name):
  fun, kinds = FUNCTIONS[name]
  jaxpr = jax.make_jaxpr(fun)(jnp.ones(3, jnp.float32))
  assert custom_rule_kinds(jaxpr) == frozenset(kinds)
  assert custom_rule_kinds(jaxpr.jaxpr) == frozenset(kinds)
