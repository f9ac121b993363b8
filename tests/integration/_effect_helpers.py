"""An ordered and an unordered test effect, and a primitive that doubles its input carrying one.

Shared by the call and serde tests. Importing this module registers both effect
types, which the readers need: they look effect types up by class name.
"""

from jax._src import core, effects
from jax._src.interpreters import mlir
from jax._src.lib.mlir.dialects import hlo


class OrderedTestEffect(effects.Effect):
  __str__ = lambda self: "OrderedTestEffect"  # noqa: E731
  __eq__ = lambda self, other: type(self) is type(other)  # noqa: E731
  __hash__ = lambda self: hash(type(self))  # noqa: E731


class UnorderedTestEffect(effects.Effect):
  __str__ = lambda self: "UnorderedTestEffect"  # noqa: E731
  __eq__ = lambda self, other: type(self) is type(other)  # noqa: E731
  __hash__ = lambda self: hash(type(self))  # noqa: E731


for _eff in (OrderedTestEffect, UnorderedTestEffect):
  effects.lowerable_effects.add_type(_eff)
  effects.control_flow_allowed_effects.add_type(_eff)
  effects.custom_derivatives_allowed_effects.add_type(_eff)
effects.ordered_effects.add_type(OrderedTestEffect)

doubling_p = core.Primitive("doubling_with_test_effect")
doubling_p.def_effectful_abstract_eval(lambda x, *, effect: (x, {effect}))
doubling_p.def_impl(lambda x, *, effect: x * 2)


def _doubling_lowering(ctx, x, *, effect):
  if effect in ctx.tokens_in.effects():
    ctx.set_tokens_out(ctx.tokens_in)
  return [hlo.add(x, x)]


mlir.register_lowering(doubling_p, _doubling_lowering)


def doubling_with(*effs):
  """``x -> 2**len(effs) * x`` through ``doubling_p`` once per effect."""
  def f(x):
    for eff in effs:
      x = doubling_p.bind(x, effect=eff)
    return x
  return f
