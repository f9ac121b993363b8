"""Imports inside ``jaxport/`` point one way, as ``docs/architecture.md`` says.

Every module is parsed with ``ast``; module-level and function-level imports
both count, and so do the module names a package lists for its lazily imported
public names (``_EXPORTS``) or a module imports by name (``_MODULES``). Imports under ``if TYPE_CHECKING:`` count for the layer order but
are not runtime imports, so they cannot form the cycles the record rule guards.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
from collections.abc import Iterator, Mapping

import pytest
from _parsed_sources import parsed, walked

import jaxport

PACKAGE = pathlib.Path(jaxport.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
GENERATED = {"jaxport.serde._schema_generated"}

# Lowest first: a module may import its own layer and the ones before it.
LAYERS = (
    ("leaves", ("jaxport.errors", "jaxport._config", "jaxport._versions", "jaxport._jaxcompat",
                "jaxport._progress", "jaxport._lazy",
                "jaxport._limits", "jaxport._bounded", "jaxport._json", "jaxport._records",
                "jaxport._record_codec",
                "jaxport._vocabulary", "jaxport._platforms", "jaxport._files", "jaxport._environment",
                # An entry's id (the standard library only): parsed wherever ids come in, the
                # measurements of other releases included.
                "jaxport.golden._entry_id")),
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
    # What crosses the harness's pipe: both of its processes import it, it imports neither.
    ("harness protocol", ("jaxport.harness._protocol",)),
    ("harness", ("jaxport.harness",)),
    ("multirelease", ("jaxport.multirelease",)),
    ("cli", ("jaxport.cli",)),
)

# The harness's independent second reader: the one module that may import jax.export.
REFERENCE_READER = "jaxport.harness._worker._reference"

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
                       "jaxport.report._model", "jaxport.report._sections",
                       "jaxport.report._served"},
    "jaxport.upgrades": {"jaxport.upgrades._envelope", "jaxport.upgrades._upgrade"},
    "jaxport.releases": {"jaxport.errors", "jaxport.releases._builds", "jaxport.releases._dates",
                         "jaxport.releases._measured", "jaxport.releases._runs_on",
                         "jaxport.releases._table", "jaxport.releases._version_text"},
    "jaxport.golden": {"jaxport._lazy", "jaxport.golden._entry_id", "jaxport.golden._manifest",
                       "jaxport.golden._entry", "jaxport.golden._signatures",
                       "jaxport.golden._store"},
    "jaxport.harness": {"jaxport._lazy", "jaxport.harness._case", "jaxport.harness._project",
                        "jaxport.harness._registry", "jaxport.harness._controller._settings",
                        "jaxport.harness._jit_kwargs",
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
  visitor.visit(parsed(path.read_text()))
  return visitor.found


class _ImportTable(Mapping):
  """Each module's imports (``_imports``), read when a test first asks: collecting this file,
  which every test process does, reads no source."""

  @functools.cached_property
  def _table(self) -> dict[str, list[tuple[int, str, str, bool]]]:
    return {m: _imports(m) for m in MODULES if m not in GENERATED}

  def __getitem__(self, module: str) -> list[tuple[int, str, str, bool]]:
    return self._table[module]

  def __iter__(self) -> Iterator[str]:
    return iter(self._table)

  def __len__(self) -> int:
    return len(self._table)


IMPORTS = _ImportTable()


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


MODULE_LEVEL = "at module level"


class _PlainImports(_Imports):
  """The import statements of a module, without the names a lazy package imports on first use."""

  def visit_Assign(self, node: ast.Assign) -> None:
    self.generic_visit(node)


def _plain_imports(module: str) -> list[tuple[int, str, str, bool]]:
  visitor = _PlainImports(module, MODULES[module].name == "__init__.py")
  visitor.visit(parsed(MODULES[module].read_text()))
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


def test_the_reach_of_an_import_sees_jax():
  assert _jax_reached("jaxport.harness._worker._engine")


# The harness split by process (docs/architecture.md): the controller runs in pytest's process
# and never imports jax; the worker process imports jax and nothing of the controller's; what
# crosses the pipe is in the protocol package, which both import.
HARNESS = "jaxport.harness"
CONTROLLER = "jaxport.harness._controller"
WORKER = "jaxport.harness._worker"
# An import table: module -> (line, imported name, where, runtime) for each import statement.
ImportTable = dict[str, list[tuple[int, str, str, bool]]]


def _within(module: str, package: str) -> bool:
  return module == package or module.startswith(package + ".")


def _is_jax(name: str) -> bool:
  return name.split(".")[0] in ("jax", "jaxlib")


def _table_module(table: ImportTable, name: str) -> str | None:
  """The module of ``table`` that importing ``name`` runs (the longest prefix it holds)."""
  while name not in table and "." in name:
    name = name.rsplit(".", 1)[0]
  return name if name in table else None


def controller_reach_problems(table: ImportTable, controller: str = CONTROLLER,
                              worker: str = WORKER) -> list[str]:
  """Where the controller package reaches jax or the worker package. From each of its modules
  the imports that run are followed: a harness module's at module level and inside functions
  (a function may run in pytest's process), another module's at module level, and every
  module's parent packages; never an import under ``TYPE_CHECKING``. No module reached may
  import jax or jaxlib at module level, nor a controller module even inside a function, and no
  module of the worker package may be reached at all."""
  via: dict[str, str] = {}
  todo = [(m, m) for m in table if _within(m, controller)]
  while todo:
    module, importer = todo.pop()
    if module in via:
      continue
    via[module] = importer
    parts = module.split(".")
    todo += [(".".join(parts[:i]), module) for i in range(1, len(parts))
             if ".".join(parts[:i]) in table]
    for _, name, where, runtime in table[module]:
      target = _table_module(table, name)
      if runtime and target is not None and (where == MODULE_LEVEL or _within(module, HARNESS)):
        todo.append((target, module))
  wrong = []
  for module in sorted(via):
    if _within(module, worker):
      wrong.append(f"{module}: a worker module, reached from the controller (imported by "
                   f"{via[module]})")
    wrong += [f"{module}:{line} ({where}): imports {name} (reached from the controller through "
              f"{via[module]})" for line, name, where, runtime in table[module]
              if runtime and _is_jax(name)
              and (where == MODULE_LEVEL or _within(module, controller))]
  return wrong


def worker_controller_imports(table: ImportTable, controller: str = CONTROLLER,
                              worker: str = WORKER) -> list[str]:
  """Where a module of the worker package imports one of the controller package, at any level
  (inside functions and under ``TYPE_CHECKING`` too)."""
  return [f"{module}:{line} ({where}): imports {name}" for module in sorted(table)
          if _within(module, worker) for line, name, where, _ in table[module]
          if _within(name, controller)]


def test_the_controller_package_reaches_no_jax_and_no_worker_module():
  table = {m: _plain_imports(m) for m in IMPORTS}
  assert any(_within(m, CONTROLLER) for m in table)
  wrong = controller_reach_problems(table)
  assert not wrong, "pytest's process must not import jax:\n" + "\n".join(wrong)


def test_the_worker_package_imports_nothing_of_the_controller():
  wrong = worker_controller_imports(IMPORTS)
  assert not wrong, "the worker must not import the controller:\n" + "\n".join(wrong)


def test_the_controller_rule_sees_jax_in_the_real_tree():
  # The worker package, read as if it ran in pytest's process, reaches jax.
  table = {m: _plain_imports(m) for m in IMPORTS}
  assert controller_reach_problems(table, controller=WORKER, worker="jaxport.nothing")


_C = CONTROLLER + "._planted"
_PLANTED_REACH = {
    "jax inside a controller function": {_C: [(3, "jax", "in f()", True)]},
    "a harness module imported in a function imports jax": {
        _C: [(3, "jaxport.harness._shared", "in f()", True)],
        "jaxport.harness._shared": [(1, "jax.numpy", MODULE_LEVEL, True)]},
    "a module outside the harness imported in a function imports jax": {
        _C: [(3, "jaxport.golden._parsing", "in f()", True)],
        "jaxport.golden._parsing": [(1, "jaxlib.mlir", MODULE_LEVEL, True)]},
    "two steps away": {
        _C: [(3, "jaxport.harness._shared", MODULE_LEVEL, True)],
        "jaxport.harness._shared": [(5, "jaxport.golden._parsing", "in g()", True)],
        "jaxport.golden._parsing": [(1, "jax", MODULE_LEVEL, True)]},
    "a worker module": {
        _C: [(3, WORKER + "._engine", "in f()", True)], WORKER + "._engine": []},
    "through a parent package": {
        _C: [(3, "jaxport.sub._leaf", MODULE_LEVEL, True)], "jaxport.sub._leaf": [],
        "jaxport.sub": [(1, "jax", MODULE_LEVEL, True)]},
}


@pytest.mark.parametrize("table", list(_PLANTED_REACH.values()), ids=list(_PLANTED_REACH))
def test_the_controller_rule_catches_a_planted_reach(table):
  assert controller_reach_problems(table), table


_NOT_REACHED = {
    "under TYPE_CHECKING": {_C: [(3, "jax", MODULE_LEVEL, False)]},
    "jax in a function of a module outside the harness": {
        _C: [(3, "jaxport.golden._store", MODULE_LEVEL, True)],
        "jaxport.golden._store": [(9, "jax", "in read()", True)]},
    "a function-level import of a module outside the harness": {
        _C: [(3, "jaxport.golden._store", MODULE_LEVEL, True)],
        "jaxport.golden._store": [(9, "jaxport.golden._parsing", "in read()", True)],
        "jaxport.golden._parsing": [(1, "jax", MODULE_LEVEL, True)]},
    "a worker module no controller module imports": {
        _C: [], WORKER + "._engine": [(1, "jax", MODULE_LEVEL, True)]},
}


@pytest.mark.parametrize("table", list(_NOT_REACHED.values()), ids=list(_NOT_REACHED))
def test_the_controller_rule_follows_only_what_runs(table):
  assert controller_reach_problems(table) == []


@pytest.mark.parametrize("where,runtime", [(MODULE_LEVEL, True), ("in f()", True),
                                           (MODULE_LEVEL, False)],
                         ids=["module level", "in a function", "under TYPE_CHECKING"])
def test_the_worker_rule_catches_a_planted_controller_import(where, runtime):
  table = {WORKER + "._planted": [(4, CONTROLLER + "._session", where, runtime)],
           CONTROLLER + "._session": []}
  assert worker_controller_imports(table)
  assert worker_controller_imports({WORKER + "._planted": [
      (4, "jaxport.harness._protocol._answers", where, runtime)]}) == []


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
    "jaxport._isolation._preloaded_parent": "a forked child's sys.path, as its PYTHONPATH gives it",
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
    for node in walked(parsed(path.read_text())):
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
  for node in walked(parsed(path.read_text(encoding="utf-8"))):
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
  for node in walked(tree):
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and (
        node.value.id in JUDGED):
      names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.ImportFrom):
      names |= {a.asname for a in node.names if a.name in JUDGED and a.asname}
  return names


# Calls that read with a member rather than choose it (``counts.get(Status.WARN, 0)``).
_READING_CALLS = frozenset({"get", "index", "count", "has", "has_any", "__contains__",
                            "isinstance", "sorted", "max", "min"})


def _vocabulary_kind(name: str, tree: ast.AST) -> str:
  """``Status`` or ``FindingKind``: which vocabulary ``name`` (itself or an alias) is."""
  if name in JUDGED:
    return name
  for node in walked(tree):
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets):
      return node.value.id
    if isinstance(node, ast.ImportFrom):
      for a in node.names:
        if a.asname == name:
          return a.name
  return name


def verdict_choices(source: str, where: str) -> list[str]:
  """Where ``source`` builds a ``Finding`` or chooses a ``Status`` or ``FindingKind``
  member: returns it, assigns it, passes it as a keyword or a dict's value. Reading one
  (comparing with it, asking whether an outcome has it, mapping it to what a page shows,
  ``Status(text)`` from JSON) is no choice."""
  tree = parsed(source)
  names = _vocabulary_names(tree)
  parents = {c: node for node in walked(tree) for c in ast.iter_child_nodes(node)}
  found = []
  for node in walked(tree):
    if isinstance(node, ast.Call):
      f = node.func
      called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
      if called == "Finding":
        found.append(f"{where}:{node.lineno}: builds a Finding")
      if (isinstance(f, ast.Name) and f.id in names and node.args
          and isinstance(node.args[0], ast.Constant)):
        found.append(f"{where}:{node.lineno}: chooses {f.id}({node.args[0].value!r})")
      if called not in _READING_CALLS:
        for arg in node.args:
          if (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)
              and arg.value.id in names and arg.attr.isupper()
              and _vocabulary_kind(arg.value.id, tree) == "Status"):
            found.append(f"{where}:{node.lineno}: chooses {arg.value.id}.{arg.attr}")
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
    "outcome = outcome.with_status(Status.FAIL)",
    "status = Status('fail')",
], ids=["a finding", "a returned status", "a kind by an alias", "a dict value", "an import alias",
        "a status passed positionally", "a status from a literal"])
def test_the_judge_rule_catches_a_planted_choice(planted):
  assert verdict_choices(planted, "planted.py"), planted


@pytest.mark.parametrize("read", [
    "failed = outcome.status is Status.FAIL",
    "K = FindingKind\nbad = [f for f in e.findings if f.kind in (K.COMPATIBILITY_BREAK, K.UPGRADED)]",
    "upgraded = outcome.has(FindingKind.UPGRADED)",
    "shown = {Status.PASS: 'ok', Status.FAIL: 'PROBLEM'}",
    "status = Status(d['status'])",
    "finding = Finding.from_json(d)",
    "warned = counts.get(Status.WARN, 0)",
], ids=["a comparison", "membership", "a query", "a display key", "from JSON", "a finding read",
        "a count read"])
def test_the_judge_rule_lets_reading_and_displaying_be(read):
  assert verdict_choices(read, "read.py") == []


COMPAT = PACKAGE / "_jaxcompat"


def _version_reads(path: pathlib.Path) -> list[str]:
  """Where ``path`` reads an installed version itself: ``jax.__version__`` or a
  distribution's metadata version."""
  found = []
  for node in walked(parsed(path.read_text(encoding="utf-8"))):
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
OTHER_SLASHED_TEXT = {PACKAGE / "harness" / "_controller" / "_shard.py": "a shard spec I/N"}


def _slash_splits(path: pathlib.Path) -> list[str]:
  """Where ``path`` takes '/'-separated text apart itself (``split``, ``rsplit``,
  ``partition`` or ``count`` of "/"): the entry id's own module does that, once."""
  found = []
  for node in walked(parsed(path.read_text(encoding="utf-8"))):
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "rsplit", "partition", "rpartition", "count")
        and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "/"):
      found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {ast.unparse(node)}")
  return found


