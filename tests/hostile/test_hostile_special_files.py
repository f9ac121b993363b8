"""FIFOs and devices named where jaxport reads a JSON file (a report, a costs file, a project's
stable targets or expectations) are refused by their type before anything is read: no hang, no
read without end, one error naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxport.errors import ExpectedStatusError, GoldenDataError, ReportError, ShardError
from jaxport.harness._judge._expectations import load_table
from jaxport.harness._project import ProjectTargets
from jaxport.harness._controller._shard import read_costs
from jaxport.report import load_report

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(),
                                reason="FIFOs and /dev/zero are POSIX files")

READERS = {
    "report": (load_report, ReportError),
    "costs file": (read_costs, ShardError),
    "stable targets": (ProjectTargets.read, GoldenDataError),
    "expectations": (load_table, ExpectedStatusError),
}


@pytest.fixture
def fifo(tmp_path):
  path = tmp_path / "a_fifo.json"
  os.mkfifo(path)  # no writer: reading it would block for ever
  return path


@pytest.mark.parametrize("what", sorted(READERS))
def test_a_fifo_or_a_device_is_refused_by_its_type(what, fifo):
  read, error = READERS[what]
  for special in (fifo, Path("/dev/zero")):
    with pytest.raises(error, match="not a regular file"):
      read(special)
    if read is load_table:
      load_table.cache_clear()
