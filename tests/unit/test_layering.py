"""Imports inside ``jaxport/`` point one way, as ``docs/architecture.md`` says.

Every module is parsed with ``ast``; module-level and function-level imports
both count, and so do the module names a package lists for its lazily imported
public names (``_EXPORTS``) or a module imports by name (``_MODULES``). Imports under ``if TYPE_CHECKING:`` count for the layer order but
are not runtime imports, so they cannot form the cycles the record rule guards.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

import jaxport

PACKAGE = pathlib.Path(jaxport.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
GENERATED = {"jaxport.serde._schema_generated"}

# Lowest first: a module may import its own layer and the ones before it.
LAYERS = (
    ("leaves", ("jaxport.errors", "jaxport._config", "jaxport._versions", "jaxport._jaxcompat",
                "jaxport._progress", "jaxport._lazy",
                "jaxport._limits", "jaxport._bounded", "jaxport._json", "jaxport._records",
                "jaxport._vocabulary")),
    ("releases", ("jaxport.releases",)),
    ("shapes", ("jaxport.shapes",)),
    ("custom_calls", ("jaxport.custom_calls",)),
    ("export", ("jaxport.export",)),
    ("calling", ("jaxport.calling",)),
    ("serde", ("jaxport.serde",)),
    ("golden", ("jaxport.golden",)),
    ("upgrades", ("jaxport.upgrades",)),
    ("artifact features", ("jaxport.releases._features",)),
    ("public face", ("jaxport",)),
    ("report", ("jaxport.report",)),
    ("corpus", ("jaxport.corpus",)),
    ("harness", ("jaxport.harness",)),
    ("multirelease", ("jaxport.multirelease",)),
    ("cli", ("jaxport.cli",)),
)

# The harness's independent second reader: the one module that may import jax.export.
REFERENCE_READER = "jaxport.harness._reference"

# The one documented exception: the record imports the modules that implement its
# methods; those (and what they import) must never import the record back.
RECORD = "jaxport.export._exported"
RECORD_METHOD_MODULES = ("jaxport.serde._write", "jaxport.calling._call",
                         "jaxport.export._shardings", "jaxport.export._mlir")

# The pure symbolic-shape core: no jax at all.
SHAPES_CORE = ("jaxport.shapes._expr", "jaxport.shapes._terms", "jaxport.shapes._budget",
               "jaxport.shapes._array_hooks", "jaxport.shapes._parser", "jaxport.shapes._decision",
               "jaxport.shapes._scope", "jaxport.shapes._solver", "jaxport.shapes._api")

# Subpackage __init__ files import nothing; the cli's re-exports its console-script entry point,
# the report package (above the public face, imported by nothing below it) and the upgrades
# package (imported below only by the public face) their public APIs.
INIT_IMPORTS_ALLOWED = {
    "jaxport.cli": {"jaxport.cli._main"},
    "jaxport.report": {"jaxport._lazy", "jaxport._vocabulary", "jaxport.report._entries",
                       "jaxport.report._fields",
                       "jaxport.report._html", "jaxport.report._markdown", "jaxport.report._merge",
                       "jaxport.report._model", "jaxport.report._sections"},
    "jaxport.upgrades": {"jaxport.upgrades._envelope", "jaxport.upgrades._upgrade"},
    "jaxport.releases": {"jaxport.errors", "jaxport.releases._builds", "jaxport.releases._dates",
                         "jaxport.releases._measured", "jaxport.releases._runs_on",
                         "jaxport.releases._table"},
    "jaxport.golden": {"jaxport._lazy", "jaxport.golden._entry_id", "jaxport.golden._manifest",
                       "jaxport.golden._entry", "jaxport.golden._signatures",
                       "jaxport.golden._store"},
    "jaxport.harness": {"jaxport._lazy", "jaxport.harness._case", "jaxport.harness._project",
                        "jaxport.harness._registry", "jaxport.harness._settings",
                        "jaxport.harness.checkers"},
}


# Module-level names whose string values are modules imported by name.
NAMED_IMPORTS = ("_EXPORTS", "_MODULES")


def _module_name(path: pathlib.Path) -> str:
  parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str:
  """``name`` if it is a jaxport module, else the longest jaxport module prefix of it."""
  while name not in MODULES and "." in name:
    name = name.rsplit(".", 1)[0]
  return name


def _is_type_checking(test: ast.expr) -> bool:
  return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
          or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


class _Imports(ast.NodeVisitor):
  """(line, imported module, where, runtime) for every import of one module."""

  def __init__(self, module: str, is_package: bool):
    self.module, self.is_package = module, is_package
    self.found: list[tuple[int, str, str, bool]] = []
    self._scope: list[str] = []
    self._typing = 0

  def _add(self, node: ast.AST, name: str) -> None:
    where = "in " + ".".join(self._scope) + "()" if self._scope else "at module level"
    self.found.append((node.lineno, name, where, not self._typing))

  def visit_Import(self, node: ast.Import) -> None:
    for alias in node.names:
      self._add(node, alias.name)

  def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
    base = node.module or ""
    if node.level:
      anchor = self.module.split(".")
      anchor = anchor if self.is_package else anchor[:-1]
      anchor = anchor[:len(anchor) - node.level + 1]
      base = ".".join(anchor + ([base] if base else []))
    for alias in node.names:
      # ``from jax import export`` names jax.export: a submodule of jax is named whole.
      whole = f"{base}.{alias.name}"
      self._add(node, whole if whole in MODULES or base.split(".")[0] == "jax" else base)

  def visit_Assign(self, node: ast.Assign) -> None:
    named = [t.id for t in node.targets if isinstance(t, ast.Name)]
    if not self._scope and named and named[0] in NAMED_IMPORTS:
      for c in ast.walk(node.value):
        if isinstance(c, ast.Constant) and isinstance(c.value, str) and (
            c.value in MODULES or c.value == "jax" or c.value.startswith("jax.")):
          self._add(node, c.value)
    self.generic_visit(node)

  def _visit_scope(self, node: ast.AST) -> None:
    self._scope.append(node.name)
    self.generic_visit(node)
    self._scope.pop()

  visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

  def visit_If(self, node: ast.If) -> None:
    if _is_type_checking(node.test):
      self._typing += 1
      for child in node.body:
        self.visit(child)
      self._typing -= 1
      for child in node.orelse:
        self.visit(child)
    else:
      self.generic_visit(node)


def _imports(module: str) -> list[tuple[int, str, str, bool]]:
  path = MODULES[module]
  visitor = _Imports(module, path.name == "__init__.py")
  visitor.visit(ast.parse(path.read_text(), filename=str(path)))
  return visitor.found


IMPORTS = {m: _imports(m) for m in MODULES if m not in GENERATED}


def _where(module: str, line: int, where: str) -> str:
  return f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} ({where})"


def _layer(module: str) -> int:
  best, best_len = None, -1
  for i, (_, prefixes) in enumerate(LAYERS):
    for prefix in prefixes:
      if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
        best, best_len = i, len(prefix)
  assert best is not None, f"{module} is in no layer of LAYERS; add it there"
  return best


def _jaxport_imports(module: str):
  for line, name, where, runtime in IMPORTS[module]:
    if name == "jaxport" or name.startswith("jaxport."):
      yield line, _resolve(name), where, runtime


def test_every_module_is_in_a_layer():
  for module in IMPORTS:
    _layer(module)


def test_imports_point_down_the_layers():
  wrong = []
  for module in IMPORTS:
    for line, target, where, _ in _jaxport_imports(module):
      if target == module or _layer(target) <= _layer(module):
        continue
      if module == RECORD and target in RECORD_METHOD_MODULES:
        continue
      wrong.append(f"{_where(module, line, where)}: {module} ({LAYERS[_layer(module)][0]}) imports "
                   f"{target} ({LAYERS[_layer(target)][0]}), a higher layer")
  assert not wrong, "imports pointing the wrong way:\n" + "\n".join(wrong)


def test_record_imports_only_its_method_modules_upward():
  upward = {t for _, t, _, _ in _jaxport_imports(RECORD) if _layer(t) > _layer(RECORD)}
  assert upward <= set(RECORD_METHOD_MODULES), upward
  assert set(RECORD_METHOD_MODULES) <= {t for _, t, _, runtime in _jaxport_imports(RECORD) if runtime}


def test_what_the_record_imports_never_imports_the_record():
  reached, todo = set(), list(RECORD_METHOD_MODULES)
  while todo:
    module = todo.pop()
    if module in reached or module not in IMPORTS:
      continue
    reached.add(module)
    todo += [t for _, t, where, runtime in _jaxport_imports(module)
             if runtime and where == "at module level"]
  wrong = [f"{_where(m, line, where)}: {m} imports {RECORD}"
           for m in sorted(reached) for line, t, where, runtime in _jaxport_imports(m)
           if runtime and t == RECORD]
  assert not wrong, ("the record imports these modules, so they must not import it "
                     "(a cycle):\n" + "\n".join(wrong))


def test_subpackage_inits_import_nothing():
  wrong = []
  for module, path in MODULES.items():
    if path.name != "__init__.py" or module == "jaxport":
      continue
    allowed = INIT_IMPORTS_ALLOWED.get(module, set())
    wrong += [f"{_where(module, line, where)}: imports {name}"
              for line, name, where, _ in IMPORTS[module]
              if name not in ("__future__", "typing") and _resolve(name) not in allowed]
  assert not wrong, "\n".join(wrong)


def _documented_jax_internal_modules() -> set[str]:
  """Modules whose row in docs/architecture.md says they touch jax internals ("yes ...")."""
  found = set()
  for row in ARCHITECTURE.read_text().splitlines():
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) == 3 and cells[2].startswith("yes"):
      for path in re.findall(r"`(jaxport/[\w/]+\.py)`", cells[0]):
        found.add(path[:-len(".py")].replace("/", "."))
  return found


def _jax_internal_imports(module: str):
  for line, name, where, _ in IMPORTS[module]:
    if name == "jax._src" or name.startswith("jax._src."):
      yield line, name, where


def test_only_documented_modules_import_jax_internals():
  documented = _documented_jax_internal_modules()
  assert documented, f"no module of {ARCHITECTURE.name} is marked as touching jax internals"
  wrong = [f"{_where(m, line, where)}: imports {name}, but {m} is not marked 'yes' in "
           f"{ARCHITECTURE.name}" for m in IMPORTS if m not in documented
           for line, name, where in _jax_internal_imports(m)]
  assert not wrong, "\n".join(wrong)
  stale = sorted(m for m in documented if m in IMPORTS and not any(_jax_internal_imports(m)))
  assert not stale, f"{ARCHITECTURE.name} says these touch jax internals, but they do not: {stale}"


# The modules outside jaxport/_jaxcompat that may import jax internals themselves, each with
# its reason; every other module reaches them through _jaxcompat's modules, one per concern.
JAX_INTERNALS_OUTSIDE_COMPAT = {
    "jaxport.serde._wire": "it names jax's own type objects on the wire (each PRNG's key type, "
                           "the effect types, the result types of linalg, setops and stats): "
                           "which objects they are is a fact of the format, read where it is written",
}
COMPAT_PACKAGE = "jaxport._jaxcompat"


def test_jax_internals_are_imported_behind_jaxcompat_or_by_an_allowed_module():
  assert len(JAX_INTERNALS_OUTSIDE_COMPAT) <= 4
  importers = {m for m in IMPORTS if any(_jax_internal_imports(m))
               and m != COMPAT_PACKAGE and not m.startswith(COMPAT_PACKAGE + ".")}
  assert importers == set(JAX_INTERNALS_OUTSIDE_COMPAT), (
      f"outside {COMPAT_PACKAGE}, only {sorted(JAX_INTERNALS_OUTSIDE_COMPAT)} may import jax._src "
      f"(each with its reason); these do: {sorted(importers)}")
  assert any(_jax_internal_imports(m) for m in IMPORTS if m.startswith(COMPAT_PACKAGE + "."))


def test_nothing_imports_jax_export():
  wrong = [f"{_where(m, line, where)}: imports {name}" for m in IMPORTS if m != REFERENCE_READER
           for line, name, where, _ in IMPORTS[m]
           if name.split(".")[:2] == ["jax", "export"]
           or name.startswith(("jax._src.export", "jax.experimental.export"))
           or name.endswith("shape_poly")]
  assert not wrong, "jaxport reimplements jax.export and must not import it:\n" + "\n".join(wrong)


# The session's side of the worker boundary: jax-free by what they import, not by where an
# import is placed (the worker itself, ``_worker``, imports the engine and jax).
JAX_FREE_BY_STRUCTURE = ("jaxport.harness._worker_client", "jaxport.harness._worker_pool")
MODULE_LEVEL = "at module level"


class _PlainImports(_Imports):
  """The import statements of a module, without the names a lazy package imports on first use."""

  def visit_Assign(self, node: ast.Assign) -> None:
    self.generic_visit(node)


def _plain_imports(module: str) -> list[tuple[int, str, str, bool]]:
  visitor = _PlainImports(module, MODULES[module].name == "__init__.py")
  visitor.visit(ast.parse(MODULES[module].read_text(), filename=str(MODULES[module])))
  return visitor.found


def _reached(module: str) -> set[str]:
  """The jaxport modules importing ``module`` runs, at any depth: its parent packages and
  the module-level import statements of each."""
  seen: set[str] = set()
  todo = [module]
  while todo:
    m = todo.pop()
    if m in seen or m not in IMPORTS:
      continue
    seen.add(m)
    parts = m.split(".")
    todo += [".".join(parts[:i]) for i in range(1, len(parts))]
    todo += [_resolve(name) for _, name, where, runtime in _plain_imports(m)
             if runtime and where == MODULE_LEVEL
             and (name == "jaxport" or name.startswith("jaxport."))]
  return seen


def _jax_reached(module: str) -> list[str]:
  """Where importing ``module`` imports jax, through any jaxport module it reaches."""
  return [f"{_where(m, line, where)}: imports {name}" for m in sorted(_reached(module))
          for line, name, where, runtime in _plain_imports(m)
          if runtime and where == MODULE_LEVEL and (name == "jax" or name.startswith("jax."))]


@pytest.mark.parametrize("module", JAX_FREE_BY_STRUCTURE)
def test_the_session_side_of_the_worker_reaches_no_jax(module):
  assert "jaxport.harness._engine" not in _reached(module)
  wrong = _jax_reached(module)
  assert not wrong, f"importing {module} reaches jax:\n" + "\n".join(wrong)


def test_the_reach_of_an_import_sees_jax():
  assert _jax_reached("jaxport.harness._engine")


def test_shapes_core_imports_no_jax():
  wrong = [f"{_where(m, line, where)}: imports {name}" for m in SHAPES_CORE
           for line, name, where, _ in IMPORTS[m] if name == "jax" or name.startswith("jax.")]
  assert not wrong, "the symbolic-shape core must stay free of jax:\n" + "\n".join(wrong)


def test_the_reference_reader_imports_jax_export_and_is_imported_only_by_the_harness():
  assert any(name.split(".")[:2] == ["jax", "export"] for _, name, _, _ in IMPORTS[REFERENCE_READER])
  wrong = [f"{_where(m, line, where)}: imports {REFERENCE_READER}" for m in IMPORTS
           if not m.startswith("jaxport.harness.")
           for line, target, where, _ in _jaxport_imports(m) if target == REFERENCE_READER]
  assert not wrong, "only the harness replays with jax's reader:\n" + "\n".join(wrong)


# The documented exceptions to "nothing edits sys.path" (docs/architecture.md): the user's own
# project, named with --project, and nothing of the repository.
PATH_EDITORS = {
    "jaxport.cli._relower": "the --project's paths, while audit imports and lowers its cases",
    "jaxport.cli._project": "sys.path restored after pytest read the --project's configuration",
}
PATH_EDITS = ("sys.path.append", "sys.path.insert", "sys.path[", "sys.path.remove",
              "sys.path.extend", "sys.path +=")


def test_nothing_in_the_package_imports_the_repository_harness_or_edits_the_path():
  wrong = [f"{_where(m, line, where)}: imports {name}" for m in IMPORTS
           for line, name, where, _ in IMPORTS[m]
           if name == "harness" or name.startswith("harness.")]
  wrong += [f"{MODULES[m].relative_to(PACKAGE.parent)}: mentions {pattern}" for m in IMPORTS
            for pattern in ("import_module(\"harness", *PATH_EDITS)
            if pattern in MODULES[m].read_text()
            and not (m in PATH_EDITORS and pattern in PATH_EDITS)]
  assert not wrong, "the installed package must stand alone:\n" + "\n".join(wrong)


# The repository's harness/ is a user of the installed harness: its case modules and golden
# items import only what a downstream project can (its tools and fuzz suite may reach further,
# as jaxport's own maintenance code).
REPOSITORY_HARNESS = PACKAGE.parent / "harness"
PUBLIC_FOR_PROJECTS = {"jaxport", "jaxport.harness", "jaxport.harness.testing", "jaxport.golden",
                       "jaxport.errors", "jaxport_pytest"}


def test_the_repository_harness_cases_use_only_what_a_downstream_project_can():
  files = [*sorted((REPOSITORY_HARNESS / "cases").glob("*.py")),
           REPOSITORY_HARNESS / "test_replay.py", REPOSITORY_HARNESS / "conftest.py"]
  wrong = []
  for path in files:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
      names = ([a.name for a in node.names] if isinstance(node, ast.Import)
               else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
               else [])
      wrong += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: imports {n}" for n in names
                if n.split(".")[0] in ("jaxport", "jaxport_pytest") and n not in PUBLIC_FOR_PROJECTS]
  assert not wrong, "use the public harness API (jaxport.harness):\n" + "\n".join(wrong)


# The one judge of an entry: only it builds an outcome or changes its verdict.
JUDGE = PACKAGE / "harness" / "_judge"
# The entry's record itself (its JSON readers rebuild what the judge made).
OUTCOME_RECORD = PACKAGE / "report" / "_entries.py"
# What an outcome's verdict is made of.
VERDICT_FIELDS = {"status", "findings", "expected_failure", "release", "runs_on"}


def _verdict_writes(path: pathlib.Path) -> list[str]:
  """Where ``path`` builds an ``EntryResult`` or replaces a verdict field of one."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if not isinstance(node, ast.Call):
      continue
    name = node.func.id if isinstance(node.func, ast.Name) else (
        node.func.attr if isinstance(node.func, ast.Attribute) else None)
    if name == "EntryResult":
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: builds an EntryResult")
    if name == "replace" and {k.arg for k in node.keywords} & VERDICT_FIELDS:
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: replaces "
                   f"{sorted({k.arg for k in node.keywords} & VERDICT_FIELDS)}")
  return found