def test_only_the_entry_id_module_splits_entry_ids():
  assert not [w for p in PACKAGE.rglob("*.py")
              if p != ENTRY_ID_MODULE and p not in OTHER_SLASHED_TEXT for w in _slash_splits(p)]
  assert _slash_splits(ENTRY_ID_MODULE)  # the check sees what it looks for


# The import-cycle rule: no cycle among jaxport's modules (and the pytest entry point), counting
# imports in functions and under TYPE_CHECKING, but the record's one documented upward arrow
# (RECORD to RECORD_METHOD_MODULES).
ENTRY_POINT = "jaxport_pytest"
ENTRY_POINT_FILE = PACKAGE.parent / "jaxport_pytest" / "__init__.py"


def cycles(table: dict[str, set[str]]) -> list[list[str]]:
  """Each strongly connected group of ``table`` (module -> the modules it imports) with more
  than one module, as one cycle through it: a path of imports from its first module (in
  sorted order) back to it. Tarjan's algorithm, iterative so a deep table cannot overflow."""
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on_stack: set[str] = set()
  groups: list[set[str]] = []
  for root in sorted(table):
    if root in index:
      continue
    work = [(root, iter(sorted(table.get(root, ()))))]
    index[root] = low[root] = len(index)
    stack.append(root)
    on_stack.add(root)
    while work:
      node, targets = work[-1]
      step = next(targets, None)
      if step is not None:
        if step not in index:
          index[step] = low[step] = len(index)
          stack.append(step)
          on_stack.add(step)
          work.append((step, iter(sorted(table.get(step, ())))))
        elif step in on_stack:
          low[node] = min(low[node], index[step])
        continue
      work.pop()
      if work:
        low[work[-1][0]] = min(low[work[-1][0]], low[node])
      if low[node] == index[node]:
        group = set()
        while True:
          member = stack.pop()
          on_stack.discard(member)
          group.add(member)
          if member == node:
            break
        if len(group) > 1:
          groups.append(group)
  return [_cycle_through(sorted(g), g, table) for g in groups]


