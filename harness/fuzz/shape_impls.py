"""The implementations of symbolic shapes under test (``jax.export`` as the reference and
``jaxport``) behind one small adapter, what their errors say, and exporting and calling a
spec case, including running a serialized module with only its own ``shape_assertion``
checks.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harness.fuzz.shape_trees import Env
from harness.fuzz.strategies import SpecCase

if TYPE_CHECKING:
  from jaxport.harness._worker._replacement import Replacement


# ---------------------------------------------------------------------------
# Implementations under test
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShapesImpl:
  """One implementation of the public symbolic-shape API: ``jax.export`` or ``jaxport``."""
  name: str
  load: Callable[[], Any]

  @property
  def api(self) -> Any:
    return self.load()

  def scope(self, constraints: Sequence[str] = ()) -> Any:
    return self.api.SymbolicScope(list(constraints))

  def parse(self, spec: str, scope: Any = None, like: Any = None) -> tuple[Any, ...]:
    return self.api.symbolic_shape(spec, scope=scope, like=like)

  def args_specs(self, case: SpecCase, scope: Any, dtype: Any = "float32") -> list[Any]:
    """One ShapeDtypeStruct per argument of ``case``, all in ``scope``, by ``symbolic_args_specs``."""
    import jax
    like = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape in case.like_shapes())
    return list(self.api.symbolic_args_specs(like, case.spec_strings(), scope=scope))

  def export(self, fun_jit: Callable[..., Any], specs: Sequence[Any]) -> Any:
    return self.api.export(fun_jit)(*specs)

  def is_symbolic_dim(self, d: Any) -> bool:
    return self.api.is_symbolic_dim(d)

  def __repr__(self) -> str:
    return self.name


def _load_jax() -> Any:
  from jax import export
  return export


def _load_jaxport() -> Any:
  import jaxport
  return jaxport


JAX = ShapesImpl("jax.export", _load_jax)
JAXPORT = ShapesImpl("jaxport", _load_jaxport)
IMPLS = (JAX, JAXPORT)


def is_inconclusive(e: BaseException) -> bool:
  """True for either implementation's InconclusiveDimensionOperation."""
  return any(c.__name__ == "InconclusiveDimensionOperation" for c in type(e).__mro__)


def error_chain_text(e: BaseException) -> str:
  """The messages of ``e`` and its causes, for errors re-raised by compilation."""
  out, seen = [], set()
  cur: BaseException | None = e
  while cur is not None and id(cur) not in seen:
    seen.add(id(cur))
    out.append(str(cur))
    cur = cur.__cause__ or cur.__context__
  return "\n".join(out)


SHAPE_ASSERTION_PREFIXES = (
    "Input shapes do not match the polymorphic shapes specification.",
    "Input shapes do not match the symbolic shape constraint",
)

_INCONSISTENT = re.compile(
    r"Found inconsistency between dimension size (args|kwargs)\[(\d+)\]\.shape\[(\d+)\] "
    r"\(= (-?\d+)\) and the specification '([^']*)' \(= (-?\d+)\)")
_REMAINDER = re.compile(r"Division had remainder (-?\d+) when computing the value of '(\w+)'")
_VAR_GE_1 = re.compile(r"Expected value >= 1 for dimension variable '(\w+)'")
_CONSTRAINT = re.compile(
    r"Input shapes do not match the symbolic shape constraint (.*?)\. Expected '(.*?)' to be "
    r"(greater or equal to|equal to) 0, but found (-?\d+)")


def explain_shape_assertion(message: str, shapes: Sequence[Sequence[int]],
                            env: Env) -> str | None:
  """Checks that a shape-assertion message names something that is really violated.

  Returns None when the message is one of the documented forms and its
  numbers agree with ``shapes`` (and, for constraints and variables, with
  ``env``, the values the concrete sizes were built from); otherwise a
  sentence saying what is wrong with it.
  """
  if not any(p in message for p in SHAPE_ASSERTION_PREFIXES):
    return f"not a documented shape-assertion message: {message[:300]!r}"
  if m := _INCONSISTENT.search(message):
    i, j, got, want = int(m[2]), int(m[3]), int(m[4]), int(m[6])
    if m[1] == "args" and (i >= len(shapes) or j >= len(shapes[i])):
      return f"names args[{i}].shape[{j}], which does not exist"
    if m[1] == "args" and shapes[i][j] != got:
      return f"says args[{i}].shape[{j}] is {got} but it is {shapes[i][j]}"
    if got == want:
      return f"reports an inconsistency between equal sizes {got}"
    return None
  if m := _REMAINDER.search(message):
    return None if int(m[1]) != 0 else "reports a division remainder of 0"
  if m := _VAR_GE_1.search(message):
    return None  # the solved value depends on the solve order; the form is documented
  if m := _CONSTRAINT.search(message):
    try:
      value = int(m[4])
    except ValueError:
      return f"constraint message without a value: {message[:200]!r}"
    if m[3].startswith("greater") and value >= 0:
      return f"reports a >= constraint as violated with difference {value} >= 0"
    if m[3].startswith("equal") and value == 0:
      return "reports an == constraint as violated with difference 0"
    return None
  return f"message of an undocumented form: {message[:300]!r}"


