"""One test item per golden entry (replay) or per registered case (with --record)."""


def test_replay(harness, golden_entry):
  harness.check_replay(golden_entry)


def test_record(harness, golden_case):
  harness.check_record(golden_case)
