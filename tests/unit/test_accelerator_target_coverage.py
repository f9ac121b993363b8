"""The accelerator run's verdict on a stable target: its entries replayed well and were
cross-checked against the CPU, where one that the cross-check skips with its reason (a case
with a VJP, judged by its replay on the accelerator) does not fail the target."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
  sys.path.insert(0, str(ROOT))

from tools.accelerator._accelerator_run import covered  # noqa: E402


def test_a_skipped_cross_check_beside_a_passing_one_covers_the_target():
  assert covered({"a": "pass", "vjp": "skipped"}, {"a": "pass", "vjp": "pass"})


def test_a_target_no_entry_of_which_was_cross_checked_or_one_failed_is_not_covered():
  assert not covered({"vjp": "skipped"}, {"vjp": "pass"})
  assert not covered({"a": "pass", "b": "fail"}, {"a": "pass", "b": "pass"})
  assert not covered({"a": "pass"}, {"a": "fail"})