def test_only_the_judge_builds_or_changes_a_verdict():
  outside = [p for p in PACKAGE.rglob("*.py")
             if JUDGE not in p.parents and p != OUTCOME_RECORD]
  assert not [w for p in outside for w in _verdict_writes(p)]
  # The check sees what it looks for: the judge does build and change verdicts.
  assert [w for p in JUDGE.rglob("*.py") for w in _verdict_writes(p)]


# The vocabulary the judge chooses from: a finding's kind and an entry's status. The
# vocabulary module defines them (and the sets of kinds each status rule names).
VOCABULARY = PACKAGE / "_vocabulary.py"
JUDGED = {"Status", "FindingKind"}
# Where a member of the vocabulary is chosen rather than read: what a function returns, what
# a name, a keyword or a dict's value is given.
_CHOOSING = (ast.Return, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.keyword, ast.Yield,
             ast.Lambda, ast.NamedExpr)
# What a member passes through on its way there: a collection, a conditional, a boolean.
_THROUGH = (ast.Tuple, ast.Set, ast.List, ast.IfExp, ast.BoolOp, ast.Starred)


def _vocabulary_names(tree: ast.AST) -> set[str]:
  """``Status`` and ``FindingKind`` and the names a module gives them (``K = FindingKind``,
  ``import ... as``)."""
  names = set(JUDGED)
  for node in ast.walk(tree):
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and (
        node.value.id in JUDGED):
      names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.ImportFrom):
      names |= {a.asname for a in node.names if a.name in JUDGED and a.asname}
  return names


