"""Python sources parsed, and their nodes listed, once per test process.

The layering and vocabulary rules read every file of the package, each rule on its own; parsing
and walking the same text again for each rule was most of their time. A tree handed out here is
shared, so a rule reads it and never changes it.
"""

from __future__ import annotations

import ast
import functools


@functools.lru_cache(maxsize=None)
def parsed(source: str) -> ast.Module:
  """The tree of ``source``, parsed once."""
  return ast.parse(source)


@functools.lru_cache(maxsize=None)
def walked(tree: ast.AST) -> tuple[ast.AST, ...]:
  """Every node of ``tree`` in ``ast.walk``'s order, listed once."""
  return tuple(ast.walk(tree))