def assertion_kind(message: str) -> str:
  """The kind of a shape error: ``inconsistency``, ``remainder``, ``variable``,
  ``constraint``, ``unsolvable``, ``unsatisfiable`` or ``other``."""
  for kind, pattern in (("inconsistency", _INCONSISTENT), ("remainder", _REMAINDER),
                        ("variable", _VAR_GE_1), ("constraint", _CONSTRAINT)):
    if pattern.search(message):
      return kind
  if "Cannot solve for values of dimension variables" in message:
    return "unsolvable"
  if "nsatisfiable" in message:
    return "unsatisfiable"
  return "other"


def spec_summary(case: SpecCase, env: Env | None = None,
                 shapes: Iterable[Sequence[int]] | None = None) -> str:
  """A few lines that reproduce a case by hand, for ``hypothesis.note``."""
  lines = [f"specs = {case.spec_strings()!r}",
           f"constraints = {case.constraints.strings()!r}",
           f"like shapes = {case.like_shapes()!r}"]
  if env is not None:
    lines.append(f"values = {dict(env)!r}")
  if shapes is not None:
    lines.append(f"concrete shapes = {[tuple(s) for s in shapes]!r}")
  return "\n".join(lines)


# ---------------------------------------------------------------------------
# Exporting and calling a spec case
# ---------------------------------------------------------------------------

def probe_function(dims: Sequence[Any]) -> Callable[..., Any]:
  """A function returning ``dims`` as int32 values and a weighted sum of its arguments.

  Exported with the symbolic variables as ``dims``, it reports the values the
  module solved; jitted with ints, it is the reference result.
  """
  import jax.numpy as jnp

  def probe(*args):
    values = (jnp.stack([jnp.asarray(d, jnp.int32) for d in dims]) if dims
              else jnp.zeros((0,), jnp.int32))
    total = jnp.zeros((), jnp.float32)
    for i, x in enumerate(args):
      total = total + (i + 1) * jnp.sum(jnp.sin(x))
    return values, total
  return probe


def solved_names(case: SpecCase) -> list[str]:
  return [n for n in case.names if n not in case.unsolvable]


def export_case(impl: ShapesImpl, case: SpecCase) -> Any:
  """Exports :func:`probe_function` over ``case``'s variables with ``impl``."""
  import jax
  scope = impl.scope(case.constraints.strings())
  specs = impl.args_specs(case, scope)
  names = solved_names(case)
  dims = impl.parse(", ".join(names), scope=scope) if names else ()
  return impl.export(jax.jit(probe_function(dims)), specs)


def concrete_args(shapes: Sequence[Sequence[int]]) -> list[Any]:
  import numpy as np
  return [(np.arange(int(np.prod(s)), dtype=np.float32) * 0.01).reshape(s) for s in shapes]


def reference_result(case: SpecCase, env: Env, shapes: Sequence[Sequence[int]]) -> Any:
  """``jax.jit`` of the probe with the values of ``env`` in place of the variables."""
  import jax
  return jax.jit(probe_function([env[n] for n in solved_names(case)]))(*concrete_args(shapes))


def call_through_module(exported: Any, args: Sequence[Any]) -> Any:
  """Runs ``exported``'s serialized module with the caller's static shape check turned off.

  The blob is read back by ``jax.export.deserialize`` and called under
  ``jax.jit`` while jax's static discharge of the shape constraints is a
  no-op, so only the ``shape_assertion`` calls in the module (evaluated by
  shape refinement at compile time) can refuse the shapes.
  """
  import jax
  import pytest
  no_check = static_check_off()
  if not no_check.on():
    # Called with jax's check on, the module's own assertions would go untested: fail (a
    # pytest outcome, which the callers' ``except Exception`` does not take for a refusal).
    pytest.fail(f"cannot run a module with only its own shape_assertion checks: "
                f"{no_check.status.reason}", pytrace=False)
  try:
    reread = jax.export.deserialize(exported.serialize())
    return jax.jit(reread.call)(*args)
  finally:
    no_check.off()


# The signatures of jax's ``ShapeConstraints.check_statically`` that turning it off was
# written for: one, the same in each release from jax 0.9.2 to 0.12.0.1 (0.9.2,
# 0.10.0-0.10.2, 0.11.0-0.11.2, 0.12.0, 0.12.0.1).
CHECK_STATICALLY_SIGNATURES = ("(self, eval)",)


def _no_static_check(self: Any, eval: Any) -> None:  # noqa: A002  (jax's parameter name)
  """jax's static discharge of the shape constraints, doing nothing."""


@functools.cache
def static_check_off() -> Replacement:
  """The :class:`jaxport.harness._worker._replacement.Replacement` that turns jax's static shape
  check off while on (made on first use: this module imports jax lazily)."""
  from jax._src.export import shape_poly
  from jaxport.harness._worker._replacement import Replacement
  return Replacement(shape_poly.ShapeConstraints, "check_statically", _no_static_check,
                     written_for=CHECK_STATICALLY_SIGNATURES,
                     what="the static shape check bypass")


# Exceptions that are internal crashes, not answers: the reference has a few
# (see tests/regression/test_shape_regressions.py); jaxport must have none.
INTERNAL_CRASHES = (AssertionError, OverflowError, ZeroDivisionError, TypeError, IndexError,
                    KeyError, AttributeError, RecursionError)