def verdict_choices(source: str, where: str) -> list[str]:
  """Where ``source`` builds a ``Finding`` or chooses a ``Status`` or ``FindingKind``
  member: returns it, assigns it, passes it as a keyword or a dict's value. Reading one
  (comparing with it, asking whether an outcome has it, mapping it to what a page shows,
  ``Status(text)`` from JSON) is no choice."""
  tree = ast.parse(source)
  names = _vocabulary_names(tree)
  parents = {c: node for node in ast.walk(tree) for c in ast.iter_child_nodes(node)}
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Call):
      f = node.func
      if (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) == "Finding":
        found.append(f"{where}:{node.lineno}: builds a Finding")
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in names and node.attr.isupper()):
      continue
    child, parent = node, parents.get(node)
    while isinstance(parent, _THROUGH) and not (
        isinstance(parent, ast.IfExp) and child is parent.test):
      child, parent = parent, parents.get(parent)
    if isinstance(parent, _CHOOSING) or (
        isinstance(parent, ast.Dict) and any(child is v for v in parent.values)):
      found.append(f"{where}:{node.lineno}: chooses {node.value.id}.{node.attr}")
  return found


def test_only_the_judge_builds_a_finding_or_chooses_a_status_or_kind():
  outside = [p for p in PACKAGE.rglob("*.py") if JUDGE not in p.parents and p != VOCABULARY]
  assert not [w for p in outside
              for w in verdict_choices(p.read_text(encoding="utf-8"),
                                       str(p.relative_to(PACKAGE.parent)))]
  # The check sees what it looks for: the judge does build findings and choose statuses.
  inside = [w for p in JUDGE.rglob("*.py")
            for w in verdict_choices(p.read_text(encoding="utf-8"), p.name)]
  assert any("builds a Finding" in w for w in inside)
  assert any("chooses Status." in w for w in inside)
  assert any("chooses FindingKind." in w or "chooses K." in w for w in inside)


