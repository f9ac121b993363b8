"""Every attribute jaxport reads from jax's internals through ``jaxport._jaxcompat``'s
modules exists in the installed jax: a release that drops or renames one fails here, by
name, before any export or replay meets it."""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib

import pytest
from _parsed_sources import parsed, walked

import jaxport
from jaxport._jaxcompat._version import installed_jax_version

PACKAGE = pathlib.Path(jaxport.__file__).parent
# The modules that hold jax's internals for the rest of the package, one per concern.
FACADES = ("jaxport._jaxcompat._tracing", "jaxport._jaxcompat._lowering",
           "jaxport._jaxcompat._shardings", "jaxport._jaxcompat._compilation")


@functools.cache
def _reads() -> dict[tuple[str, str, str], list[str]]:
  """(facade, name, attribute) -> where, for each ``name.attribute`` a module outside
  ``_jaxcompat`` reads from a name it imported from a facade; read when a test first asks."""
  found: dict[tuple[str, str, str], list[str]] = {}
  for path in sorted(PACKAGE.rglob("*.py")):
    if "_jaxcompat" in path.parts:
      continue
    nodes = walked(parsed(path.read_text(encoding="utf-8")))
    aliases = {alias.asname or alias.name: (node.module, alias.name)
               for node in nodes if isinstance(node, ast.ImportFrom)
               and node.module in FACADES for alias in node.names}
    for node in nodes:
      if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
          and node.value.id in aliases):
        facade, name = aliases[node.value.id]
        where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        found.setdefault((facade, name, node.attr), []).append(where)
  return found



def test_the_probe_sees_each_concern():
  assert {facade for facade, _, _ in _reads()} == set(FACADES)


@pytest.mark.parametrize("facade", FACADES)
def test_each_internal_jaxport_reads_exists_in_the_installed_jax(facade):
  module = importlib.import_module(facade)
  missing = [f"{name}.{attr} (read at {', '.join(where)})"
             for (owner, name, attr), where in sorted(_reads().items())
             if owner == facade and not hasattr(getattr(module, name), attr)]
  assert not missing, (f"jax {installed_jax_version()} lacks what jaxport reads through "
                       f"{facade}:\n" + "\n".join(missing))
