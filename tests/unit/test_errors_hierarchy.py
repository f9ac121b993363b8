"""Every exception jaxport defines derives from ``JaxportError`` and every warning from
``JaxportWarning``, so ``except JaxportError`` and one warnings filter cover them all."""

from __future__ import annotations

import ast
import builtins
import importlib
import textwrap
import warnings
from pathlib import Path

import pytest

from _parsed_sources import parsed, walked

from jaxport import errors

REPO = Path(__file__).resolve().parents[2]
TREES = ("jaxport", "jaxport_pytest", "jaxport_in_release", "harness")
ROOTS = {"JaxportError", "JaxportWarning"}
# Modules that run without jaxport installed (inside an older jax release's venv, loaded by
# path), so their exceptions cannot derive from jaxport's: module -> why.
WITHOUT_JAXPORT = {
    "jaxport_in_release/replayer.py": "runs inside old release venvs, where jaxport does not "
                                      "install",
    "jaxport_in_release/tf_envelope.py": "runs inside TensorFlow release environments, which "
                                         "hold no jaxport",
}


def _builtin_exception(name: str) -> bool:
  value = getattr(builtins, name, None)
  return isinstance(value, type) and issubclass(value, BaseException)


def _base_name(node: ast.expr) -> str | None:
  if isinstance(node, ast.Name):
    return node.id
  if isinstance(node, ast.Attribute):
    return node.attr
  return None


def exception_classes(files: dict[str, str]) -> dict[str, tuple[str, bool]]:
  """``{"path:line Class": (path, derives from a jaxport root)}`` for every class in ``files``
  (path -> source) that derives, through classes of these files, from a builtin exception or
  warning. Classes are matched by name across the files."""
  bases: dict[str, set[str]] = {}
  defined = []
  for path, source in files.items():
    for node in walked(parsed(source)):
      if isinstance(node, ast.ClassDef):
        names = {b for b in map(_base_name, node.bases) if b is not None}
        bases.setdefault(node.name, set()).update(names)
        defined.append((path, node.lineno, node.name))

  def reaches(name: str, goal, seen: frozenset = frozenset()) -> bool:
    if goal(name):
      return True
    return name not in seen and any(reaches(b, goal, seen | {name}) for b in bases.get(name, ()))

  out = {}
  for path, line, name in defined:
    if name in ROOTS:
      continue
    if reaches(name, _builtin_exception):
      out[f"{path}:{line} {name}"] = (path, reaches(name, ROOTS.__contains__))
  return out


def _tree_files() -> dict[str, str]:
  return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8")
          for tree in TREES for p in sorted((REPO / tree).rglob("*.py"))}


def test_every_exception_and_warning_class_derives_from_a_jaxport_root():
  classes = exception_classes(_tree_files())
  assert len(classes) > 20  # the walk found the hierarchy
  stray = [where for where, (path, ok) in classes.items() if not ok and path not in WITHOUT_JAXPORT]
  assert stray == [], f"derive these from jaxport.errors.JaxportError or JaxportWarning: {stray}"


def test_the_walk_finds_a_planted_stray_exception_and_warning():
  planted = {"pkg/bad.py": textwrap.dedent("""
      from jaxport.errors import JaxportError
      class Base(ValueError): pass
      class Stray(Base): pass
      class Loud(UserWarning): pass
      class Fine(JaxportError, KeyError): pass
      class NotAnError: pass
  """)}
  found = {where.split()[1]: ok for where, (_, ok) in exception_classes(planted).items()}
  assert found == {"Base": False, "Stray": False, "Loud": False, "Fine": True}


@pytest.mark.parametrize("module, name", [
    ("jaxport.harness._controller._shard", "ShardError"),
    ("jaxport.harness._controller._session", "HarnessWarning"),
    ("jaxport.harness._judge._expectations", "ExpectedStatusError"),
    ("jaxport._json", "JsonError"),
    ("jaxport.upgrades._table", "RuleTableError"),
])
def test_moved_classes_stay_importable_where_they_were(module, name):
  assert getattr(importlib.import_module(module), name) is getattr(errors, name)


@pytest.mark.parametrize("name", ["ShardError", "ExpectedStatusError", "JsonError",
                                  "RuleTableError", "WorkerAnswerError"])
def test_errors_that_were_value_errors_still_are(name):
  cls = getattr(errors, name)
  assert issubclass(cls, errors.JaxportError) and issubclass(cls, ValueError)


def test_warnings_share_one_root_and_keep_their_builtin_category():
  assert issubclass(errors.UntestedJaxWarning, errors.JaxportWarning)
  assert issubclass(errors.HarnessWarning, errors.JaxportWarning)
  assert issubclass(errors.ExpiredEnvelopeWarning, DeprecationWarning)
  with warnings.catch_warnings():
    warnings.simplefilter("error", errors.JaxportWarning)
    with pytest.raises(errors.HarnessWarning):
      warnings.warn(errors.HarnessWarning("drift"), stacklevel=1)
