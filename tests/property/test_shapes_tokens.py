"""The parser's fast tokenizer yields exactly what Python's tokenize yields."""

import io
import tokenize

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxport.shapes._parser import _SIMPLE_SPEC, _fast_tokens, _Unbalanced

_SKIPPED = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)


def reference(spec):
  try:
    return [(t.exact_type, t.string, t.start[1], t.line)
            for t in tokenize.tokenize(io.BytesIO(spec.encode()).readline)
            if t.exact_type not in _SKIPPED]
  except tokenize.TokenError:
    return "unbalanced"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab_c01259 ,()+-*^.eEjxXo", max_size=14))
def test_fast_tokens_match_tokenize(spec):
  assert _SIMPLE_SPEC.match(spec)
  fast = _fast_tokens(spec)
  if fast is None:
    return
  expected = reference(spec)
  if expected == "unbalanced":
    assert any(isinstance(t, _Unbalanced) for t in fast)
  else:
    assert [(t.exact_type, t.string, t.start[1], t.line) for t in fast] == expected
