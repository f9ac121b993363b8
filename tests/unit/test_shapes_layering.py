"""The symbolic-shape core stays free of jax; only the bridge touches jax internals."""

import ast
import pathlib

import jaxport.shapes

SHAPES = pathlib.Path(jaxport.shapes.__file__).parent
CORE = ("_expr.py", "_parser.py", "_decision.py", "_scope.py", "_solver.py", "_api.py")


def imported_modules(path):
  tree = ast.parse(path.read_text())
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module:
      yield node.module


def test_core_modules_do_not_import_jax():
  for name in CORE:
    jax_imports = [m for m in imported_modules(SHAPES / name) if m == "jax" or m.startswith("jax.")]
    assert not jax_imports, f"{name} imports {jax_imports}"


def test_only_the_bridge_imports_jax_internals():
  for path in SHAPES.glob("*.py"):
    internal = [m for m in imported_modules(path) if m.startswith("jax._src")]
    assert path.name == "_bridge.py" or not internal, f"{path.name} imports {internal}"


def test_nothing_imports_jax_export_or_shape_poly():
  for path in pathlib.Path(jaxport.__file__).parent.rglob("*.py"):
    bad = [m for m in imported_modules(path)
           if m.startswith(("jax.export", "jax._src.export")) or m.endswith("shape_poly")]
    assert not bad, f"{path} imports {bad}"
