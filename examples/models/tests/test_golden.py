"""The models' golden tests: one item per golden entry (replay), or per case (with --compat-record)."""

from jaxport.harness.testing import test_record, test_replay  # noqa: F401
