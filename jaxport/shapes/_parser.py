"""Parsing symbolic shape specifications such as ``"(b, 2*h + 1, ...)"``.

Grammar (tokens as in Python)::

  shape  := '(' shape ')' | [ dim (',' dim)* [','] ] [ '...' ]
  dim    := '_' | expr
  expr   := ['+'|'-'] term (('+'|'-') term)*
  term   := factor ['^' INT] ('*' factor ['^' INT])*
  factor := NAME | ('mod'|'floordiv'|'max'|'min') '(' expr ',' expr ')' | ['-'] INT

``_`` and ``...`` take their sizes from a ``like`` shape. Error messages are
the ones jax gives, so users see the same text from either implementation.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence
from typing import Any

from jaxport import _limits
from jaxport.errors import ShapeError
from jaxport.shapes._budget import exponent_too_large, parsing
from jaxport.shapes._expr import DimExpr, DimSize, dim_max, dim_min, product, total
from jaxport.shapes._terms import MAX, MIN, OPERATIONS

_ENDMARKER = tokenize.ENDMARKER
_RPAR = tokenize.RPAR
_COMMA = tokenize.COMMA
_PLUS = tokenize.PLUS
_MINUS = tokenize.MINUS
_SKIPPED = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL)
_END_OF_SHAPE = (_ENDMARKER, _RPAR)
_END_OF_EXPR = (_ENDMARKER, _RPAR, _COMMA)
_END_OF_TERM = (_ENDMARKER, _RPAR, _COMMA, _PLUS, _MINUS)

# Specs made only of these characters are tokenized by a single regular
# expression built from tokenize's own patterns (same tokens, much faster);
# anything else goes through the tokenize module.
_SIMPLE_SPEC = re.compile(r"[A-Za-z0-9_ ,()+\-*^.]*\Z")
_PSEUDO_TOKEN = re.compile(r"[ ]*(?:(?P<number>" + tokenize.Number + r")|(?P<op>"
                           + tokenize.Special + r")|(?P<name>" + tokenize.Name + r"))")


_SHOWN_CHARS = 200


def _clip(text: str, tail: bool = False) -> str:
  """``text`` shortened for a message (hostile specs can be long); whole when short."""
  if len(text) <= _SHOWN_CHARS:
    return text
  return "..." + text[-_SHOWN_CHARS:] if tail else text[:_SHOWN_CHARS] + "..."


class _Token:
  """The fields of ``tokenize.TokenInfo`` that the parser reads."""

  __slots__ = ("exact_type", "string", "start", "line")

  def __init__(self, exact_type: int, string: str, col: int, line: str):
    self.exact_type = exact_type
    self.string = string
    self.start = (1, col)
    self.line = line


class _Unbalanced:
  """Stands for tokenize's "EOF in multi-line statement" error."""


def _fast_tokens(spec: str) -> list | None:
  """The tokens of a spec made of simple characters, or None to use tokenize."""
  tokens: list = [_Token(tokenize.ENCODING, "utf-8", 0, "")]
  pos, depth = 0, 0
  while True:
    m = _PSEUDO_TOKEN.match(spec, pos)
    if m is None:
      break
    number, op, name = m.group("number", "op", "name")
    if number is not None:
      # A number run into a digit, letter or "_" ("01", "0_", "3a") tokenizes differently
      # from one Python to the next (3.12's tokenizer is another): leave it to tokenize.
      follow = spec[m.end():m.end() + 1]
      if follow and (follow.isalnum() or follow == "_"):
        return None
      tokens.append(_Token(tokenize.NUMBER, number, m.start("number"), spec))
    elif op is not None:
      kind = tokenize.EXACT_TOKEN_TYPES[op]
      depth += 1 if kind == tokenize.LPAR else -1 if kind == tokenize.RPAR else 0
      if depth < 0:  # a ")" before its "(": Pythons tokenize this differently
        return None
      tokens.append(_Token(kind, op, m.start("op"), spec))
    else:
      tokens.append(_Token(tokenize.NAME, name, m.start("name"), spec))
    pos = m.end()
  if spec[pos:].strip(" "):
    return None
  if depth != 0:
    tokens.append(_Unbalanced())
  tokens.append(_Token(tokenize.ENDMARKER, "", 0, ""))
  return tokens


