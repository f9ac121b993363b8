"""One home for what runs another jax release: ``jaxport/multirelease/``.

``jaxport/releases/`` holds facts (the release table, windows, versions, the measurements as
read) and imports nothing of ``jaxport/multirelease/``; and no module of the repository
outside ``jaxport/multirelease/`` (``jaxport_in_release/`` runs inside the release, without
jaxport) obtains another release's interpreter, the one way to start a process there. Each
rule is shown catching a planted violation.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
from _parsed_sources import parsed, walked

import jaxport

PACKAGE = pathlib.Path(jaxport.__file__).parent
ROOT = PACKAGE.parent
RELEASES = PACKAGE / "releases"
MULTIRELEASE = PACKAGE / "multirelease"
# The repository's Python outside the release home: the package, the repository's harness and
# tools, and the pytest entry point.
SCANNED = ("jaxport", "harness", "tools", "jaxport_pytest")

# What hands out another release's interpreter: the environment builders. (The release
# replayer's driver runs whichever interpreter it is given; ``audit --run`` gives it this one.)
STARTER_MODULES = frozenset({"jaxport.multirelease._envs", "jaxport.multirelease._project_env",
                             "jaxport.multirelease._test_venvs", "jaxport.multirelease._tf_envs"})
STARTERS = frozenset({"ensure_venv", "venv_python", "ensure_project_env", "ensure_test_venv",
                      "ensure_tf_env"})


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
  """(line, module) of every import, ``from PKG import NAME`` also as ``PKG.NAME``."""
  found = []
  for node in walked(tree):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      found.append((node.lineno, node.module))
      found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
  return found


def multirelease_imports(source: str, where: str) -> list[str]:
  """Where ``source`` imports anything of ``jaxport.multirelease``."""
  return [f"{where}:{line}: imports {name}" for line, name in _imported_modules(parsed(source))
          if name == "jaxport.multirelease" or name.startswith("jaxport.multirelease.")]


def _bound_modules(tree: ast.AST) -> list[tuple[int, str]]:
  """(line, what) of every import that binds a module or a function: ``import A.B`` binds
  ``A.B``; ``from A import B``, ``A.B`` (the names a module gives, not the module)."""
  found = []
  for node in walked(tree):
    if isinstance(node, ast.Import):
      found += [(node.lineno, a.name) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
  return found


def release_starts(source: str, where: str) -> list[str]:
  """Where ``source`` imports a module that starts another release's processes, or names one
  of the functions that hand out such an interpreter (facts of those modules may be read)."""
  tree = parsed(source)
  found = [f"{where}:{line}: imports {name}" for line, name in _bound_modules(tree)
           if name in STARTER_MODULES or name.rsplit(".", 1)[-1] in STARTERS]
  for node in walked(tree):
    name = (node.id if isinstance(node, ast.Name) else
            node.attr if isinstance(node, ast.Attribute) else None)
    if name in STARTERS:
      found.append(f"{where}:{node.lineno}: uses {name}")
  return found


def _sources(folder: pathlib.Path):
  for path in sorted(folder.rglob("*.py")):
    yield path, path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))


def test_the_release_facts_import_nothing_of_multirelease():
  wrong = [w for _, text, where in _sources(RELEASES) for w in multirelease_imports(text, where)]
  assert not wrong, "\n".join(wrong)


def test_only_multirelease_starts_another_releases_process():
  outside = [(p, text, where) for top in SCANNED for p, text, where in _sources(ROOT / top)
             if MULTIRELEASE not in p.parents]
  assert len(outside) > 100, "the scan found too few modules to be the repository's"
  wrong = [w for _, text, where in outside for w in release_starts(text, where)]
  assert not wrong, "\n".join(wrong)
  # The rule sees what it looks for: the release home does start releases.
  inside = [w for _, text, where in _sources(MULTIRELEASE) for w in release_starts(text, where)]
  assert any("ensure_venv" in w for w in inside)


@pytest.mark.parametrize("planted", [
    "from jaxport.multirelease import _envs",
    "from jaxport.multirelease._measured import remember",
    "import jaxport.multirelease._bisect",
], ids=["a module", "a function", "a plain import"])
def test_the_facts_rule_catches_a_planted_import(planted):
  assert multirelease_imports(planted, "jaxport/releases/_planted.py")


@pytest.mark.parametrize("planted", [
    "from jaxport.multirelease import _envs\npython = _envs.ensure_venv('0.9.2')",
    "from jaxport.multirelease._envs import ensure_venv",
    "import jaxport.multirelease._project_env",
    "from jaxport.multirelease import _test_venvs",
    "python = helpers.venv_python(version)",
], ids=["a module and its call", "a function", "a plain import", "the test venvs",
        "an attribute"])
def test_the_starts_rule_catches_a_planted_start(planted):
  assert release_starts(planted, "jaxport/cli/_planted.py")


@pytest.mark.parametrize("allowed", [
    "from jaxport.multirelease._envs import PYTHON_311, python_need",
    "from jaxport.multirelease import _with_jax\ncode = _with_jax.run('replay', **kw)",
    "from jaxport.releases import served_releases",
    "from jaxport.multirelease._replay import replay_with\nrows = replay_with(sys.executable, *a)",
], ids=["facts of the environments", "the home's entry point", "the release facts",
        "the replayer with this interpreter"])
def test_the_starts_rule_lets_facts_and_the_homes_entry_points_be(allowed):
  assert release_starts(allowed, "jaxport/cli/_allowed.py") == []
