"""What jaxport reads it writes back unchanged: every manifest of the repository's golden store
and every report the report tests build read and re-write byte for byte (a real harness
report too: ``integration/test_report_merge.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import _report_helpers as helpers
from jaxport.golden._manifest import MANIFEST_FILE, Manifest
from jaxport.report import load_report, write_report

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((REPO / "compat_data").rglob(MANIFEST_FILE))


def test_every_manifest_in_compat_data_reads_and_rewrites_byte_for_byte():
  assert MANIFESTS, "no manifest under compat_data/"
  changed = [str(p.relative_to(REPO)) for p in MANIFESTS
             if Manifest.from_json(p.read_bytes(), str(p)).to_json().encode() != p.read_bytes()]
  assert not changed, f"{len(changed)} manifests re-write otherwise, e.g. {changed[:3]}"


def _as_the_harness_writes(report: dict) -> str:
  return json.dumps(report, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("report", [helpers.run_report(), *helpers.history()],
                         ids=["run", *(f"history-{d}" for d in helpers.RUN_DATES)])
def test_every_report_fixture_reads_and_rewrites_byte_for_byte(report, tmp_path):
  written = tmp_path / "report.json"
  written.write_text(_as_the_harness_writes(report))
  write_report(load_report(written), tmp_path / "again.json")
  assert (tmp_path / "again.json").read_bytes() == written.read_bytes()