def _cycle_through(members: list[str], group: set[str], table: dict[str, set[str]]) -> list[str]:
  """A shortest path of imports inside ``group`` from its first member back to it."""
  start = members[0]
  came_from: dict[str, str] = {}
  todo = [start]
  while todo:
    nxt = []
    for node in todo:
      for target in sorted(table.get(node, ())):
        if target not in group or target in came_from:
          continue
        came_from[target] = node
        nxt.append(target)
    if start in came_from:
      break
    todo = nxt
  path, node = [start], came_from[start]
  while node != start:
    path.append(node)
    node = came_from[node]
  return [start, *reversed(path[1:]), start]


def _entry_point_imports() -> list[tuple[int, str, str, bool]]:
  visitor = _Imports(ENTRY_POINT, True)
  visitor.visit(parsed(ENTRY_POINT_FILE.read_text()))
  return visitor.found


def import_table() -> dict[str, set[str]]:
  """Module -> the jaxport modules (and the entry point) it imports, anywhere in it."""
  found = {m: [(name, runtime) for _, name, _, runtime in IMPORTS[m]] for m in IMPORTS}
  found[ENTRY_POINT] = [(name, runtime) for _, name, _, runtime in _entry_point_imports()]
  table: dict[str, set[str]] = {}
  for module, names in found.items():
    targets = set()
    for name, _ in names:
      if name == ENTRY_POINT or name.startswith(ENTRY_POINT + "."):
        targets.add(ENTRY_POINT)
      elif name == "jaxport" or name.startswith("jaxport."):
        targets.add(_resolve(name))
    targets.discard(module)
    if module == RECORD:
      targets -= set(RECORD_METHOD_MODULES)
    table[module] = targets
  return table


