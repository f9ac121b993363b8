"""The upgrade rules as data: loading and validating ``rules.json``.

Each rule maps one family of legacy custom calls (one target per dtype letter)
onto its successor. The table says which operands the legacy call passes and
what each one is (a data operand kept by the successor, a size the successor
reads from operand types, or a flag that becomes an attribute), and how the
legacy results line up with the successor's. Behaviour that is more than a
mapping lives in one small function per rule (``_rules.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from importlib import resources
from typing import Any

from jaxport.errors import RuleTableError as RuleTableError  # raised here, defined with the others

_DATA_FILE = "rules.json"
TABLE_FORMAT = 1
LETTERS = "sdcz"
COMPLEX_LETTERS = "cz"
SIZE_PREFIX = "size:"
FLAG_PREFIX = "flag:"


@dataclasses.dataclass(frozen=True)
class Operand:
  """One legacy operand: its name and role (``data``, ``size`` or ``flag``)."""
  name: str
  role: str


@dataclasses.dataclass(frozen=True)
class Rule:
  """One upgrade rule, for the dtype letters it lists."""
  name: str
  legacy: str                          # target pattern, "?" is the dtype letter
  letters: str
  successor: str
  operands: tuple[Operand, ...]
  sizes: dict[str, str]                # size operand -> "batch(x)" or "dim(x,k)"
  legacy_results: dict[str, tuple[str, ...]]   # "real"/"complex" -> names
  results: dict[str, tuple[str, ...]]
  zero_results: tuple[str, ...]        # legacy results the successor drops, always 0
  new_operands: tuple[str, ...]
  aliases: dict[str, str]              # successor result -> successor operand it overwrites
  function: str

  def legacy_target(self, letter: str) -> str:
    return self.legacy.replace("?", letter)

  def successor_target(self, letter: str) -> str:
    return self.successor.replace("?", letter)

  @staticmethod
  def kind(letter: str) -> str:
    return "complex" if letter in COMPLEX_LETTERS else "real"


def _bad(rule: str, what: str) -> RuleTableError:
  return RuleTableError(f"jaxport/upgrades/{_DATA_FILE}, rule {rule!r}: {what}")


def _operand(text: str) -> Operand:
  for prefix, role in ((SIZE_PREFIX, "size"), (FLAG_PREFIX, "flag")):
    if text.startswith(prefix):
      return Operand(text[len(prefix):], role)
  return Operand(text, "data")


def parse_rule(row: dict[str, Any]) -> Rule:
  """Validate one row of the table."""
  name = row.get("name", "?")
  required = {"name", "legacy", "letters", "successor", "operands", "sizes", "legacy_results",
              "results", "new_operands", "aliases", "function"}
  missing = required - set(row)
  if missing:
    raise _bad(name, f"missing keys {sorted(missing)}")
  if not set(row["letters"]) <= set(LETTERS) or "?" not in row["legacy"]:
    raise _bad(name, "letters must be a subset of 'sdcz' and legacy must contain '?'")
  operands = tuple(_operand(t) for t in row["operands"])
  names = [o.name for o in operands]
  data = {o.name for o in operands if o.role == "data"}
  if set(row["new_operands"]) - data:
    raise _bad(name, f"new_operands {row['new_operands']} must be data operands of {names}")
  sizes = {o.name for o in operands if o.role == "size"}
  if set(row["sizes"]) - sizes:
    raise _bad(name, f"sizes names {sorted(row['sizes'])} that are not size operands")
  zero = tuple(row.get("zero_results", ()))
  for letter in row["letters"]:
    if not row["legacy_results"][Rule.kind(letter)]:
      raise _bad(name, f"letter {letter!r} is {Rule.kind(letter)}, but legacy_results has no "
                       f"{Rule.kind(letter)} list")
  for kind in ("real", "complex"):
    legacy, new = row["legacy_results"][kind], row["results"][kind]
    if set(new) - set(legacy):
      raise _bad(name, f"{kind} results {new} name results the legacy call lacks ({legacy})")
  for res, op in row["aliases"].items():
    if op not in row["new_operands"]:
      raise _bad(name, f"alias {res} -> {op}: {op} is not a successor operand")
  return Rule(name=name, legacy=row["legacy"], letters=row["letters"], successor=row["successor"],
              operands=operands, sizes=dict(row["sizes"]),
              legacy_results={k: tuple(v) for k, v in row["legacy_results"].items()},
              results={k: tuple(v) for k, v in row["results"].items()},
              zero_results=zero, new_operands=tuple(row["new_operands"]),
              aliases=dict(row["aliases"]), function=row["function"])


@functools.cache
def rules() -> tuple[Rule, ...]:
  """Every rule of the table, in table order."""
  data = json.loads(resources.files(__package__).joinpath(_DATA_FILE).read_text(encoding="utf-8"))
  if data.get("format_version") != TABLE_FORMAT:
    raise RuleTableError(f"{_DATA_FILE}: format_version {data.get('format_version')!r}, "
                         f"expected {TABLE_FORMAT}")
  return tuple(parse_rule(row) for row in data["rules"])


@functools.cache
def rules_by_target() -> dict[str, list[tuple[Rule, str]]]:
  """Legacy target -> the rules (with the dtype letter) that rewrite it."""
  out: dict[str, list[tuple[Rule, str]]] = {}
  for rule in rules():
    for letter in rule.letters:
      out.setdefault(rule.legacy_target(letter), []).append((rule, letter))
  return out
