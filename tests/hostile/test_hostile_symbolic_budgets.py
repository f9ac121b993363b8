"""Symbolic shapes that cost too much work are refused by a named budget, never hang.

Each hostile input runs in a child process whose 30 s limit is only a backstop: it either
finishes or is refused with a ``ShapeError`` naming a ``jaxport._limits`` budget. What jax
accepts quickly (60 chained equalities, max nested 60 deep in 30 dimensions) is accepted
with jax's answers.
"""

from __future__ import annotations

import functools
import operator
import subprocess
import textwrap

import jax
import jax.export
import pytest

import jaxport
from jaxport import _limits
from jaxport.errors import ShapeError

from _python_child import run_python
from _symbolic_inputs import blob_of_shape, chained, nested_max

BACKSTOP_S = 30


def _run_child(code: str) -> str:
  """Runs ``code`` in a child process under the backstop; returns its last stdout line."""
  script = textwrap.dedent("""
      import sys
      import jaxport
      from jaxport.errors import JaxportError
      def outcome(fn):
        try:
          print("DONE", fn())
        except JaxportError as e:
          print("REFUSED", type(e).__name__, str(e).replace("\\n", " "))
      """) + textwrap.dedent(code)
  try:
    done = run_python(script, timeout=BACKSTOP_S)
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"the hostile input ran past the {BACKSTOP_S} s backstop: it hangs. "
                f"Its stderr:\n{e.stderr}")
  assert done.returncode == 0, done.stderr[-3000:]
  return done.stdout.strip().splitlines()[-1]


def _finished_or_refused(line: str, budget: str) -> None:
  if line.startswith("DONE"):
    return
  assert line.startswith("REFUSED"), line
  assert f"jaxport._limits.{budget} = " in line, line


HOSTILE = {
    "a comparison in 60 chained equalities that jax cannot decide": ("MAX_DECISION_STEPS", """
        cons = [f"a{i} == a{i + 1} + 1" for i in range(60)]
        dims = jaxport.symbolic_shape(",".join(f"a{i}" for i in range(61)),
                                      scope=jaxport.SymbolicScope(cons))
        outcome(lambda: dims[0] >= dims[-1])
        """),
    "a product of 9,000 variables in a spec": ("MAX_SPEC_WORK", """
        import itertools, string
        names = [n for n in map("".join, itertools.product(string.ascii_lowercase, repeat=3))
                 if n not in ("max", "min", "mod")][:9000]
        outcome(lambda: jaxport.symbolic_shape("*".join(names))[0] >= 1)
        """),
    "a product of 9,000 dimensions multiplied one by one": ("MAX_PRODUCT_TERMS", """
        import functools, operator
        dims = jaxport.symbolic_shape(",".join(f"v{i}" for i in range(9000)))
        outcome(lambda: len(str(functools.reduce(operator.mul, dims))))
        """),
    "a product of two sums of 1,000 terms": ("MAX_PRODUCT_TERMS", """
        s = " + ".join(f"v{i}" for i in range(1000))
        outcome(lambda: jaxport.symbolic_shape(f"max({s}, 0) * max({s}, 1)"))
        """),
    "a product of 7,000 sums": ("MAX_SPEC_WORK", """
        outcome(lambda: jaxport.symbolic_shape("*".join(["max(a + 1, 0)"] * 7000)))
        """),
    "a comparison of a sum of 5,000 variables": ("MAX_DECISION_STEPS", """
        d, = jaxport.symbolic_shape(" + ".join(f"v{i}" for i in range(5000)))
        outcome(lambda: d >= 1)
        """),
}


# 150 chained equalities and max nested 60 deep over distinct variables in 30 dimensions are
# refused by their own tests below, which also say which budget refuses them.
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_costly_symbolic_input_finishes_or_is_refused_naming_its_budget(name):
  budget, code = HOSTILE[name]
  _finished_or_refused(_run_child(code), budget)


def test_chained_equalities_past_the_budget_are_refused_naming_it():
  line = _run_child("""
      cons = [f"a{i} == a{i + 1} + 1" for i in range(150)]
      outcome(lambda: jaxport.SymbolicScope(cons))
      """)
  assert line.startswith("REFUSED ShapeError"), line
  assert "jaxport._limits.MAX_DECISION_STEPS = " in line and "150 explicit constraints" in line


def test_max_nested_over_distinct_variables_past_the_budget_is_refused_naming_it():
  line = _run_child("""
      def nested(i):
        e = f"a{i}"
        for j in range(60):
          e = f"max({e}, v{i}_{j})" if j % 2 else f"max(v{i}_{j}, {e})"
        return e
      outcome(lambda: jaxport.symbolic_shape(",".join(nested(i) for i in range(30))))
      """)
  assert line.startswith("REFUSED ShapeError"), line
  assert "jaxport._limits.MAX_SPEC_WORK = " in line


def test_sixty_chained_equalities_are_accepted_with_jax_exports_answers():
  names = ",".join(f"a{i}" for i in range(61))
  ours = jaxport.symbolic_shape(names, scope=jaxport.SymbolicScope(chained(60)))
  theirs = jax.export.symbolic_shape(names, scope=jax.export.SymbolicScope(chained(60)))
  assert [str(d) for d in ours] == [str(d) for d in theirs]
  assert str(ours[0]) == "a1 + 1" and str(ours[-1]) == "a60"
  # The comparisons jax decides in this scope (others exhaust its recursion).
  for i, k in ((60, 1), (59, 2), (58, 3)):
    assert (ours[i] >= k) is (theirs[i] >= k) is True
  for i, j in ((59, 60), (58, 60), (60, 59)):
    assert (ours[i] >= ours[j]) is (theirs[i] >= theirs[j])
    ours_max, = jaxport.symbolic_shape(f"max(a{i}, a{j})", scope=ours[0].scope)
    theirs_max, = jax.export.symbolic_shape(f"max(a{i}, a{j})", scope=theirs[0].scope)
    assert str(ours_max) == str(theirs_max)
  assert (ours[60] >= ours[59]) is False


