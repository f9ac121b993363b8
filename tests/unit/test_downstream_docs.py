"""docs/downstream.md lists every built-in checker and states the custom checker's signature."""

import collections.abc
import inspect
import re
import typing
from pathlib import Path

from jaxport.harness import checkers

DOC = Path(__file__).resolve().parents[2] / "docs" / "downstream.md"


def _builtin_checkers() -> list[str]:
  """The built-in registry's names (a project's own checkers live in its registry)."""
  return sorted(checkers.BUILTIN)


def _checker_table_rows() -> dict[str, str]:
  """The rows of the checker table: the name in the first cell -> the rest of the row."""
  rows = re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", DOC.read_text(encoding="utf-8"), re.MULTILINE)
  return dict(rows)


def test_every_registered_checker_has_a_row_saying_what_it_expects_and_compares():
  rows = _checker_table_rows()
  builtin = _builtin_checkers()
  assert builtin and "allclose" in builtin
  missing = [n for n in builtin if n not in rows]
  assert not missing, f"docs/downstream.md's checker table lacks {missing}"
  for name in builtin:
    expects, compares = rows[name].split(" | ")
    assert expects.strip() and compares.strip(), name


def test_the_custom_checker_signature_is_stated_as_register_checker_calls_it():
  text = " ".join(DOC.read_text(encoding="utf-8").split())
  assert list(inspect.signature(checkers.register_checker).parameters) == ["name", "checker"]
  assert "`register_checker(name, checker)`" in text
  # The stated signature has the parameters and result of the registry's type alias.
  params, result = typing.get_args(checkers.UserChecker)
  assert len(params) == 5 and typing.get_origin(result) is collections.abc.Sequence
  assert ("checker(inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], "
          "actual: Sequence[np.ndarray], rtol: float, atol: float) -> Sequence[str]") in text
  assert "are flat sequences of numpy arrays" in text
