"""Counterexamples found by the symbolic-shape fuzz suite (harness/test_fuzz_*.py).

Each test pins one shrunk counterexample. Where jaxport was wrong the test is
``xfail(strict=True)`` with the reason, so it turns into an unexpected pass,
and fails the run, on the day the bug is fixed: then drop the marker. Where
jax.export (the reference) crashes or answers unsoundly, the test checks that
jaxport answers correctly instead.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import jax
import jaxport
from jaxport._jaxcompat._errors import InconclusiveDimensionOperation  # jax.errors from jax 0.10.1

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from harness.fuzz.shape_trees import parse_dim_text  # noqa: E402  (the fuzz oracle's reader)


def _values(dim, names, grid=(1, 2, 3, 5, 11)):
  """The values of a jaxport dimension over a grid, by evaluating its printed form."""
  tree = parse_dim_text(str(dim))
  return [tree.evaluate(dict(zip(names, vs))) for vs in itertools.product(grid, repeat=len(names))]


def test_symbolic_args_specs_builds_shape_dtype_structs():
  # Once an AttributeError: it called jax.tree_util.broadcast_prefix, absent in jax 0.10.2.
  args = (np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32))
  specs = jaxport.symbolic_args_specs(args, ["b, 2*b + 1", "c, b"])
  assert [str(s.shape) for s in specs] == ["(b, 2*b + 1)", "(c, b)"]
  assert all(s.dtype == np.float32 for s in specs)


def test_symbolic_args_specs_accepts_a_list_of_specs_for_a_list_of_args():
  args = [jax.ShapeDtypeStruct((1,), np.float32), jax.ShapeDtypeStruct((1,), np.float32)]
  specs = jaxport.symbolic_args_specs(args, ["a", "b"])
  assert [str(s.shape) for s in specs] == ["(a,)", "(b,)"]


def test_an_even_power_is_known_to_be_non_negative():
  # Once inconclusive: the bounds of an even power of a factor that may be
  # negative were not >= 0 (jax.export decides it).
  scope = jaxport.SymbolicScope()
  square, = jaxport.symbolic_shape("max(- a, - a^2 + 2)^2", scope=scope)
  assert square >= 0


def test_max_with_a_dominating_operand_normalizes_like_jax():
  # Once jaxport kept max(a, a + x^2) where jax.export normalizes it to
  # x^2 + a, so the printed forms (and serialized shapes) differed.
  spec = "max(a, a + max(- a, - a*a - -2)^2)"
  ours, = jaxport.symbolic_shape(spec)
  theirs, = jax.export.symbolic_shape(spec)
  assert str(ours) == str(theirs)


@pytest.mark.parametrize("spec", [
    # jax.export: OverflowError (cannot convert float infinity to integer)
    "max(a, floordiv(a*a + a*a - a, 1)^2)",
    # jax.export: AssertionError in the decision procedure
    "max(a, a + mod(a, 1)*mod(a, - a))",
])
def test_specs_that_crash_jax_export_parse_to_the_right_values(spec):
  dim, = jaxport.symbolic_shape(spec)
  assert _values(dim, ["a"]) == [parse_dim_text(spec).evaluate({"a": v})
                                 for v in (1, 2, 3, 5, 11)]


def test_max_with_a_square_that_can_be_zero_keeps_both_operands():
  # jax.export normalizes this to 'a', which is 1 where the max is 2 (a == 1, b == 2).
  dim, = jaxport.symbolic_shape("max(a, - -2 - floordiv(b - 2, 1)^2)")
  assert _values(dim, ["a", "b"]) == [max(a, 2 - (b - 2) ** 2)
                                      for a, b in itertools.product((1, 2, 3, 5, 11), repeat=2)]


def test_a_square_that_can_be_zero_is_not_decided_positive():
  # jax.export answers False for 'floordiv(a - 2, 1)^2 <= 0', yet it holds at a == 2.
  scope = jaxport.SymbolicScope()
  dim, = jaxport.symbolic_shape("floordiv(a - 2, 1)^2", scope=scope)
  with pytest.raises(InconclusiveDimensionOperation):
    dim <= 0  # noqa: B015


def test_contradictory_constraints_are_refused_when_the_scope_is_built():
  # jax.export accepts this scope and refuses every call; jaxport refuses it at once.
  with pytest.raises(jaxport.ShapeError, match="Unsatisfiable constraint: a >= a \\+ a"):
    jaxport.SymbolicScope(["a >= a", "a >= a + a"])
