"""Whether a traced function holds a custom derivative rule (``jax.custom_vjp`` or
``jax.custom_jvp``) anywhere in its jaxpr, nested jaxprs (``jit``, ``cond``, ``scan``...)
included: the harness records the gradients of such a function by default, since a changed
rule leaves the function's own module as it was.

The primitives those decorators bind and the walk into nested jaxprs are jax internals, read
here only.
"""

from __future__ import annotations

from typing import Any

from jax._src import core, custom_derivatives

# The kind of rule each primitive carries, by the primitive's name (the names are what the
# supported releases print in a jaxpr; the objects are looked up where they exist).
_KIND_BY_NAME = {"custom_vjp_call": "custom_vjp", "custom_vjp_call_jaxpr": "custom_vjp",
                 "custom_jvp_call": "custom_jvp", "custom_jvp_call_jaxpr": "custom_jvp"}
_KIND_BY_PRIMITIVE = {
    p: _KIND_BY_NAME[p.name]
    for p in (getattr(custom_derivatives, f"{name}_p", None) for name in _KIND_BY_NAME)
    if p is not None}


def custom_rule_kinds(jaxpr: Any) -> frozenset[str]:
  """The kinds of custom derivative rule (``"custom_vjp"``, ``"custom_jvp"``) bound anywhere
  in ``jaxpr`` (a ``ClosedJaxpr`` as ``jax.make_jaxpr`` returns, or a ``Jaxpr``)."""
  found: set[str] = set()
  pending = [getattr(jaxpr, "jaxpr", jaxpr)]
  seen: set[int] = set()
  while pending:
    current = pending.pop()
    if id(current) in seen:
      continue
    seen.add(id(current))
    for eqn in current.eqns:
      kind = _KIND_BY_PRIMITIVE.get(eqn.primitive) or _KIND_BY_NAME.get(eqn.primitive.name)
      if kind is not None:
        found.add(kind)
    pending.extend(core.subjaxprs(current))
  return frozenset(found)
