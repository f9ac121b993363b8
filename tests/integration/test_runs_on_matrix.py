"""`runs_on` agrees with the measured producer x consumer matrix, and every golden entry has one.

The matrix (`harness/release_matrix.json`) was measured by replaying every cpu
entry of `compat_data/` with each consumer release's own `jax.export`
(`jaxport_in_release/replayer.py`): an entry whose envelope that reader refuses
fails at deserialization; one exported for several devices is then skipped; a
lowering-only entry passes once read; any other must run and match. The model
computes each cell from the release table and the entries' own features; a
disagreement is a bug in the table or in the model. Editing one measured field
of the table moves the computed cell away from the measured one.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import json
import sys
from pathlib import Path

import pytest

from jaxport.cli import main
from jaxport.golden import GoldenStore
from jaxport.releases import releases, runs_on
from jaxport.releases._features import RunsOnRecord, features_of_blob, runs_on_record
from jaxport.releases._runs_on import devices_seen

REPO = Path(__file__).resolve().parents[2]
# The measured matrix the repository keeps (matrix-summary.json of jaxport matrix --producers).
SUMMARY = REPO / "harness" / "release_matrix.json"
STORE = REPO / "compat_data"
sys.path.insert(0, str(REPO))
import harness.cases  # noqa: E402,F401  (registers the effects some entries carry)
from jaxport.multirelease._matrix import load_summary, producer_label  # noqa: E402


def _rows():
  """The entries the matrix measured, by producer: those recorded by its measurement day (an
  entry recorded since is measured by the matrix's next run)."""
  measured_on = datetime.date.fromisoformat(load_summary(SUMMARY)["measured"])
  rows = collections.defaultdict(list)
  for e in GoldenStore(STORE).entries("cpu"):
    m = e.manifest
    if m.record_date > measured_on:
      continue
    rows[producer_label({"jax": m.producer.jax, "jaxport": m.producer.jaxport})].append(
        (e.entry_id.case_id, m.lowering_only, features_of_blob(e.blob(), m)))
  return rows


@pytest.fixture(scope="module")
def rows():
  return _rows()


def _predicted_cell(entries, consumer: str, table=None) -> tuple[int, set[str]]:
  """(replayed, failing cases) of one cell as the model computes it: the replayer skips an entry
  its reader reads as exported for several devices, and passes a lowering-only one once read."""
  table = tuple(releases() if table is None else table)
  facts = next(f for f in table if f.version == consumer)
  replayed, failing = 0, set()
  for case, lowering_only, feats in entries:
    read = facts.envelope_layouts.get(feats.envelope_layout) == "reads"
    if read and (devices_seen(facts, feats) or 1) > 1:
      continue
    replayed += 1
    if not read:
      failing.add(case)
    elif not lowering_only and not runs_on(feats, table, platforms=["cpu"]).covers("cpu", consumer):
      failing.add(case)
  return replayed, failing


def test_every_measured_cell_agrees_with_the_computed_range(rows):
  summary = load_summary(SUMMARY)
  measured = {f.version for f in releases() if f.measured}
  wrong = []
  cells = 0
  for producer in summary["producers"]:
    for consumer, cell in summary["cells"][producer].items():
      assert consumer in measured, f"consumer {consumer} of the matrix is not in the release table"
      cells += 1
      replayed, failing = _predicted_cell(rows[producer], consumer)
      if replayed != cell["replayed"] or failing != set(cell["failing_cases"]):
        wrong.append(f"{producer} on {consumer}: computed {replayed - len(failing)}/{replayed}, "
                     f"measured {cell['passed']}/{cell['replayed']}; computed failing only "
                     f"{sorted(failing - set(cell['failing_cases']))[:3]}, measured failing only "
                     f"{sorted(set(cell['failing_cases']) - failing)[:3]}")
  assert cells > 100
  assert not wrong, f"{len(wrong)} cells disagree:\n" + "\n".join(wrong)


@pytest.mark.parametrize("consumer, producer, edit", [
    # 0.8.0's reader takes the device count from nr_devices too: 0.9.2's blobs would then run.
    ("0.8.0", "jax 0.9.2", {"device_count_fields": {"nr_devices": True, "nr_devices_short": True}}),
    # 0.6.2's jaxlib knows the sdy dialect: 0.7.2's Shardy-annotated modules would then run.
    ("0.6.2", "jax 0.7.2", {"reads_sdy_dialect": True}),
    # 0.4.30's jaxlib reads a newer StableHLO: 0.5.3's entries it knows every op of would run.
    ("0.4.30", "jax 0.5.3", {"reads_newer_stablehlo": True}),
    # 0.5.3's reader refuses a calling convention above its maximum 9: 0.7.2's cc-10 entries fail.
    ("0.5.3", "jax 0.7.2", {"refuses_calling_convention_above_max": True}),
])
def test_editing_one_table_field_changes_the_computed_cell(rows, consumer, producer, edit):
  table = list(releases())
  i = next(k for k, f in enumerate(table) if f.version == consumer)
  before = _predicted_cell(rows[producer], consumer, table)
  assert before == _measured(producer, consumer)
  table[i] = dataclasses.replace(table[i], **edit)
  after = _predicted_cell(rows[producer], consumer, table)
  assert after != before, (consumer, producer, edit)


def _measured(producer: str, consumer: str) -> tuple[int, set[str]]:
  cell = load_summary(SUMMARY)["cells"][producer][consumer]
  return cell["replayed"], set(cell["failing_cases"])


def test_every_golden_entry_has_a_computed_range():
  for e in GoldenStore(STORE).entries():
    got = runs_on_record(e.blob(), e.manifest)
    assert got.runs_on is not None, (e.entry_id, got.error)
    assert set(got.runs_on) == set(got.limits) == set(got.summary), e.entry_id
    assert RunsOnRecord.from_json(json.loads(json.dumps(got.to_json())), e.entry_id) == got


def test_inspect_json_carries_runs_on_and_the_limits(capsys):
  entry = next(e for e in GoldenStore(STORE).entries("cpu") if str(e.entry_id).endswith("_jax-0.9.2")
               and "release_qr_f32" == e.entry_id.case_id)
  assert main(["inspect", str(entry.entry_id), "--root", str(STORE), "--json"]) == 0
  info = json.loads(capsys.readouterr().out)
  assert "0.9.2" in info["runs_on"]["cpu"]
  limits = info["runs_on_limits"]["cpu"]
  assert limits["lower"] is None or limits["lower"].split(":")[0] not in info["runs_on"]["cpu"]
  assert main(["inspect", str(entry.entry_id), "--root", str(STORE)]) == 0
  assert "runs on cpu (predicted from the release table, not run): " in capsys.readouterr().out
