"""The installed package's messages (errors, warnings, log lines, help and report text) name
concepts and public commands, never a file of jaxport's repository that a downstream user does
not have (its case modules, expectations table, tools, golden store)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

from _parsed_sources import parsed, walked

REPO = Path(__file__).resolve().parents[2]
INSTALLED = ("jaxport", "jaxport_pytest")
# What a message must not say, with the reason.
FORBIDDEN = {
    r"harness/": "the repository's harness folder (cases, expectations table, tools)",
    r"compat_data/": "the repository's golden store",
    r"tools/": "the repository's tools",
    r"python -m harness": "a repository tool run as a module",
    r"(?<![\w-])--strict\b": "the harness option is --compat-strict",
    r"(?<![\w-])--record\b": "the harness option is --compat-record",
    r"\bjaxport/[\w/]+\.(?:py|json)\b": "a source file of the package, not a public name",
    r"\b(?:expected_status|release_matrix|deviations)\.json\b": "a data file of the repository",
}
_PATTERN = re.compile("|".join(f"(?:{p})" for p in FORBIDDEN))


def _docstrings(tree: ast.AST) -> set[int]:
  """The ids of the docstring nodes: documentation, not messages."""
  out = set()
  for node in walked(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
      body = node.body
      if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
          and isinstance(body[0].value.value, str)):
        out.add(id(body[0].value))
  return out


def scan(source: str, name: str = "<module>") -> list[str]:
  """``"name:line: text"`` for every string constant or f-string of ``source`` (docstrings
  aside) that says something forbidden."""
  tree = parsed(source)
  skip = _docstrings(tree)
  found = []
  for node in walked(tree):
    if isinstance(node, ast.JoinedStr):
      skip.update(id(v) for v in node.values)
      text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
      text = node.value
    else:
      continue
    m = _PATTERN.search(text)
    if m:
      found.append(f"{name}:{node.lineno}: {m.group(0)!r} in {text[:120]!r}")
  return found


def scan_tree(root: Path) -> list[str]:
  return [hit for path in sorted(root.rglob("*.py"))
          for hit in scan(path.read_text(encoding="utf-8"), str(path.relative_to(root.parent)))]


def test_no_message_of_the_installed_package_names_a_repository_path():
  found = [hit for package in INSTALLED for hit in scan_tree(REPO / package)]
  assert found == [], "reword these to name the concept and the public command:\n" + "\n".join(found)


def test_the_scan_fails_on_a_planted_message_and_spares_docstrings(tmp_path):
  package = tmp_path / "planted"
  package.mkdir()
  (package / "__init__.py").write_text(textwrap.dedent('''
      """Docs may say where the repository keeps things: harness/cases/."""

      def record(case):
        """Recorded by pytest harness/ --record."""
        if case is None:
          raise ValueError(f"case {case}: add it to harness/cases/ and run "
                           "pytest --strict")
        return "fine: pytest --compat-strict --compat-record"
  '''))
  found = scan_tree(package)
  assert len(found) == 1 and found[0].startswith("planted/__init__.py:7: 'harness/'"), found


def test_each_forbidden_form_is_caught():
  samples = ["see harness/expected_status.json", "python -m harness.tools.shards merge",
             "fails with --strict", "pytest --record", "jaxport/custom_calls/stable_targets.json",
             "restore compat_data/cpu", "run tools/conformance", "release_matrix.json"]
  for text in samples:
    assert scan(f"x = {text!r}"), text
  for text in ["--compat-strict", "--compat-record", "stable_targets.json", "docs/harness.md"]:
    assert not scan(f"x = {text!r}"), text
