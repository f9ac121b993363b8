"""Parsing symbolic shape specifications, and jax's exact error messages."""

import re

import pytest

import jaxport
from jaxport.errors import ShapeError


def shape(spec, **kw):
  return tuple(str(d) for d in jaxport.symbolic_shape(spec, **kw))


@pytest.mark.parametrize("spec, expected", [
    ("b", ("b",)),
    ("(b, 4)", ("b", "4")),
    ("((b, 4))", ("b", "4")),
    ("b,", ("b",)),
    ("", ()),
    ("()", ()),
    ("2*b + a", ("2*b + a",)),
    ("-b + a", ("- b + a",)),
    ("+a - 3", ("a - 3",)),
    ("a^2*b - a", ("a^2*b - a",)),
    ("a * -2", ("- 2*a",)),
    ("2^3", ("8",)),
    ("mod(a, 4), floordiv(b + 1, 2)", ("mod(a, 4)", "floordiv(b + 1, 2)")),
    ("floordiv(4, 2)", ("floordiv(4, 2)",)),
    ("max(a, 1), max(a, 2), min(a, 1), max(2, a)", ("a", "max(a, 2)", "1", "max(2, a)")),
    ("1_000", ("1000",)),
])
def test_parses(spec, expected):
  assert shape(spec) == expected


def test_placeholders_take_sizes_from_like():
  assert shape("_, b", like=(3, None)) == ("3", "b")
  assert shape("b, ...", like=(None, 3, 4)) == ("b", "3", "4")
  assert shape(None, like=(2, 5)) == ("2", "5")
  assert shape("b, 3", like=(7, 3)) == ("b", "3")


@pytest.mark.parametrize("spec, like, message", [
    ("a + ", None, "syntax error in symbolic shape 'a + ' in dimension 0: expecting one of "
     "{NAME, MINUS, NUMBER} but found ENDMARKER. Parsed '', remaining ''."),
    ("2*(a+1)", None, "syntax error in symbolic shape '2*(a+1)' in dimension 0: expecting one of "
     "{NAME, MINUS, NUMBER} but found LPAR. Parsed '2*', remaining '(a+1)'."),
    ("a ** 2", None, "expecting one of {STAR} but found DOUBLESTAR. Parsed 'a ', remaining '** 2'."),
    ("a // 2", None, "expecting one of {STAR} but found DOUBLESLASH"),
    ("2.5", None, "expecting integer, found 2.5"),
    ("non_negative(a)", None, "expecting one of {STAR} but found LPAR"),
    ("..., 3", (1, 3), "in dimension 2: expecting one of {ENDMARKER} but found COMMA"),
    ("b, _", None, "spec contains ... but no 'like' shape was given"),
    ("_, _", (3,), "cannot resolve placeholder '_' because we parsed 1 already and 'like' "
     "shape has only 1 dimensions"),
    ("_", (None,), "unexpected placeholder for unknown dimension; like=(None,)"),
    ("3, b", (4, None), "syntax error in symbolic shape '3, b' in dimension 0: different size 3 "
     "for known dimension; like=(4, None). "),
    ("a b", None, "syntax error in symbolic shape 'a b' in dimension 0: expecting one of {STAR} "
     "but found NAME. Parsed 'a ', remaining 'b'."),
])
def test_syntax_errors(spec, like, message):
  with pytest.raises(ShapeError, match=re.escape(message)):
    jaxport.symbolic_shape(spec, like=like)


def test_unbalanced_parentheses_is_a_shape_error():
  with pytest.raises(ShapeError, match="unbalanced parentheses"):
    jaxport.symbolic_shape("(a, b")


def test_non_string_spec():
  with pytest.raises(ValueError, match=re.escape("polymorphic shape spec should be None or a string. Found 3.")):
    jaxport.symbolic_shape(3)


def test_scope_and_constraints_are_exclusive():
  scope = jaxport.SymbolicScope(["a >= 2"])
  with pytest.raises(ShapeError, match="both a `scope` and `constraints`"):
    jaxport.symbolic_shape("a", scope=scope, constraints=["a >= 3"])


def test_shapes_share_a_scope():
  scope = jaxport.SymbolicScope(["a >= b"])
  a, = jaxport.symbolic_shape("a", scope=scope)
  b, = jaxport.symbolic_shape("b", scope=scope)
  assert a >= b
  assert a.scope is scope


def test_is_symbolic_dim():
  a, four = jaxport.symbolic_shape("a, 4")
  assert jaxport.is_symbolic_dim(a)
  assert not jaxport.is_symbolic_dim(four)
  assert not jaxport.is_symbolic_dim(4)
