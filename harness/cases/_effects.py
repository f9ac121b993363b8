"""An ordered effect and a primitive carrying it, so a case can export ordered effects.

jax exposes no public primitive with a serializable ordered effect (its ordered
callbacks are host callbacks, which export refuses), so the harness defines one.
This is the only harness module that touches jax internals for effects. Importing
it registers the effect type, which both readers need to deserialize the entry:
they look effect types up by class name.
"""

from __future__ import annotations

from jax._src import effects
from jax._src.interpreters import mlir
from jax.extend import core as jex_core
from jax.interpreters import ad


class HarnessOrderedEffect(effects.Effect):
  """An ordered effect with no payload: the call threads a token through ``main``."""

  __str__ = lambda self: "HarnessOrderedEffect"  # noqa: E731

  def __eq__(self, other):
    return type(other) is HarnessOrderedEffect

  def __hash__(self):
    return hash(HarnessOrderedEffect)


_EFFECT = HarnessOrderedEffect()
effects.lowerable_effects.add_type(HarnessOrderedEffect)
effects.ordered_effects.add_type(HarnessOrderedEffect)
effects.control_flow_allowed_effects.add_type(HarnessOrderedEffect)
effects.custom_derivatives_allowed_effects.add_type(HarnessOrderedEffect)

ordered_double_p = jex_core.Primitive("harness_ordered_double")
ordered_double_p.def_effectful_abstract_eval(lambda x: (x, {_EFFECT}))


def _lowering(ctx, x):
  ctx.set_tokens_out(mlir.TokenSet({_EFFECT: ctx.tokens_in.get(_EFFECT)}))
  return [mlir.hlo.add(x, x)]


mlir.register_lowering(ordered_double_p, _lowering)
ad.deflinear2(ordered_double_p, lambda ct, _: [ordered_double_p.bind(ct)])


def ordered_double(x):
  """``2 * x``, computed by an op with an ordered effect."""
  return ordered_double_p.bind(x)