@pytest.mark.parametrize("planted", [
    "f = Finding(FindingKind.EXPIRED, Subject.TODAY, 'old')",
    "def status(x):\n  return Status.PASS if x else Status.FAIL",
    "K = FindingKind\nfound = dataclasses.replace(found, kind=K.NUMERICS_DRIFT)",
    "record = {'status': Status.WARN}",
    "from jaxport._vocabulary import Status as S\nverdict = S.FAIL",
], ids=["a finding", "a returned status", "a kind by an alias", "a dict value", "an import alias"])
def test_the_judge_rule_catches_a_planted_choice(planted):
  assert verdict_choices(planted, "planted.py"), planted


@pytest.mark.parametrize("read", [
    "failed = outcome.status is Status.FAIL",
    "K = FindingKind\nbad = [f for f in e.findings if f.kind in (K.COMPATIBILITY_BREAK, K.UPGRADED)]",
    "upgraded = outcome.has(FindingKind.UPGRADED)",
    "shown = {Status.PASS: 'ok', Status.FAIL: 'PROBLEM'}",
    "status = Status(d['status'])",
    "finding = Finding.from_json(d)",
], ids=["a comparison", "membership", "a query", "a display key", "from JSON", "a finding read"])
def test_the_judge_rule_lets_reading_and_displaying_be(read):
  assert verdict_choices(read, "read.py") == []