def test_max_nested_sixty_deep_in_thirty_dims_is_accepted_with_jax_exports_answers():
  spec = ",".join(nested_max(i, 60, distinct=False) for i in range(30))
  ours = jaxport.symbolic_shape(spec)
  theirs = jax.export.symbolic_shape(spec)
  assert [str(d) for d in ours] == [str(d) for d in theirs]
  for d, e in zip(ours, theirs):
    assert (d >= 1) is (e >= 1) is True
  # Every neighbouring pair is compared and joined by max within the budget; jax.export's
  # answers, which take it seconds a pair, are asked for at both ends and in the middle.
  answers = [_outcome(lambda: d1 >= d2) for d1, d2 in zip(ours, ours[1:])]
  assert set(answers) <= {"True", "False", "inconclusive"}, answers
  joined = [str(jaxport.symbolic_shape(f"max({d1}, {d2})", scope=d1.scope)[0])
            for d1, d2 in zip(ours, ours[1:])]
  for i in (0, len(ours) // 2, len(ours) - 2):
    e1, e2 = theirs[i], theirs[i + 1]
    assert answers[i] == _outcome(lambda: e1 >= e2), i
    assert joined[i] == str(jax.export.symbolic_shape(f"max({e1}, {e2})", scope=e1.scope)[0]), i


def _outcome(compare) -> str:
  try:
    return str(compare())
  except jax.errors.InconclusiveDimensionOperation:
    return "inconclusive"


def test_products_and_sums_parsed_in_one_pass_equal_left_to_right_arithmetic():
  scope = jaxport.SymbolicScope()
  dims = jaxport.symbolic_shape(", ".join(f"v{i}" for i in range(300)) + ", max(v1 + 2, v2)",
                                scope=scope)
  by_hand = functools.reduce(operator.mul, dims[:300]) * dims[300] * 3
  parsed, = jaxport.symbolic_shape(
      "*".join(f"v{i}" for i in reversed(range(300))) + "*max(v1 + 2, v2)*3", scope=scope)
  assert parsed == by_hand and str(parsed) == str(by_hand)
  total = functools.reduce(operator.add, dims[:300]) - 2 * dims[7] + 5
  parsed, = jaxport.symbolic_shape(
      " + ".join(f"v{i}" for i in range(300)) + " - 2*v7 + 5", scope=scope)
  assert parsed == total and str(parsed) == str(total)


def test_one_multiplication_past_the_product_budget_is_refused_naming_it():
  s = " + ".join(f"v{i}" for i in range(400))
  d, e = jaxport.symbolic_shape(f"{s}, {s} + w")
  with pytest.raises(ShapeError, match=r"400 and 401 terms .*jaxport\._limits\.MAX_PRODUCT_TERMS"):
    d * e


# The budgets a blob refused by one is read under: a tenth of the defaults. The tests above
# show what the defaults bound on the same inputs; these show that reading a blob spends its
# work against the budgets and is refused naming one, in a tenth of the time.
TENTH_OF_THE_BUDGETS = {name: getattr(_limits, name) // 10
                        for name in ("MAX_DECISION_STEPS", "MAX_SPEC_WORK")}


def _deserialize_in_child(blob: bytes, tmp_path, budgets: dict[str, int] | None = None) -> str:
  path = tmp_path / "hostile.bin"
  path.write_bytes(blob)
  return _run_child(f"""
      from jaxport import _limits
      for name, value in {budgets or {}!r}.items():
        setattr(_limits, name, value)
      data = open({str(path)!r}, "rb").read()
      outcome(lambda: jaxport.deserialize(data).in_avals[0].shape[0])
      """)


def test_a_blob_with_150_chained_equalities_is_refused_naming_the_budget(tmp_path):
  blob = blob_of_shape([f"a{i}" for i in range(151)], chained(150))
  line = _deserialize_in_child(blob, tmp_path, TENTH_OF_THE_BUDGETS)
  assert line.startswith("REFUSED DeserializationError"), line
  assert "symbolic_constraints" in line and "jaxport._limits.MAX_DECISION_STEPS = " in line


def test_a_blob_with_60_chained_equalities_is_read(tmp_path):
  blob = blob_of_shape([f"a{i}" for i in range(61)], chained(60))
  assert _deserialize_in_child(blob, tmp_path) == "DONE a1 + 1"


def test_a_blob_with_30_dims_nested_max_over_distinct_variables_is_refused_naming_the_budget(
    tmp_path):
  blob = blob_of_shape([nested_max(i, 60, distinct=True) for i in range(30)], [])
  line = _deserialize_in_child(blob, tmp_path, TENTH_OF_THE_BUDGETS)
  assert line.startswith("REFUSED DeserializationError"), line
  assert "jaxport._limits.MAX_SPEC_WORK = " in line


def test_a_blob_with_30_dims_nested_max_60_deep_is_read_as_jax_reads_it():
  dims = [nested_max(i, 60, distinct=False) for i in range(30)]
  blob = blob_of_shape(dims, [])
  ours = jaxport.deserialize(blob).in_avals[0].shape
  theirs = jax.export.deserialize(bytearray(blob)).in_avals[0].shape
  assert [str(d) for d in ours] == [str(d) for d in theirs]