def test_no_import_cycle_but_the_records():
  found = cycles(import_table())
  assert not found, ("import cycles (move the shared piece to a lower module):\n"
                     + "\n".join(" -> ".join(c) for c in found))


def test_the_cycle_rule_finds_a_planted_cycle_and_names_its_path():
  table = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set(), "e": {"e2"}, "e2": {"e"},
           "f": {"a"}}
  assert sorted(cycles(table)) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
  assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
  # The live table holds the documented one once its upward arrow is put back.
  table = import_table()
  table[RECORD] |= set(RECORD_METHOD_MODULES)
  assert any(RECORD in c for c in cycles(table))


def test_the_cycle_rule_counts_imports_in_functions_and_under_type_checking():
  planted = {"jaxport._limits": "import typing\nif typing.TYPE_CHECKING:\n"
                                "  from jaxport.errors import JaxportError\n",
             "jaxport.errors": "def f():\n  from jaxport._limits import name\n"}
  table = {}
  for module, source in planted.items():
    visitor = _Imports(module, False)
    visitor.visit(parsed(source))
    table[module] = {_resolve(n) for _, n, _, _ in visitor.found}
  assert cycles(table) == [["jaxport._limits", "jaxport.errors", "jaxport._limits"]]


# The JAXPORT_* variables: read only in the one module that names them (writing one into a
# child's environment may happen anywhere).
ENVIRONMENT_MODULE = PACKAGE / "_environment.py"
PYTHON_TREES = (PACKAGE, PACKAGE.parent / "jaxport_pytest", PACKAGE.parent / "jaxport_in_release")
VARIABLE_PREFIX = "JAXPORT_"