COMPAT = PACKAGE / "_jaxcompat"


def _version_reads(path: pathlib.Path) -> list[str]:
  """Where ``path`` reads an installed version itself: ``jax.__version__`` or a
  distribution's metadata version."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Attribute) and node.attr == "__version__" and (
        isinstance(node.value, ast.Name) and node.value.id == "jax"):
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: jax.__version__")
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr == "version" and isinstance(node.func.value, (ast.Name, ast.Attribute))
        and ast.unparse(node.func.value) in ("md", "importlib.metadata", "metadata")):
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node.func)}")
  return found


def test_installed_versions_are_read_only_behind_jaxcompat():
  outside = [p for p in PACKAGE.rglob("*.py") if COMPAT not in p.parents]
  assert not [w for p in outside for w in _version_reads(p)]
  assert [w for p in COMPAT.rglob("*.py") for w in _version_reads(p)]  # the check sees them


ENTRY_ID_MODULE = PACKAGE / "golden" / "_entry_id.py"
# Modules splitting other '/'-separated text, each with what it splits.
OTHER_SLASHED_TEXT = {PACKAGE / "harness" / "_shard.py": "a shard spec I/N"}


def _slash_splits(path: pathlib.Path) -> list[str]:
  """Where ``path`` takes '/'-separated text apart itself (``split``, ``rsplit``,
  ``partition`` or ``count`` of "/"): the entry id's own module does that, once."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "rsplit", "partition", "rpartition", "count")
        and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "/"):
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
  return found