class ShapeParser:
  """Parses one specification into a tuple of ints and DimExprs of ``scope``."""

  def __init__(self, spec: str, like: Sequence[int | None] | None, spec_repr: str, scope: Any):
    self.spec = spec
    self.spec_repr = spec_repr
    self.like = None if like is None else tuple(like)
    self.scope = scope
    self.dims: list[DimSize | None] = []
    self._tokens: Any = None
    self._nesting = 0

  def parse(self) -> tuple[DimSize, ...]:
    if len(self.spec) > _limits.MAX_SPEC_CHARS:
      raise ShapeError(
          f"symbolic shape spec of {len(self.spec)} characters exceeds the limit "
          f"{_limits.name('MAX_SPEC_CHARS')}; it starts {self.spec[:40]!r}.")
    fast = _fast_tokens(self.spec) if _SIMPLE_SPEC.match(self.spec) else None
    if fast is not None:
      self._tokens = iter(fast)
    else:
      self._tokens = tokenize.tokenize(io.BytesIO(self.spec.encode("utf-8")).readline)
    with parsing(self.scope._parse_meter):
      tok = self._advance()
      tok = self._consume(tok, tokenize.ENCODING)
      tok = self._shape(tok)
    self._expect(tok, (_ENDMARKER,))
    return tuple(self.dims)  # type: ignore[arg-type]

  # ---- errors -------------------------------------------------------------

  def error(self, tok: tokenize.TokenInfo | None, detail: str) -> ShapeError:
    msg = (f"syntax error in symbolic shape {_clip(self.spec_repr)} "
           f"in dimension {len(self.dims)}: {detail}. ")
    if tok is not None:
      col = tok.start[1]
      msg += f"Parsed '{_clip(tok.line[:col], tail=True)}', remaining '{_clip(tok.line[col:])}'."
    return ShapeError(msg)

  # ---- tokens -------------------------------------------------------------

  def _advance(self) -> tokenize.TokenInfo:
    try:
      for tok in self._tokens:
        if isinstance(tok, _Unbalanced):
          raise tokenize.TokenError("EOF in multi-line statement")
        if tok.exact_type not in _SKIPPED:
          return tok
    except tokenize.TokenError as e:
      raise self.error(None, f"unbalanced parentheses or unexpected end of string ({e.args[0]})") from None
    raise self.error(None, "unexpected end of string")

  def _expect(self, tok: tokenize.TokenInfo, expected: Sequence[int]) -> None:
    if tok.exact_type not in expected:
      names = ", ".join(tokenize.tok_name[t] for t in expected)
      raise self.error(tok, f"expecting one of {{{names}}} but found {tokenize.tok_name[tok.exact_type]}")

  def _consume(self, tok: tokenize.TokenInfo, expected: int) -> tokenize.TokenInfo:
    self._expect(tok, (expected,))
    return self._advance()

  def _integer(self, tok: tokenize.TokenInfo) -> tuple[int, tokenize.TokenInfo]:
    self._expect(tok, (tokenize.NUMBER,))
    try:
      value = int(tok.string)
    except ValueError:
      raise self.error(tok, f"expecting integer, found {tok.string}") from None
    return value, self._advance()

  # ---- grammar ------------------------------------------------------------

  def _add_dim(self, d: DimSize | None, tok: tokenize.TokenInfo) -> None:
    if d is None:
      raise self.error(tok, f"unexpected placeholder for unknown dimension; like={self.like}")
    if self.like is not None and not isinstance(d, DimExpr):
      idx = len(self.dims)
      if idx >= len(self.like):
        raise self.error(tok, f"the spec has more dimensions than the 'like' shape; like={self.like}")
      known = self.like[idx]
      if known is not None and d != known:
        raise self.error(tok, f"different size {d} for known dimension; like={self.like}")
    self.dims.append(d)

  def _check_placeholder(self, tok: tokenize.TokenInfo) -> None:
    if self.like is None:
      raise self.error(tok, "spec contains ... but no 'like' shape was given")
    needed = len(self.dims) + (0 if tok.exact_type == tokenize.ELLIPSIS else 1)
    if len(self.like) < needed:
      raise self.error(tok, f"cannot resolve placeholder '{tok.string}' because we parsed "
                            f"{len(self.dims)} already and 'like' shape has "
                            f"only {len(self.like)} dimensions")

  def _nest(self, tok: tokenize.TokenInfo) -> None:
    """Enters one level of parentheses or operation; the parser recurses per level."""
    self._nesting += 1
    if self._nesting > _limits.MAX_SPEC_NESTING:
      raise self.error(tok, f"parentheses and operations nest deeper than the limit "
                            f"{_limits.name('MAX_SPEC_NESTING')}")

  def _shape(self, tok: tokenize.TokenInfo) -> tokenize.TokenInfo:
    if tok.exact_type == tokenize.LPAR:
      self._nest(tok)
      tok = self._shape(self._advance())
      self._nesting -= 1
      return self._consume(tok, _RPAR)
    while tok.exact_type not in _END_OF_SHAPE:
      is_ellipsis = tok.exact_type == tokenize.ELLIPSIS
      is_underscore = tok.exact_type == tokenize.NAME and tok.string == "_"
      if is_ellipsis or is_underscore:
        self._check_placeholder(tok)
      if is_ellipsis:
        for d in self.like[len(self.dims):]:  # type: ignore[index]
          self._add_dim(d, tok)
        return self._advance()
      if is_underscore:
        d = self.like[len(self.dims)]  # type: ignore[index]
        tok = self._advance()
      else:
        d, tok = self._expr(tok)
      self._add_dim(d, tok)
      if tok.exact_type in _END_OF_SHAPE:
        break
      tok = self._consume(tok, _COMMA)
    return tok

  def _expr(self, tok: tokenize.TokenInfo) -> tuple[DimSize, tokenize.TokenInfo]:
    negate = tok.exact_type == _MINUS
    if tok.exact_type in (_PLUS, _MINUS):
      tok = self._advance()
    parts: list[DimSize] = []
    while True:
      t, tok = self._term(tok)
      parts.append(-t if negate else t)
      if tok.exact_type in _END_OF_EXPR:
        return total(parts, self.scope), tok
      negate = tok.exact_type == _MINUS
      self._expect(tok, (_PLUS, _MINUS))
      tok = self._advance()

  def _term(self, tok: tokenize.TokenInfo) -> tuple[DimSize, tokenize.TokenInfo]:
    factors: list[DimSize] = []
    while True:
      f, tok = self._factor(tok)
      if tok.exact_type == tokenize.CIRCUMFLEX:
        tok = self._advance()
        self._expect(tok, (tokenize.NUMBER,))
        power_tok = tok
        power, tok = self._integer(tok)
        if power > _limits.MAX_DIM_EXPONENT:
          raise self.error(power_tok, str(exponent_too_large(str(f), power)).rstrip("."))
        f = f ** power
      factors.append(f)
      if tok.exact_type in _END_OF_TERM:
        return product(factors, self.scope), tok
      tok = self._consume(tok, tokenize.STAR)

  def _factor(self, tok: tokenize.TokenInfo) -> tuple[DimSize, tokenize.TokenInfo]:
    if tok.exact_type == tokenize.NAME:
      if tok.string in OPERATIONS:
        return self._operation(tok.string, self._advance())
      return DimExpr.from_var(tok.string, self.scope), self._advance()
    sign = 1
    if tok.exact_type == _MINUS:
      sign = -1
      tok = self._advance()
      self._expect(tok, (tokenize.NUMBER,))
    if tok.exact_type == tokenize.NUMBER:
      value, tok = self._integer(tok)
      return sign * value, tok
    self._expect(tok, (tokenize.NAME, _MINUS, tokenize.NUMBER))
    raise AssertionError("unreachable")

  def _operation(self, op: str, tok: tokenize.TokenInfo) -> tuple[DimSize, tokenize.TokenInfo]:
    self._nest(tok)
    tok = self._consume(tok, tokenize.LPAR)
    e1, tok = self._expr(tok)
    tok = self._consume(tok, _COMMA)
    e2, tok = self._expr(tok)
    tok = self._consume(tok, _RPAR)
    self._nesting -= 1
    if op == MAX:
      return dim_max(e1, e2), tok
    if op == MIN:
      return dim_min(e1, e2), tok
    return DimExpr.from_operation(op, e1, e2, self.scope), tok


def parse_shape(spec: Any, *, like: Sequence[int | None] | None, scope: Any) -> tuple[DimSize, ...]:
  """The dimensions of ``spec`` (a string, or None for ``"..."``) in ``scope``."""
  spec_repr = repr(spec)
  if spec is None:
    spec = "..."
  elif not isinstance(spec, str):
    raise ShapeError(f"polymorphic shape spec should be None or a string. Found {spec_repr}.")
  return ShapeParser(spec, like, spec_repr, scope).parse()
