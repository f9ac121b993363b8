"""The golden items of this repository: one per entry (replay), or per case (with --record)."""

from jaxport.harness.testing import test_record, test_replay  # noqa: F401