def test_only_the_entry_id_module_splits_entry_ids():
  assert not [w for p in PACKAGE.rglob("*.py")
              if p != ENTRY_ID_MODULE and p not in OTHER_SLASHED_TEXT for w in _slash_splits(p)]
  assert _slash_splits(ENTRY_ID_MODULE)  # the check sees what it looks for


def hand_built_ids(source: str, where: str) -> list[str]:
  """Where ``source`` assembles an entry id from path parts itself: ``"/".join(...)`` over a
  ``.parts`` slice or over ``split_parts(...)`` (``EntryId.from_folder`` makes the id of an
  entry folder)."""
  found = []
  for node in ast.walk(ast.parse(source)):
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
            and node.func.value.value == "/" and node.args):
      continue
    joined = node.args[0]
    for sub in ast.walk(joined):
      if (isinstance(sub, ast.Attribute) and sub.attr == "parts") or (
          isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
          and sub.func.id == "split_parts"):
        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        break
  return found


def test_no_module_builds_an_entry_id_by_hand():
  # The entry id's own module included: an id is made from its four parts by EntryId itself
  # (the planted cases below show the check sees what it looks for).
  assert not [w for p in PACKAGE.rglob("*.py")
              for w in hand_built_ids(p.read_text(encoding="utf-8"),
                                      str(p.relative_to(PACKAGE.parent)))]


@pytest.mark.parametrize("planted", [
    'entry_id = "/".join(path.parts[-4:])',
    'entry_id = "/".join(folder.resolve().relative_to(root).parts[-4:])',
    'key = "/".join(split_parts(text)[:3])',
    'ids.append("/".join(list(manifest.parent.parts)[-4:]))',
], ids=["a parts slice", "a relative path's parts", "split text", "a list of parts"])
def test_the_entry_id_rule_catches_a_planted_hand_built_id(planted):
  assert hand_built_ids(planted, "planted.py"), planted


@pytest.mark.parametrize("other", [
    'line = "/".join(str(counts.get(k, 0)) for k in ("export", "call"))',
    'entry_id = str(EntryId.from_folder(path))',
], ids=["counts", "the constructor"])
def test_the_entry_id_rule_lets_other_joins_be(other):
  assert hand_built_ids(other, "other.py") == []