def _python_files() -> list[pathlib.Path]:
  return [p for tree in PYTHON_TREES for p in sorted(tree.rglob("*.py"))]


def variable_names(source: str) -> set[str]:
  """The names ``source`` binds to a ``"JAXPORT_..."`` literal (``ROOT_ENV = "JAXPORT_..."``)."""
  return {t.id for node in walked(parsed(source)) if isinstance(node, ast.Assign)
          and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
          and node.value.value.startswith(VARIABLE_PREFIX)
          for t in node.targets if isinstance(t, ast.Name)}


def _is_environ(node: ast.AST) -> bool:
  return ((isinstance(node, ast.Attribute) and node.attr == "environ")
          or (isinstance(node, ast.Name) and node.id == "environ"))


def variable_reads(source: str, where: str, names: set[str] = frozenset()) -> list[str]:
  """Where ``source`` reads a JAXPORT_* variable of the process environment (``os.environ.get``,
  ``os.environ[...]``, ``in os.environ``, ``os.getenv``), its key a ``"JAXPORT_..."`` literal
  or one of ``names`` (the names bound to such a literal)."""
  def named(key: ast.AST | None) -> bool:
    return ((isinstance(key, ast.Constant) and isinstance(key.value, str)
             and key.value.startswith(VARIABLE_PREFIX))
            or (isinstance(key, ast.Name) and key.id in names)
            or (isinstance(key, ast.Attribute) and key.attr in names))

  found = []
  for node in walked(parsed(source)):
    key = None
    if isinstance(node, ast.Call) and node.args:
      f = node.func
      if (isinstance(f, ast.Attribute) and f.attr in ("get", "pop") and _is_environ(f.value)) or (
          (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) == "getenv"):
        key = node.args[0]
    elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(
        node.ctx, ast.Load):
      key = node.slice
    elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators) and any(
        isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
      key = node.left
    if named(key):
      found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
  return found


def test_jaxport_variables_are_read_only_in_the_environment_module():
  names = set().union(*(variable_names(p.read_text()) for p in _python_files()))
  wrong = [w for p in _python_files() if p != ENVIRONMENT_MODULE
           for w in variable_reads(p.read_text(), str(p.relative_to(PACKAGE.parent)), names)]
  assert not wrong, ("read JAXPORT_* variables through jaxport._environment's accessors:\n"
                     + "\n".join(wrong))
  # The check sees what it looks for: the environment module reads them.
  assert variable_reads(ENVIRONMENT_MODULE.read_text(), "_environment.py", names)


REPOSITORY_TREES = (PACKAGE.parent / "harness", PACKAGE.parent / "tools")
REPOSITORY_ENVIRONMENT = PACKAGE.parent / "harness" / "_environment.py"


def test_the_repositorys_own_variables_are_read_only_in_its_environment_module():
  files = [p for tree in REPOSITORY_TREES for p in sorted(tree.rglob("*.py"))]
  names = set().union(*(variable_names(p.read_text()) for p in files))
  wrong = [w for p in files if p != REPOSITORY_ENVIRONMENT
           for w in variable_reads(p.read_text(), str(p.relative_to(PACKAGE.parent)), names)]
  assert not wrong, ("read JAXPORT_* variables in harness/ and tools/ through "
                     "harness/_environment.py:\n" + "\n".join(wrong))
  assert variable_reads(REPOSITORY_ENVIRONMENT.read_text(), "_environment.py", names)


@pytest.mark.parametrize("planted", [
    "import os\nroot = os.environ.get('JAXPORT_RELEASE_ENVS')",
    "import os\nroot = os.environ['JAXPORT_RELEASE_ENVS']",
    "import os\nset_here = 'JAXPORT_INSTALLER' in os.environ",
    "import os\npython = os.getenv('JAXPORT_RELEASE_PYTHON', 'python3')",
    "from os import environ\nROOT_ENV = 'JAXPORT_RELEASE_ENVS'\nroot = environ.get(ROOT_ENV)",
], ids=["get", "subscript", "membership", "getenv", "a named constant"])
def test_the_variable_rule_catches_a_planted_read(planted):
  assert variable_reads(planted, "planted.py", variable_names(planted)), planted


def test_the_variable_rule_lets_a_child_environment_be_written():
  written = ("import os\nenv = dict(os.environ)\n"
             "env['JAXPORT_WORKER_PARENT_PID'] = str(os.getpid())\n"
             "os.environ['JAXPORT_INSTALLER'] = 'pip'\nflags = os.environ.get('XLA_FLAGS')")
  assert variable_reads(written, "written.py") == []


def jaxlib_version_reads(source: str, where: str) -> list[str]:
  """Where ``source`` reads jaxlib's version itself: ``jaxlib.version`` (imported or as an
  attribute), ``jaxlib.__version__``, or a ``...version("jaxlib")`` call."""
  found = []
  for node in walked(parsed(source)):
    text = None
    if isinstance(node, ast.Attribute) and (
        (node.attr in ("version", "__version__") and ast.unparse(node.value) == "jaxlib")
        or (node.attr == "__version__" and ast.unparse(node.value).startswith("jaxlib"))):
      text = ast.unparse(node)
    elif isinstance(node, ast.ImportFrom) and (node.module == "jaxlib.version" or (
        node.module == "jaxlib" and any(a.name in ("version", "__version__") for a in node.names))):
      text = f"from {node.module} import ..."
    elif isinstance(node, ast.Import) and any(a.name == "jaxlib.version" for a in node.names):
      text = "import jaxlib.version"
    elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and (
        node.args[0].value == "jaxlib") and (
        node.func.attr if isinstance(node.func, ast.Attribute)
        else getattr(node.func, "id", "")).endswith("version"):
      text = ast.unparse(node)
    if text is not None:
      found.append(f"{where}:{node.lineno}: {text}")
  return found


# Where jaxlib's version may be read outside _jaxcompat, each with its reason.
JAXLIB_READERS_OUTSIDE_COMPAT = {
    PACKAGE.parent / "jaxport_in_release" / "recorder.py":
        "it runs in a release's environment, where jaxport (and so _jaxcompat) is not installed",
}


def test_the_jaxlib_version_is_read_only_behind_jaxcompat():
  outside = [p for p in _python_files()
             if COMPAT not in p.parents and p not in JAXLIB_READERS_OUTSIDE_COMPAT]
  wrong = [w for p in outside
           for w in jaxlib_version_reads(p.read_text(), str(p.relative_to(PACKAGE.parent)))]
  assert not wrong, ("read jaxlib's version with _jaxcompat._version.installed_jaxlib_version:\n"
                     + "\n".join(wrong))
  assert [w for p in COMPAT.rglob("*.py") for w in jaxlib_version_reads(p.read_text(), p.name)]


@pytest.mark.parametrize("planted", [
    "from jaxlib import version as jaxlib_version\nkey = jaxlib_version.__version__",
    "import jaxlib\nkey = jaxlib.__version__",
    "import jaxlib.version\nkey = jaxlib.version.__version__",
    "from importlib.metadata import version\nkey = version('jaxlib')",
    "version = distribution_version\nkey = version('jaxlib')",
], ids=["from jaxlib import version", "jaxlib.__version__", "jaxlib.version", "metadata",
        "an aliased reader"])
def test_the_jaxlib_rule_catches_a_planted_read(planted):
  assert jaxlib_version_reads(planted, "planted.py"), planted


def hand_built_ids(source: str, where: str) -> list[str]:
  """Where ``source`` assembles an entry id from path parts itself: ``"/".join(...)`` over a
  ``.parts`` slice or over ``split_parts(...)`` (``EntryId.from_folder`` makes the id of an
  entry folder)."""
  found = []
  for node in walked(parsed(source)):
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


def uncommented_local_imports(source: str, where: str) -> list[str]:
  """Where ``source`` imports a jaxport module inside a function with no comment saying why:
  none on the import's own lines, nor on the line above the run of imports it belongs to."""
  lines = source.splitlines()
  local: list[ast.stmt] = []

  def visit(node: ast.AST, in_function: bool) -> None:
    for child in ast.iter_child_nodes(node):
      if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
        names = ([child.module or ""] if isinstance(child, ast.ImportFrom)
                 else [a.name for a in child.names])
        if (isinstance(child, ast.ImportFrom) and child.level) or any(
            n == "jaxport" or n.startswith("jaxport.") for n in names):
          local.append(child)
      visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

  visit(parsed(source), False)
  import_lines = {n for node in local for n in range(node.lineno, node.end_lineno + 1)}
  found = []
  for node in local:
    if any("#" in lines[n - 1] for n in range(node.lineno, node.end_lineno + 1)):
      continue
    above = node.lineno - 1
    while above in import_lines:
      above -= 1
    if above >= 1 and lines[above - 1].strip().startswith("#"):
      continue
    found.append(f"{where}:{node.lineno}: {lines[node.lineno - 1].strip()}")
  return found


def test_a_function_local_import_of_jaxport_says_why():
  wrong = [w for m in IMPORTS if m not in GENERATED
           for w in uncommented_local_imports(MODULES[m].read_text(),
                                              str(MODULES[m].relative_to(PACKAGE.parent)))]
  entry_point = uncommented_local_imports(ENTRY_POINT_FILE.read_text(), "jaxport_pytest")
  assert not wrong + entry_point, (
      "import these at module level, or say in a comment why they must stay local:\n"
      + "\n".join(wrong + entry_point))


@pytest.mark.parametrize("planted, caught", [
    ("def f():\n  from jaxport.golden import EntryId\n  return EntryId\n", True),
    ("def f():\n  import jaxport.errors\n", True),
    ("class C:\n  def f(self):\n    from . import _store\n", True),
    ("def f():\n  # local: imports jax, which pytest's process must not\n"
     "  from jaxport.export import _lower\n  from jaxport.calling import _call\n", False),
    ("def f():\n  from jaxport.export import _lower  # local: imports jax\n", False),
    ("def f():\n  import json\n", False),
    ("from jaxport import errors\n", False),
], ids=["from-import", "import", "relative in a method", "a commented run", "a trailing comment",
        "not jaxport", "module level"])
def test_the_local_import_rule_catches_a_planted_uncommented_import(planted, caught):
  assert bool(uncommented_local_imports(planted, "planted.py")) is caught
