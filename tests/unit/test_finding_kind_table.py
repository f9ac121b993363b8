"""Each finding kind is one row of ``jaxport._vocabulary.KINDS``: the judge's status of a
finding, and the sets the judge and the report read, follow the row."""

import pytest

from jaxport._vocabulary import (CHANGE_KINDS, KINDS, NEVER_EXCUSED, RUN_ONLY_KINDS,
                                 UPDATE_KINDS, FindingKind, Severity, Side, Status)
from jaxport.harness._judge._status import Policy, severity, status_of

ALONE = {Severity.FAIL: Status.FAIL, Severity.STRICT: Status.WARN, Severity.DRIFT: Status.DRIFT,
         Severity.INFO: Status.PASS}


@pytest.mark.parametrize("kind", list(FindingKind))
def test_a_findings_status_follows_its_kinds_row(kind):
  row = KINDS[kind]
  assert isinstance(row.side, Side)
  assert severity(kind, Policy()) is ALONE[row.severity]
  # Under --compat-strict a warning fails; what was reported only still passes.
  strict = severity(kind, Policy(strict=True))
  assert strict is (Status.FAIL if row.severity in (Severity.FAIL, Severity.STRICT)
                    else ALONE[row.severity])
  # A project whose changed functions fail fails exactly the change kinds beyond the rest.
  changes = severity(kind, Policy(changes_fail=True))
  assert (changes is Status.FAIL) == (row.severity is Severity.FAIL or row.change)
  assert (kind in UPDATE_KINDS) == row.updated and (kind in CHANGE_KINDS) == row.change
  assert (kind in RUN_ONLY_KINDS) == row.needs_run


def test_an_expected_failure_excuses_what_its_row_lets_be_excused():
  for kind, row in KINDS.items():
    got = status_of([kind, FindingKind.COMPATIBILITY_BREAK], Policy(), expected_failure=True)
    assert (got is Status.XFAIL) == (not row.never_excused), kind
    assert (kind in NEVER_EXCUSED) == row.never_excused


def test_every_kind_has_exactly_one_row():
  assert set(KINDS) == set(FindingKind)
