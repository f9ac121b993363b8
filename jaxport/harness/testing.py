"""The golden test items a project collects: import them into one of its test modules.

    from jaxport.harness.testing import test_record, test_replay  # noqa: F401

``test_replay`` becomes one item per golden entry of the platform and
``test_record`` one item per case with ``--compat-record`` (the other is a
single skipped item). They need the project to have opted in (see
``docs/downstream.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
  from jaxport.golden import EntryId


def test_replay(compat_harness: Any, golden_entry: EntryId) -> None:
  """Replay one golden entry with every reader and judge it."""
  compat_harness.check_replay(golden_entry)


def test_record(compat_harness: Any, golden_case: str) -> None:
  """Record one case into the golden store (append-only)."""
  compat_harness.check_record(golden_case)
