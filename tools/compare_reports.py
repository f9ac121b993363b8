"""Compare compat reports written before and after a change to the harness.

    python tools/compare_reports.py BEFORE.json AFTER.json [MORE.json ...] [--ignore KEY ...]

Prints the sha256 digest of each report as written, and of each with the ignored keys taken
out (a dotted path such as ``format``, ``entries[].findings`` or
``entries[].release.policy_ok``), then every path at which the first report and each later
one still differ. Exit status 1 when any still differ.
Meant to be run by hand around a refactoring: same machine, same jax, a fixed
``--compat-today``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from typing import Any


def digest(report: Any) -> str:
  return hashlib.sha256(json.dumps(report, sort_keys=True).encode()).hexdigest()


def without(report: dict[str, Any], ignored: list[str]) -> dict[str, Any]:
  """``report`` without the ignored keys: a dotted path of keys, where ``LIST[]`` stands for
  every item of that list (``format``, ``entries[].findings``,
  ``entries[].release.policy_ok``)."""
  out = copy.deepcopy(report)
  for key in ignored:
    _drop(out, key.split("."))
  return out


def _drop(node: Any, path: list[str]) -> None:
  """Remove the key at ``path`` below ``node``, wherever it is present."""
  head, rest = path[0], path[1:]
  each = head.endswith("[]")
  name = head[:-2] if each else head
  if not isinstance(node, dict) or name not in node:
    return
  if not rest:
    node.pop(name)
    return
  children = node[name] if each and isinstance(node[name], list) else [node[name]]
  for child in children:
    _drop(child, rest)


def differences(a: Any, b: Any, path: str = "") -> list[str]:
  """The paths at which ``a`` and ``b`` differ (the first 50)."""
  if isinstance(a, dict) and isinstance(b, dict):
    out = []
    for key in sorted(set(a) | set(b)):
      if key not in a or key not in b:
        out.append(f"{path}.{key}: only in {'the second' if key in b else 'the first'}")
      else:
        out += differences(a[key], b[key], f"{path}.{key}")
    return out[:50]
  if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
    return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")][:50]
  return [] if a == b else [f"{path or '.'}: {json.dumps(a)[:120]} != {json.dumps(b)[:120]}"]


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("reports", nargs="+", metavar="REPORT.json")
  parser.add_argument("--ignore", action="append", default=[], metavar="KEY",
                      help="a key the change adds or changes on purpose (repeatable)")
  args = parser.parse_args(argv)
  loaded = []
  for path in args.reports:
    with open(path, encoding="utf-8") as f:
      loaded.append(json.load(f))
  normal = [without(r, args.ignore) for r in loaded]
  for path, report, norm in zip(args.reports, loaded, normal):
    print(f"{path}: sha256 {digest(report)}; without {args.ignore or 'nothing'}: {digest(norm)}")
  differ = False
  for path, norm in zip(args.reports[1:], normal[1:]):
    found = differences(normal[0], norm)
    differ |= bool(found)
    print(f"{args.reports[0]} against {path}: " + ("the same" if not found else
                                                  f"{len(found)} differences"))
    for line in found:
      print(f"  {line}")
  return 1 if differ else 0


if __name__ == "__main__":
  sys.exit(main())
