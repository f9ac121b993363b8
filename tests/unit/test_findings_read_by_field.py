"""Where a finding came from is a field (its subject), never read back out of its text: no
code in the report package or the update step matches on a finding's message."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT_ATTRIBUTES = {"text", "message", "messages", "detail"}
TEXT_METHODS = {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "split",
                "find", "index"}


def _reads_text(node: ast.AST) -> bool:
  """Whether ``node`` is (an item of) a finding's text: ``x.text``, ``f.message``, ``m`` of
  ``e.messages``..."""
  if isinstance(node, ast.Subscript):
    return _reads_text(node.value)
  return isinstance(node, ast.Attribute) and node.attr in TEXT_ATTRIBUTES


def text_matches(source: str, filename: str) -> list[str]:
  """Places where ``source`` matches on a finding's text: a string method or a regex call on
  it, or a loop variable over ``.messages`` that is then matched."""
  tree = ast.parse(source, filename)
  names = {t.id for node in ast.walk(tree) if isinstance(node, (ast.For, ast.comprehension))
           and _reads_text(node.iter) for t in ast.walk(node.target) if isinstance(t, ast.Name)}
  out = []
  for node in ast.walk(tree):
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
      continue
    receiver = node.func.value
    on_text = _reads_text(receiver) or (isinstance(receiver, ast.Name) and receiver.id in names)
    if node.func.attr in TEXT_METHODS and on_text:
      out.append(f"{filename}:{node.lineno}: .{node.func.attr}() on a finding's text")
    is_regex = (isinstance(receiver, ast.Name) and receiver.id == "re") or node.func.attr in {
        "match", "fullmatch", "search", "findall", "finditer", "sub"}
    if is_regex and any(_reads_text(a) or (isinstance(a, ast.Name) and a.id in names)
                        for a in node.args):
      out.append(f"{filename}:{node.lineno}: a regex on a finding's text")
  return sorted(out, key=lambda hit: int(hit.split(":")[1]))


def _files():
  yield from sorted((ROOT / "jaxport" / "report").glob("*.py"))
  yield ROOT / "jaxport" / "harness" / "_controller" / "_update.py"


def test_no_report_or_update_code_matches_on_finding_text():
  found = [hit for path in _files()
           for hit in text_matches(path.read_text(encoding="utf-8"), path.name)]
  assert found == []


def test_the_scan_finds_planted_matches():
  planted = '''
import re
def lowering(findings, e):
  a = [f for f in findings if f.text.startswith("current lowering:")]
  b = [f.message.removeprefix("current lowering: ") for f in findings]
  c = [re.fullmatch(r"\\[(\\w+)\\] (.*)", m) for m in e.messages]
  for m in e.messages:
    if m.startswith("[expired]"):
      pass
  return a, b, c
'''
  hits = text_matches(planted, "planted.py")
  assert [h.split(":")[1] for h in hits] == ["4", "5", "6", "8"], hits
