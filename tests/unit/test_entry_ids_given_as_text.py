"""The store's and the report's functions take entry ids as values: text given where an id is
expected is a TypeError naming the parser, never an id read from whatever the text holds."""

import datetime

import pytest

from jaxport.golden import EntryId, GoldenStore
from jaxport.golden._entry import Entry, entry_sort_key
from jaxport.report import _coverage as coverage
from jaxport.report._entries import EntryResult
from jaxport.report._sections import DriftItem, Recorded, Targets, Updated
from jaxport.report._views import entry_anchor
from jaxport._vocabulary import RecordAction

TEXT = "cpu/f/c/2026-01-01_jax-0.10.2"
NO_TARGETS = Targets(required=(), reachable=(), covered=(), missing_required=(), missing_reachable=())


def _result(entry_id):
  return EntryResult(entry_id, "c", "f", datetime.date(2026, 1, 1), None, False, ())


def _updated(entry_id):
  return Updated("c", None, entry_id, "written", "", (), (), (), ())


CALLS = {
    "GoldenStore.entry": lambda e, tmp: GoldenStore(tmp).entry(e),
    "Entry": lambda e, tmp: Entry(tmp / "cpu" / "f" / "c" / "2026-01-01_jax-0.10.2", e),
    "entry_sort_key": lambda e, tmp: entry_sort_key(e),
    "entry_anchor": lambda e, tmp: entry_anchor(e),
    "tripwire": lambda e, tmp: coverage.tripwire([e], []),
    "cases_without_entries": lambda e, tmp: coverage.cases_without_entries(["c"], [e]),
    "orphaned_entries": lambda e, tmp: coverage.orphaned_entries(["c"], [e]),
    "orphan_message": lambda e, tmp: coverage.orphan_message([e]),
    "device_store_skips": lambda e, tmp: coverage.device_store_skips("cpu", [e]),
    "session_failures": lambda e, tmp: coverage.session_failures("cpu", NO_TARGETS, [e], [], []),
    "EntryResult": lambda e, tmp: _result(e),
    "DriftItem": lambda e, tmp: DriftItem(e, "numerics_drift", "moved"),
    "Recorded": lambda e, tmp: Recorded("c", e, RecordAction.WRITTEN, ""),
    "Updated": lambda e, tmp: _updated(e),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_an_entry_id_given_as_text_is_a_type_error_naming_the_parser(name, tmp_path):
  with pytest.raises(TypeError, match=r"takes an EntryId, not str .*EntryId\.parse\(text\)"):
    CALLS[name](TEXT, tmp_path)


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"GoldenStore.entry"}))
def test_the_same_call_with_the_parsed_id_goes_through(name, tmp_path):
  CALLS[name](EntryId.parse(TEXT), tmp_path)
